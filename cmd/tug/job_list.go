package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/text"
)

func newJobListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List an app's jobs: schedule, last run and its status, next run",
		Example: `  tug job list shop
  tug job list shop -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			jobs, err := job.List(cmd.Context(), s, args[0], time.Now())
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, jobs, func() error {
				if len(jobs) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "app %q has no jobs; add one with '%s job add %s NAME --schedule @daily -- COMMAND'\n", args[0], f.CommandName, args[0])
					return nil
				}
				t := cli.NewTable("name", "schedule", "last run", "status", "next run", "command")
				for _, j := range jobs {
					t.AddRow(j.Name, jobSchedule(j), lastRun(j.LastRun), lastStatus(j.LastRun), nextRun(j), text.Excerpt(j.Command))
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
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
