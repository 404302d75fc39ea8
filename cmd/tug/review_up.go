package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/review"
	"tug.dev/tug/pkg/service"
)

// reviewUpOptions are `tug review up`.
type reviewUpOptions struct {
	IO      *cli.IOStreams
	Changer appChanger
	Store   func() (*app.Store, error)
	// Deploy deploys the review app as 'tug app deploy' does.
	Deploy func(ctx context.Context, name string, r reviewDeploy) error
	Now    func() time.Time
	// ServiceDeps reach the review app's own services.
	ServiceDeps func(deploy.Deps) (service.Deps, error)

	App, Name  string
	TTL        time.Duration
	Source     string
	Image      string
	CopyConfig bool
	Overrides  []string
	Timeout    time.Duration
	NoWait     bool
	Output     cli.OutputFormat
	// ForkServices are --fork-service; ServiceSize --service-size.
	ForkServices []string
	ServiceSize  string

	overrides app.ConfigMap
}

// reviewUpLong is review up's help.
const reviewUpLong = `Make the review app APP-NAME, a copy of APP, and deploy the given source
(default the current directory, built as 'tug app deploy' builds) or image to it;
its URL is printed. The copy has APP's process types (one unit each at most),
settings, jobs (all suspended: 'tug job resume' runs one) and build settings
(pushing to a repository of its own), and no domains. Its config is only the
--review-override values, and its build env none, unless --copy-config copies
APP's (production secrets are never copied by accident; what was not copied
is said); --review-override values replace copied ones. With --copy-config,
APP's release command runs on each review deploy with APP's config: warned.

Each service bound to APP gets a copy of its own in the review app: a new
service APP-NAME-SERVICE of the same plan and version (--service-size, else
the plan's default size), labelled as the review's, bound with the same
prefix so the variables and files have APP's names; APP's service is never
bound, nor its credentials copied. It starts empty; with --fork-service
SERVICE it is restored from SERVICE's newest stored backup ('tug service
backups'), or, when there is none, from a dump taken now (said): every
review app is then a restore test. An external service (--uri) gets no
copy and is not bound, unless --copy-config binds the same one.

Run again for the same NAME, it deploys the new commit over the review app
and moves its expiry to now + --ttl; its services and their data stay (a
service forked once is not forked again: 'review down' then 'up' forks
anew). It removes expired review apps first.`

