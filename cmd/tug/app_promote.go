package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/promote"
)

// appPromoteOptions are `tug app promote`.
type appPromoteOptions struct {
	IO       *cli.IOStreams
	Changer  appChanger
	Prompter func() cli.Prompter
	// TargetDeps are the deploy dependencies in the target's cluster,
	// asked for with --to-context only (else the source's serve both).
	TargetDeps  func(ctx context.Context) (deploy.Deps, error)
	ContextName func() (string, error)
	// SourceServer is the API server of the command's context;
	// TargetCluster the API server and namespace of --to-context's.
	SourceServer  func() (string, error)
	TargetCluster func() (server, namespace string, err error)
	Source        nsApp
	Target        nsApp
	ToContext     string
	ToRepository  string
	Message       string
	Yes, Force    bool
	rollout       rolloutFlags
}

// nsApp is an app named APP or NAMESPACE/APP ("" Namespace: the command's).
type nsApp struct{ Namespace, App string }

// parseNSApp reads APP or NAMESPACE/APP; its errors are input errors.
func parseNSApp(what, s string) (nsApp, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		ns, name = "", s
	} else if err := app.ValidateNamespace(ns); err != nil {
		return nsApp{}, inputerr.Errorf("invalid %s %q: %v", what, s, err)
	}
	if err := app.ValidateName(name); err != nil {
		return nsApp{}, inputerr.Errorf("invalid %s %q: %v", what, s, err)
	}
	return nsApp{Namespace: ns, App: name}, nil
}

func (n nsApp) in(namespace string) string {
	if n.Namespace != "" {
		return n.Namespace
	}
	return namespace
}

