package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/text"
)

// jobListOptions are `tug job list`.
type jobListOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string
	Now         func() time.Time

	App    string
	Output cli.OutputOptions
}

func newJobListCmd(f *cli.Factory, runF func(context.Context, *jobListOptions) error) *cobra.Command {
	o := &jobListOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName, Now: time.Now}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: atLevel(access.Developer, argsAre(argApp)),
		Aliases:     []string{"ls"},
		Short:       "List an app's jobs: schedule, last run and its status, next run",
		Example: `  tug job list shop
  tug job list shop -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runJobList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runJobList(ctx context.Context, o *jobListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	jobs, err := job.List(ctx, s, o.App, o.Now())
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, jobs, func() error {
		if len(jobs) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "app %q has no jobs; add one with '%s job add %s NAME --schedule @daily -- COMMAND'\n", o.App, o.CommandName, o.App)
			return nil
		}
		t := cli.NewTable("name", "schedule", "last run", "status", "next run", "command")
		for _, j := range jobs {
			t.AddRow(j.Name, jobSchedule(j), lastRun(j.LastRun), lastStatus(j.LastRun), nextRun(j), text.Excerpt(j.Command))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}

func jobSchedule(j job.Job) string {
	if j.TimeZone != "" {
		return j.Schedule + " (" + j.TimeZone + ")"
	}
	return j.Schedule
}

func lastRun(r *job.RunInfo) string {
	if r == nil {
		return "-"
	}
	return text.Age(r.StartedAt) + " ago"
}

func lastStatus(r *job.RunInfo) string {
	if r == nil {
		return "-"
	}
	if r.Reason != "" {
		return r.Status + " (" + r.Reason + ")"
	}
	return r.Status
}

func nextRun(j job.Job) string {
	switch {
	case j.Suspended:
		return "suspended"
	case j.NextRun == nil:
		return "-"
	}
	return "in " + text.Age(time.Now().Add(-time.Until(*j.NextRun)))
}