func newReviewUpCmd(f *cli.Factory, runF func(context.Context, *reviewUpOptions) error) *cobra.Command {
	o := &reviewUpOptions{IO: f.IOStreams, Store: storeFor(f), Now: time.Now, ServiceDeps: reviewServiceDeps(f)}
	cmd := &cobra.Command{
		Use:         "up APP --name NAME [--source DIR | --image IMAGE]",
		Annotations: atLevel(access.Operator, argsAre(argApp)),
		Short:       "Make or update the review app NAME of APP and deploy the pull request's code to it",
		Long:        reviewUpLong,
		Example: `  tug review up shop --name pr-42 --source . --review-override PAYMENTS_API_KEY=sandbox-key
  tug review up shop --name pr-42 --image registry.example.com/shop@sha256:... --ttl 24h -o json
  tug review up shop --name pr-42 --source . --fork-service db`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runReviewUp(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Deploy = func(ctx context.Context, name string, r reviewDeploy) error {
		return deployReviewApp(ctx, f, name, r)
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "The review's name, a DNS label such as pr-42 (required)")
	cmd.Flags().DurationVar(&o.TTL, "ttl", review.DefaultTTL, "Remove the review app this long after its last review up")
	cmd.Flags().StringVar(&o.Source, "source", ".", "The folder to build from (without --image)")
	cmd.Flags().StringVar(&o.Image, "image", "", "The image to deploy instead of building from --source")
	cmd.Flags().BoolVar(&o.CopyConfig, "copy-config", false, "Copy APP's config values and build env (default: only --review-override values, no build env)")
	cmd.Flags().StringArrayVar(&o.Overrides, "review-override", nil, "A config value of the review app in place of APP's, KEY=VALUE (repeatable)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "Fail when the rollout makes no progress for this long (default: the app's deploy-timeout setting)")
	cmd.Flags().BoolVar(&o.NoWait, "no-wait", false, "Return once the release is applied, without waiting for its units")
	cmd.Flags().StringArrayVar(&o.ForkServices, "fork-service", nil, "Restore the review app's copy of this service of APP from its newest backup (a dump taken now when it has none) (repeatable)")
	cmd.Flags().StringVar(&o.ServiceSize, "service-size", "", "Size of the volume of each of the review app's services, e.g. 1Gi (default: the plan's)")
	takesLock(cmd, &o.Changer.WaitLock)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

// validate checks everything that needs no cluster.
func (o *reviewUpOptions) validate(cmd *cobra.Command) error {
	if !cmd.Flags().Changed("name") {
		return inputerr.Errorf("--name is required: the review's name, such as pr-42")
	}
	if err := review.Validate(o.App, o.Name, o.TTL); err != nil {
		return err
	}
	if o.Image != "" && cmd.Flags().Changed("source") {
		return inputerr.Errorf("--source and --image cannot be used together")
	}
	if o.Image != "" {
		if err := app.ValidateImage(o.Image); err != nil {
			return err
		}
	} else if st, err := os.Stat(o.Source); err != nil || !st.IsDir() {
		return inputerr.Errorf("--source %q is not a folder", o.Source)
	}
	if o.Timeout < 0 {
		return inputerr.Errorf("--timeout must be positive, not %s", o.Timeout)
	}
	if err := o.validateServices(); err != nil {
		return err
	}
	if len(o.Overrides) == 0 {
		return nil
	}
	var err error
	o.overrides, err = app.ParseEnvArgs(o.Overrides, "", nil)
	return err
}

// validateServices checks --fork-service names and --service-size.
func (o *reviewUpOptions) validateServices() error {
	for i, s := range o.ForkServices {
		if err := service.ValidateName(s); err != nil {
			return inputerr.Errorf("--fork-service: %v", err)
		}
		if slices.Contains(o.ForkServices[:i], s) {
			return inputerr.Errorf("--fork-service %s is given twice", s)
		}
	}
	if o.ServiceSize == "" {
		return nil
	}
	if q, err := resource.ParseQuantity(o.ServiceSize); err != nil || q.Sign() <= 0 {
		return inputerr.Errorf("invalid --service-size %q: want a quantity such as 1Gi", o.ServiceSize)
	}
	return nil
}

func runReviewUp(ctx context.Context, o *reviewUpOptions) error {
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	// bad input (a missing app, an app in the review app's way, a
	// --fork-service not bound to it) is found before the sweep changes
	// anything
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	base, err := review.Check(ctx, store, o.App, o.Name)
	if err != nil {
		return err
	}
	svcs, err := review.CheckServices(ctx, store, base, review.AppName(o.App, o.Name), o.ForkServices)
	if err != nil {
		return err
	}
	if err := review.CheckOverrides(svcs, o.overrides, o.CopyConfig); err != nil {
		return err
	}
	sd, err := o.ServiceDeps(d)
	if err != nil {
		return err
	}
	now := o.Now()
	sweepReviews(ctx, o.Changer, d, sd, now)
	sd.Progress = d.Progress
	a, err := review.Up(ctx, d, review.UpOptions{Of: o.App, Name: o.Name, TTL: o.TTL, CopyConfig: o.CopyConfig, Overrides: o.overrides, Now: now,
		Note:     func(s string) { fmt.Fprintln(o.IO.ErrOut, "note: "+s) },
		Services: svcs, ServiceDeps: sd, ServiceSize: o.ServiceSize})
	if err != nil {
		return err
	}
	r := reviewDeploy{Message: fmt.Sprintf("review %s of %s", o.Name, o.App), Image: o.Image, Source: o.Source,
		Timeout: o.Timeout, NoWait: o.NoWait, WaitLock: o.Changer.WaitLock}
	if err := o.Deploy(ctx, a.Name, r); err != nil {
		return err
	}
	return o.print(ctx, a.Name, now)
}

// print shows the review app as review list does, with its URL.
func (o *reviewUpOptions) print(ctx context.Context, name string, now time.Time) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	entries, err := review.List(ctx, s, o.App)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.App != name {
			continue
		}
		return (cli.OutputOptions{Format: o.Output}).Print(o.IO, e, func() error {
			fmt.Fprintf(o.IO.Out, "review %s of %s: %s v%d at %s (expires %s)\n", e.Name, e.Of, e.App, e.Release, dash(e.URL), expiresIn(e.ExpiresAt, now))
			for _, s := range e.Services {
				from := "started empty"
				if s.ForkedFrom != nil {
					from = "forked from " + s.ForkedFrom.String()
				}
				fmt.Fprintf(o.IO.Out, "  service %s (%s %s) for %s: %s\n", s.Name, s.Plan, s.Version, s.Base, from)
			}
			return nil
		})
	}
	return fmt.Errorf("review app %q is gone: another tug removed it", name)
}

// reviewDeploy is the deploy of a review app: its image, or the source
// to build, and how it rolls out.
type reviewDeploy struct {
	Message, Image, Source string
	Timeout                time.Duration
	NoWait                 bool
	WaitLock               time.Duration
}

// deployReviewApp deploys the review app through app deploy's options, as
// 'tug app deploy NAME --yes' would: the same checks, build, rollout,
// watch, rollback and report.
func deployReviewApp(ctx context.Context, f *cli.Factory, name string, r reviewDeploy) error {
	o, err := r.options(f, name)
	if err != nil {
		return err
	}
	return runAppDeploy(ctx, o)
}

// options are app deploy's options for the review app, checked (its
// source packed).
func (r reviewDeploy) options(f *cli.Factory, name string) (*appDeployOptions, error) {
	_, o := appDeployCommand(f, nil)
	o.App, o.Yes, o.Message, o.Image = name, true, r.Message, r.Image
	if r.Image == "" {
		o.build.Source = r.Source
	}
	o.rollout.Timeout, o.rollout.NoWait, o.Changer.WaitLock = r.Timeout, r.NoWait, r.WaitLock
	return o, o.complete()
}
