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
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// ---------------------------------------------------------------- app deploy

// appDeployOptions are `tug app deploy`.
type appDeployOptions struct {
	Changer  appChanger
	Store    func() (*app.Store, error)
	Prompter func() cli.Prompter
	// Executor streams a build's source into its pod (buildExecutor).
	Executor func() (session.Executor, error)

	App       string
	Image     string
	Processes []string
	// RemoveProcesses are --remove-process: process types to drop.
	RemoveProcesses []string
	Procfile        string
	Message         string
	// Yes lets the deploy remove process types that run units (or web,
	// which domains route to) without asking.
	Yes bool
	// SkipReleasePhase rolls out without running the Procfile's release:
	// command.
	SkipReleasePhase bool
	release          string // the Procfile's release-phase command
	procs            app.ProcessChange
	rollout          rolloutFlags
	warnings         []string
	build            buildFlags // without --image (build.go)
	manifest         manifestFlag
	canary           canaryFlags
	canaryOpts       *deploy.CanaryOptions
}

// appDeployLong is app deploy's help.
const appDeployLong = `Deploy an image as a new release of the app and wait until its units run.

Without --image, build it from source first: the folder (--source, default
the current directory) is sent to a build pod running the app's builder
image, which pushes the result to the app's repository; the release then
deploys it by digest. The builder, repository, run image and build timeout
are remembered by the app (see docs/builders.md). A failed build exits 16.

Process types carry over from the release before: --process TYPE=CMD adds
or changes that type only (TYPE= runs the image's own command), and
--remove-process TYPE drops one. A Procfile in the current directory (or
--procfile, or the source folder's) is the whole list: types it omits are
removed. The first deploy with neither runs the image's own command as "web".
The deploy names the file it read and every type it removes; removing a type
that runs units, or web while domains route to it, asks first on a terminal
and needs --yes elsewhere. A new process type starts with 1 unit; later
deploys keep each type's count. The web process gets $PORT (8080 unless the
config sets PORT) and a Service.

tug watches the rollout and explains a failure as soon as it shows (an image
that cannot be pulled, a crash with its last log lines, a unit that cannot be
scheduled or never gets ready), then rolls back to the last good release and
exits with the failure's code (see docs/exit-codes.md). The timeout restarts
whenever the rollout makes progress.

A Procfile's release: command (a migration, say) is the release phase: it
runs once per deploy in a one-off unit of the new release, before any process
rolls out, with its output on stderr. When it exits non-zero the deploy stops
with exit code 17: nothing is rolled out, the current release keeps running
and the new one is marked failed. --skip-release-phase skips it.`

func newAppDeployCmd(f *cli.Factory, runF func(context.Context, *appDeployOptions) error) *cobra.Command {
	cmd, _ := appDeployCommand(f, runF)
	return cmd
}

