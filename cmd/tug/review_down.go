package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/review"
	"tug.dev/tug/pkg/service"
)

// reviewDownOptions are `tug review down`.
type reviewDownOptions struct {
	Changer  appChanger
	Prompter func() cli.Prompter
	Now      func() time.Time
	// ServiceDeps reach the review app's own services.
	ServiceDeps func(deploy.Deps) (service.Deps, error)

	App, Name string
	Yes       bool
	Output    cli.OutputOptions
}

// reviewDown is what `review down -o json` prints (docs/output.md).
type reviewDown struct {
	App  string `json:"app"`
	Of   string `json:"of"`
	Name string `json:"name"`
	// Removed: the review app was there and is gone now; false when it
	// had been removed already.
	Removed bool `json:"removed"`
	// Services are the review's own services removed, data and all.
	Services []string `json:"services"`
}

func newReviewDownCmd(f *cli.Factory, runF func(context.Context, *reviewDownOptions) error) *cobra.Command {
	o := &reviewDownOptions{Prompter: f.Prompter, Now: time.Now, ServiceDeps: reviewServiceDeps(f)}
	cmd := &cobra.Command{
		Use:         "down APP --name NAME",
		Annotations: atLevel(access.Operator, deleting(argApp)),
		Short:       "Remove the review app NAME of APP and every object it made",
		Long: `Remove the review app APP-NAME as 'tug app remove' removes an app: its units,
Deployments, Service, routes, jobs, release history and config, then its
own services (the copies review up made of APP's), with their data volumes:
a review database is disposable. APP's services are never touched. Asks
first on a terminal; elsewhere needs --yes. Expired review apps are removed
first. A review app that does not exist (removed already) is said, and exits
0; services of it that a stopped removal left are removed then.`,
		Example: `  tug review down shop --name pr-42 --yes`,
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if !cmd.Flags().Changed("name") {
				return inputerr.Errorf("--name is required: the review's name, such as pr-42")
			}
			if err := review.Validate(o.App, o.Name, time.Hour); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runReviewDown(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVar(&o.Name, "name", "", "The review's name, such as pr-42 (required)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Remove without asking")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	takesLock(cmd, &o.Changer.WaitLock)
	return cmd
}

func runReviewDown(ctx context.Context, o *reviewDownOptions) error {
	name := review.AppName(o.App, o.Name)
	// every input check before the sweep changes anything: piped
	// without --yes first
	if !o.Yes && !o.Changer.IO.CanPrompt() {
		return cli.NoPromptError(fmt.Sprintf("refusing to remove review app %q without confirmation", name), "--yes")
	}
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	sd, err := o.ServiceDeps(d)
	if err != nil {
		return err
	}
	a, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, name)
	switch {
	case app.IsNotFound(err):
		// gone already (expired, or a job run twice): nothing to do, and a
		// CI job that closes a pull request must not fail on it
		sweepReviews(ctx, o.Changer, d, sd, o.Now())
		removed, err := o.removeLeftServices(ctx, sd, name)
		if err != nil {
			return err
		}
		return o.print(reviewDown{App: name, Of: o.App, Name: o.Name, Services: removed})
	case err != nil:
		return err
	case a.Review == nil || a.Review.Of != o.App || a.Review.Name != o.Name:
		return inputerr.Errorf("app %q is not review %q of app %q; nothing removed", name, o.Name, o.App)
	}
	if err := cli.ConfirmOrFlag(ctx, o.Changer.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("remove review app %q (review %s of %s), its own services with their data, and everything it runs", name, o.Name, o.App),
	}); err != nil {
		return err
	}
	sweepReviews(ctx, o.Changer, d, sd, o.Now())
	p := o.Changer.Progress()
	d.Progress, sd.Progress = p, p
	services, err := review.Down(ctx, d, sd, o.App, o.Name)
	if err != nil {
		p.Fail("removing review app " + name)
		return err
	}
	p.Done(fmt.Sprintf("review app %q removed", name))
	return o.print(reviewDown{App: name, Of: o.App, Name: o.Name, Removed: true, Services: services})
}

// print writes -o json|yaml's shape; the table form said it all on stderr.
func (o *reviewDownOptions) print(r reviewDown) error {
	if r.Services == nil {
		r.Services = []string{}
	}
	if o.Output.Format == cli.OutputTable || o.Output.Format == "" {
		return nil
	}
	return o.Output.Print(o.Changer.IO, r, nil)
}

// removeLeftServices removes the services of a review whose app is gone:
// a removal stopped between the two, or 'tug app remove' of the review app.
func (o *reviewDownOptions) removeLeftServices(ctx context.Context, sd service.Deps, name string) ([]string, error) {
	removed, err := review.RemoveServices(ctx, sd, o.App, o.Name)
	if len(removed) > 0 {
		fmt.Fprintf(o.Changer.IO.ErrOut, "review app %q does not exist; removed its services %s\n", name, strings.Join(removed, ", "))
		return removed, err
	}
	if err == nil {
		fmt.Fprintf(o.Changer.IO.ErrOut, "review app %q does not exist: nothing to remove\n", name)
	}
	return removed, err
}