func newAppPromoteCmd(f *cli.Factory, runF func(context.Context, *appPromoteOptions) error) *cobra.Command {
	o := &appPromoteOptions{IO: f.IOStreams, Prompter: f.Prompter, ContextName: f.ContextName}
	cmd := &cobra.Command{
		Use:         "promote SRC DST",
		Annotations: atLevel(access.Developer, argsAre(argApp, argApp)),
		Short:       "Run the image another app runs, by digest: a new release, rolled out and watched",
		Long: `Promote the image SRC runs to DST: DST gets a new release with SRC's image
by digest and SRC's process types (and release command), and keeps its own
config, units, settings, jobs and domains. The release records where it came
from (promotedFrom in 'tug release info' and -o json), and is rolled out and
watched like a deploy, rolled back when it fails.

SRC and DST are APP or NAMESPACE/APP; --to-context puts DST in another
kubeconfig context's cluster. What differs between the two apps is shown
first: config keys only one sets (never values), process types, and the
build inputs (builder, buildpacks, build env keys, Dockerfile build args).
--dry-run shows only that. A build env that the two apps set differently
was baked into SRC's image: the promote is refused (exit 2) unless --force.

When DST pulls from a repository of its own (its build settings'
repository, or --to-repository) other than SRC's, the image is copied there
by digest first, read with SRC's registry credentials and written with DST's,
checked by digest, and the copy is said.

Run again when the target runs that image already, promoted from the same
release, it changes nothing and says so (but an app with a release command
gets a new release, which runs the release command again). Asks first on a
terminal; elsewhere needs --yes.`,
		Example: `  tug app promote shop prod/shop --yes
  tug app promote staging/shop prod/shop --dry-run
  tug app promote shop shop --to-context prod-cluster -n shop --yes`,
		Args: cli.ExactArgs("SRC", "DST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.parse(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppPromote(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.connect(f)
	cmd.Flags().StringVar(&o.ToContext, "to-context", "", "The kubeconfig context of DST's cluster (default: SRC's)")
	cmd.Flags().StringVar(&o.ToRepository, "to-repository", "", "Copy the image by digest to this repository, HOST/PATH, and run it from there (default: DST's build repository, if any)")
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "Why this promote, shown in the release history (default: promoted from NS/APP vN)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Promote without asking")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Promote although the image was built with a build env DST sets otherwise")
	o.rollout.add(cmd, true, &o.Changer.WaitLock)
	o.rollout.addDryRun(cmd, "Show what differs between the two apps; change nothing")
	return cmd
}

// connect binds the connections promote makes to both clusters. The
// target's are made from --to-context when first asked for, since the flag
// is known only once the command line is parsed.
func (o *appPromoteOptions) connect(f *cli.Factory) {
	o.SourceServer = func() (string, error) {
		cfg, err := f.RESTConfig()
		if err != nil {
			return "", err
		}
		return cfg.Host, nil
	}
	o.TargetCluster = func() (string, string, error) {
		g := f.ForContext(o.ToContext)
		cfg, err := g.RESTConfig()
		if err != nil {
			return "", "", err
		}
		ns, err := g.Namespace()
		return cfg.Host, ns, err
	}
	o.TargetDeps = func(ctx context.Context) (deploy.Deps, error) {
		d, err := deployDeps(ctx, f.ForContext(o.ToContext))
		d.WaitLock = o.Changer.WaitLock
		return d, err
	}
}

// parse checks the arguments and flags before any request.
func (o *appPromoteOptions) parse(args []string) error {
	var err error
	if o.Source, err = parseNSApp("source app", args[0]); err != nil {
		return err
	}
	if o.Target, err = parseNSApp("target app", args[1]); err != nil {
		return err
	}
	if o.ToRepository != "" {
		if strings.ContainsAny(o.ToRepository, "@ \t") || app.ImageRepository(o.ToRepository) != o.ToRepository {
			return inputerr.Errorf("invalid --to-repository %q: name a repository, HOST/PATH, without a tag or digest", o.ToRepository)
		}
	}
	return o.rollout.validate()
}

// endpoints are the two apps of the promote, each in its cluster.
func (o *appPromoteOptions) endpoints(ctx context.Context) (src, dst promote.Endpoint, dd deploy.Deps, err error) {
	sd, err := o.Changer.Deps(ctx)
	if err != nil {
		return src, dst, dd, err
	}
	dd = sd
	if o.ToContext != "" {
		if err := o.refuseSameApp(sd.Namespace); err != nil {
			return src, dst, dd, err
		}
		if dd, err = o.TargetDeps(ctx); err != nil {
			return src, dst, dd, err
		}
	}
	src = promote.Endpoint{Client: sd.Client, Namespace: o.Source.in(sd.Namespace), App: o.Source.App}
	dd.Namespace = o.Target.in(dd.Namespace)
	dst = promote.Endpoint{Client: dd.Client, Namespace: dd.Namespace, App: o.Target.App}
	if o.ToContext != "" {
		if src.Context, err = o.ContextName(); err != nil {
			return src, dst, dd, err
		}
		dst.Context = o.ToContext
	}
	return src, dst, dd, nil
}

// refuseSameApp refuses a --to-context that names SRC's own cluster (by
// its API server, whatever the context is called) when DST is SRC's
// namespace and name: that promote would restart SRC with a new release.
func (o *appPromoteOptions) refuseSameApp(srcNamespace string) error {
	server, err := o.SourceServer()
	if err != nil {
		return err
	}
	dstServer, dstNamespace, err := o.TargetCluster()
	if err != nil {
		return err
	}
	srcNS, dstNS := o.Source.in(srcNamespace), o.Target.in(dstNamespace)
	if sameServer(server, dstServer) && srcNS == dstNS && o.Source.App == o.Target.App {
		return inputerr.Errorf("the target is the source (%s/%s): context %q reaches the same cluster (%s); promote to another app, NAMESPACE/APP or cluster", srcNS, o.Source.App, o.ToContext, server)
	}
	return nil
}

func runAppPromote(ctx context.Context, o *appPromoteOptions) error {
	src, dst, dd, err := o.endpoints(ctx)
	if err != nil {
		return err
	}
	plan, err := promote.Prepare(ctx, src, dst, o.ToRepository)
	if err != nil {
		return err
	}
	refused := plan.Refusal()
	if o.rollout.DryRun {
		return o.printPlan(plan, refused)
	}
	if refused != nil && !o.Force {
		return refused
	}
	if o.rollout.Output == cli.OutputTable {
		printDiff(o.IO, plan)
	}
	if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("promote %s v%d (%s) to %s", plan.Source, plan.Source.Release, shortDigest(plan.Source.Digest), plan.Target),
	}); err != nil {
		return err
	}
	if plan.Copy != nil {
		if err := o.copyImage(ctx, plan, src, dst); err != nil {
			return err
		}
	}
	var res *deploy.Result
	c := o.Changer
	c.NewDeps = func(context.Context) (deploy.Deps, error) { return dd, nil }
	opts := o.rollout.options()
	// a promote run again (a CI job retried) changes nothing when the
	// target runs that release's image already, as promoted
	opts.SkipUnchanged = true
	err = runRollout(ctx, c, dst.App, func(ctx context.Context, d deploy.Deps) (*deploy.Result, error) {
		res, err = deploy.Roll(ctx, d, dst.App, plan.Change(o.Message), opts)
		return res, err
	}, cli.OutputTable, rollVerb{"promoted", "promoting to"})
	if o.rollout.Output != cli.OutputTable && res != nil {
		if perr := (cli.OutputOptions{Format: o.rollout.Output}).Print(o.IO, promote.Result{Plan: plan, Rollout: res}, nil); perr != nil {
			return perr
		}
	}
	return err
}