// appDeployCommand is app deploy and the options its flags bind into,
// their defaults set: review up deploys through them, without flags.
func appDeployCommand(f *cli.Factory, runF func(context.Context, *appDeployOptions) error) (*cobra.Command, *appDeployOptions) {
	o := &appDeployOptions{Store: storeFor(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "deploy APP [--image IMAGE | --source DIR --builder IMAGE --repository REPO]",
		Annotations: atLevel(access.Developer, argsAre(argApp)),
		Short:       "Deploy an image, or build one from source: a new release, rolled out and watched",
		Long:        appDeployLong,
		Example: `  tug app deploy shop --builder registry.example.com/builders/static:1 --repository registry.example.com/team/shop
  tug app deploy shop --source ./site -m "new front page"
  tug app deploy shop --image registry.example.com/shop:1.4
  tug app deploy shop --image shop:1.4 --process web='shop serve' --process worker='shop work'
  tug app deploy shop --image shop:1.5 --dry-run`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.complete(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppDeploy(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Executor = buildExecutor(f)
	cmd.Flags().StringVar(&o.Image, "image", "", "Image to deploy; without it, build from --source (see docs/builders.md)")
	cmd.Flags().StringArrayVar(&o.Processes, "process", nil, "Add or change a process type, TYPE='command args' (TYPE= for the image's own command; repeatable; other types carry over)")
	cmd.Flags().StringArrayVar(&o.RemoveProcesses, "remove-process", nil, "Remove a process type and its units (repeatable)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Remove process types that run units without asking")
	cmd.Flags().StringVar(&o.Procfile, "procfile", "", "Procfile to read process types from (default ./Procfile when present)")
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "Why this deploy, shown in the release history")
	cmd.Flags().BoolVar(&o.SkipReleasePhase, "skip-release-phase", false, "Roll out without running the Procfile's release: command")
	o.rollout.add(cmd, true, &o.Changer.WaitLock)
	o.rollout.addDryRun(cmd, "")
	o.build.add(cmd)
	o.manifest.add(cmd)
	o.canary.add(cmd)
	return cmd, o
}

// complete checks o, packing the source when there is no image, before
// anything is read from or written to the cluster.
func (o *appDeployOptions) complete() error {
	if o.Image == "" {
		if err := o.build.prepare(o); err != nil {
			return err
		}
	}
	return o.validate(o.App)
}

// runAppDeploy deploys o's image to the app, building it from source
// first when no --image is given (prepared and validated by the command).
func runAppDeploy(ctx context.Context, o *appDeployOptions) error {
	name, errOut := o.App, o.Changer.IO.ErrOut
	for _, w := range o.warnings {
		fmt.Fprintln(errOut, "warning: "+w)
	}
	if line := o.procs.Describe(); line != "" {
		fmt.Fprintln(errOut, line)
	}
	if line := o.manifest.m.Describe(); line != "" {
		fmt.Fprintln(errOut, line)
	}
	allowed, err := o.confirmRemovals(ctx, name)
	if err != nil {
		return err
	}
	opts := o.rollout.options()
	opts.SkipReleasePhase = o.SkipReleasePhase
	opts.Canary = o.canaryOpts
	if o.build.active {
		return o.deploySource(ctx, allowed, opts)
	}
	change := deploy.DeployProcesses(o.Image, o.procs, allowed, o.Yes || o.rollout.DryRun, o.Message)
	change = o.manifest.m.Change(deploy.WithReleaseCommand(change, o.release))
	return o.manifest.servicesLocked(ctx, o, name, func(ctx context.Context) error {
		return rollOutChange(ctx, o.Changer, name, change, opts, o.rollout.Output, rollVerb{"deployed", "deploying"})
	})
}

// validate checks everything that needs no cluster and resolves the
// process types, so bad input fails before anything is read or written.
func (o *appDeployOptions) validate(name string) error {
	if err := app.ValidateName(name); err != nil {
		return err
	}
	if !o.build.active {
		if err := app.ValidateImage(o.Image); err != nil {
			return err
		}
	}
	if err := o.rollout.validate(); err != nil {
		return err
	}
	var err error
	if o.canaryOpts, err = o.canary.options(); err != nil {
		return err
	}
	if o.canaryOpts != nil && (o.rollout.NoWait || o.rollout.NoRollback) {
		return inputerr.Errorf("--strategy %s waits for the new units and aborts them when they fail: --no-wait and --no-rollback do not apply", o.canaryOpts.Strategy)
	}
	src := app.ProcessSource{Flags: o.Processes, Remove: o.RemoveProcesses, Procfile: o.Procfile}
	procs, release, warnings, err := src.Resolve()
	o.procs, o.warnings, o.release = procs, warnings, release
	if err != nil {
		return err
	}
	return o.manifest.resolve(o)
}

// confirmRemovals asks, before anything is written, about the process
// types the deploy would remove that run units (or web, while domains
// route to it): on a terminal the user is asked, elsewhere --yes is
// needed. It returns the types the user agreed to remove; the deploy
// checks again under the app's lock (deploy.DeployProcesses).
func (o *appDeployOptions) confirmRemovals(ctx context.Context, appName string) ([]string, error) {
	if o.Yes || o.rollout.DryRun {
		return nil, nil
	}
	s, err := o.Store()
	if err != nil {
		return nil, err
	}
	// A read that fails here fails the deploy too, which reports it.
	a, err := s.GetApp(ctx, appName)
	if err != nil {
		return nil, nil
	}
	base, _, err := deploy.BaseRelease(ctx, s, a)
	if err != nil || base == nil {
		return nil, nil
	}
	_, removed, err := o.procs.Apply(base.Processes)
	if err != nil {
		return nil, nil
	}
	guarded := app.Guarded(a, removed)
	if len(guarded) == 0 {
		return nil, nil
	}
	parts := make([]string, len(guarded))
	for i, n := range guarded {
		units := int(a.Processes[n].Units())
		parts[i] = fmt.Sprintf("%s (%d %s)", n, units, text.Plural(units, "unit", "units"))
		if n == app.WebProcess && len(a.Domains) > 0 {
			parts[i] = fmt.Sprintf("%s (%d %s, domains route to it)", n, units, text.Plural(units, "unit", "units"))
		}
	}
	from := o.procs.From
	if from == "" || !o.procs.Complete {
		from = "--remove-process"
	}
	err = cli.ConfirmOrFlag(ctx, o.Changer.IO, o.Prompter(), false, cli.Confirmation{
		Action: fmt.Sprintf("remove %s %s of app %q, as %s says", text.Plural(len(guarded), "process", "processes"), strings.Join(parts, ", "), appName, from),
	})
	return guarded, err
}
