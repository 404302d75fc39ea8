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
	"tug.dev/tug/pkg/review"
	"tug.dev/tug/pkg/service"
	"tug.dev/tug/pkg/text"
)

// reviewListOptions are `tug review list`.
type reviewListOptions struct {
	IO      *cli.IOStreams
	Changer appChanger
	Store   func() (*app.Store, error)
	Now     func() time.Time
	// ServiceDeps reach the review apps' own services (the sweep).
	ServiceDeps func(deploy.Deps) (service.Deps, error)

	App    string
	Output cli.OutputOptions
}

func newReviewListCmd(f *cli.Factory, runF func(context.Context, *reviewListOptions) error) *cobra.Command {
	o := &reviewListOptions{IO: f.IOStreams, Store: storeFor(f), Now: time.Now, ServiceDeps: reviewServiceDeps(f)}
	cmd := &cobra.Command{
		Use:         "list [APP]",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Aliases:     []string{"ls"},
		Short:       "List the namespace's review apps with age, expiry, URL and services, after removing the expired ones",
		Example: `  tug review list
  tug review list shop -o json`,
		Args: cli.Args("[APP]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.App = args[0]
				if err := app.ValidateName(o.App); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runReviewList(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runReviewList(ctx context.Context, o *reviewListOptions) error {
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	sd, err := o.ServiceDeps(d)
	if err != nil {
		return err
	}
	now := o.Now()
	sweepReviews(ctx, o.Changer, d, sd, now)
	s, err := o.Store()
	if err != nil {
		return err
	}
	entries, err := review.List(ctx, s, o.App)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, entries, func() error {
		t := cli.NewTable("app", "of", "review", "release", "age", "expires", "url", "services")
		for _, e := range entries {
			t.AddRow(e.App, e.Of, e.Name, dash(releaseName(e.Release)), text.Age(e.CreatedAt), expiresIn(e.ExpiresAt, now), dash(e.URL), dash(reviewServiceNames(e.Services)))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}

func releaseName(v int) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("v%d", v)
}

// reviewServiceNames are a review app's own services, each with the
// app's service it stands in for, marked "forked" when its data came from it.
func reviewServiceNames(svcs []review.ServiceEntry) string {
	out := make([]string, len(svcs))
	for i, s := range svcs {
		out[i] = s.Name + " (" + s.Base
		if s.ForkedFrom != nil {
			out[i] += ", forked"
		}
		out[i] += ")"
	}
	return strings.Join(out, ", ")
}