// copyImage copies the image to the target's repository, saying so.
func (o *appPromoteOptions) copyImage(ctx context.Context, plan *promote.Plan, src, dst promote.Endpoint) error {
	// each side's own credentials: SRC's to read, DST's to write
	var keys [2]promote.Keychain
	for i, e := range []promote.Endpoint{src, dst} {
		a, err := (&app.Store{Client: e.Client, Namespace: e.Namespace}).GetApp(ctx, e.App)
		if err == nil {
			err = keys[i].AddApp(ctx, e.Client, e.Namespace, a)
		}
		if err != nil {
			return err
		}
	}
	p := o.Changer.Progress()
	p.Update(fmt.Sprintf("copying %s to %s", plan.Copy.From, plan.Copy.To))
	if err := promote.CopyImage(ctx, *plan.Copy, keys[0], keys[1]); err != nil {
		p.Fail("copying the image")
		return err
	}
	p.Done(fmt.Sprintf("copied %s to %s (DST pulls from its own repository)", plan.Copy.From, plan.Copy.To))
	return nil
}

// printPlan is a dry run's output: the differences, and whether the
// promote would be refused; nothing else.
func (o *appPromoteOptions) printPlan(plan *promote.Plan, refused error) error {
	res := promote.Result{Plan: plan, DryRun: true}
	return (cli.OutputOptions{Format: o.rollout.Output}).Print(o.IO, res, func() error {
		printDiff(o.IO, plan)
		if refused != nil {
			fmt.Fprintf(o.IO.Out, "refused without --force: %s\n", refused)
		}
		fmt.Fprintln(o.IO.Out, "dry run: nothing changed")
		return nil
	})
}

// printDiff shows what the promote brings and what differs, on stdout.
func printDiff(ios *cli.IOStreams, plan *promote.Plan) {
	w := ios.Out
	from := fmt.Sprintf("%s v%d", plan.Source, plan.Source.Release)
	to := plan.Target.String()
	if plan.Target.Release > 0 {
		to += fmt.Sprintf(" (now v%d, %s)", plan.Target.Release, dash(shortDigest(plan.Target.Digest)))
	}
	fmt.Fprintf(w, "promote %s (%s) to %s\n", from, shortDigest(plan.Source.Digest), to)
	if plan.Copy != nil {
		// said before the copy (and on --dry-run): "copied" only once done
		fmt.Fprintf(w, "  image: will be copied to %s\n", plan.Copy.To)
	}
	lines := plan.Diff.Lines()
	if len(lines) == 0 {
		fmt.Fprintln(w, "  no differences in config keys, process types or build inputs")
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", cli.Sanitize(l))
	}
}

// shortDigest is a digest as people compare them: sha256: and 12 hex.
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}
