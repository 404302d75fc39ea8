package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/text"
)

func newJobInfoCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "info APP NAME",
		Annotations: argsAre(argApp, argJob),
		Short:       "Show a job: its settings and its runs kept",
		Example:     `  tug job info shop report`,
		Args:        jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := appStore(f)
			if err != nil {
				return err
			}
			j, err := job.Info(cmd.Context(), s, args[0], args[1], time.Now())
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, j, func() error { return printJobInfo(f, j, o.NoHeaders) })
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

func printJobInfo(f *cli.Factory, j *job.Job, noHeaders bool) error {
	w := f.IOStreams.Out
	fmt.Fprintf(w, "Job:         %s (app %s, release v%d)\n", j.Name, j.App, j.Release)
	fmt.Fprintf(w, "Command:     %s\n", text.Excerpt(j.Command))
	fmt.Fprintf(w, "Schedule:    %s\n", jobSchedule(*j))
	fmt.Fprintf(w, "Next run:    %s\n", nextRun(*j))
	fmt.Fprintf(w, "Concurrency: %s\n", j.Concurrency)
	fmt.Fprintf(w, "Timeout:     %s\n", dash(j.Timeout))
	fmt.Fprintf(w, "Retries:     %d\n", j.Retries)
	if len(j.Runs) == 0 {
		fmt.Fprintf(w, "Runs:        none yet\n")
		return nil
	}
	fmt.Fprintln(w, "Runs:")
	t := cli.NewTable("#", "run", "started", "status", "duration", "by")
	for i, r := range j.Runs {
		by, took := "schedule", "-"
		if r.Manual {
			by = "job run"
		}
		if r.EndedAt != nil {
			took = r.EndedAt.Sub(r.StartedAt).Round(time.Second).String()
		}
		t.AddRow(fmt.Sprint(i+1), r.Name, text.Age(r.StartedAt)+" ago", lastStatus(&r), took, by)
	}
	return t.Render(f.IOStreams, noHeaders)
}
