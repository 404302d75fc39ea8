package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/review"
	"tug.dev/tug/pkg/service"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

func newReviewCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "Review apps: a copy of an app per pull request, removed when it expires",
		Long: `A review app is a copy of an app (its processes, settings, jobs and, as told,
config) under the name APP-NAME in the app's namespace, deployed from a pull
request's source or image and routed at its own URL. It expires after its
--ttl: every review command removes the expired ones first (there is no
background process).`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newReviewUpCmd(f, nil), newReviewListCmd(f, nil), newReviewDownCmd(f, nil))
	return cmd
}

// reviewServiceDeps makes a review command's service dependencies from
// its deploy ones (the same client, lock holder and --wait-lock), for the
// review app's own services.
func reviewServiceDeps(f *cli.Factory) func(deploy.Deps) (service.Deps, error) {
	return func(d deploy.Deps) (service.Deps, error) {
		sd := service.Deps{Client: d.Client, Dynamic: d.Dynamic, Namespace: d.Namespace, Progress: d.Progress, Holder: d.Holder, WaitLock: d.WaitLock}
		cfg, err := f.RESTConfig()
		if err != nil {
			return sd, err
		}
		sd.Exec = &session.Remote{Config: cfg, Client: d.Client}
		return sd, nil
	}
}

// sweepReviews removes the namespace's expired review apps and their own
// services, saying each on stderr; a review app it could not remove is a
// warning, not a failure of the command that swept.
func sweepReviews(ctx context.Context, c appChanger, d deploy.Deps, sd service.Deps, now time.Time) {
	p := c.Progress()
	d.Progress, sd.Progress = p, p
	removed, err := review.Sweep(ctx, d, sd, now)
	if len(removed) > 0 {
		p.Done(fmt.Sprintf("removed expired review %s %s", text.Plural(len(removed), "app", "apps"), strings.Join(removed, ", ")))
	}
	if err != nil {
		fmt.Fprintf(c.IO.ErrOut, "warning: %s\n", cli.Sanitize(err.Error()))
	}
}

// expiresIn says when a review app expires, from now.
func expiresIn(at, now time.Time) string {
	if !now.Before(at) {
		return "expired"
	}
	d := at.Sub(now).Round(time.Minute)
	if d < time.Minute {
		return "in less than a minute"
	}
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h == 0:
		return fmt.Sprintf("in %dm", m)
	case m == 0:
		return fmt.Sprintf("in %dh", h)
	}
	return fmt.Sprintf("in %dh%dm", h, m)
}
