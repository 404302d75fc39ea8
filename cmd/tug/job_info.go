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

// jobInfoOptions are `tug job info`.
type jobInfoOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)
	Now   func() time.Time

	App    string
	Name   string
	Output cli.OutputOptions
}

func newJobInfoCmd(f *cli.Factory, runF func(context.Context, *jobInfoOptions) error) *cobra.Command {
	o := &jobInfoOptions{IO: f.IOStreams, Store: storeFor(f), Now: time.Now}
	cmd := &cobra.Command{
		Use:         "info APP NAME",
		Annotations: atLevel(access.Developer, argsAre(argApp, argJob)),
		Short:       "Show a job: its settings and its runs kept",
		Example:     `  tug job info shop report`,
		Args:        jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Name = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runJobInfo(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runJobInfo(ctx context.Context, o *jobInfoOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	j, err := job.Info(ctx, s, o.App, o.Name, o.Now())
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, j, func() error { return printJobInfo(o.IO, j, o.Output.NoHeaders) })
}

func printJobInfo(ios *cli.IOStreams, j *job.Job, noHeaders bool) error {
	w := ios.Out
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
	return t.Render(ios, noHeaders)
}
