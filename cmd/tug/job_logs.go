package main

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/text"
)

// jobLogsOptions are `tug job logs`.
type jobLogsOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	job.LogsOptions
}

func newJobLogsCmd(f *cli.Factory, runF func(context.Context, *jobLogsOptions) error) *cobra.Command {
	o := &jobLogsOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "logs APP NAME [--run N] [-f]",
		Annotations: atLevel(access.Developer, argsAre(argApp, argJob)),
		Short:       "Show the log of a job's run (the newest unless --run)",
		Long: `Show the log of one run of the job: the newest, or --run N (2 is the one
before the newest, as 'tug job info' numbers them), or --run RUN by its
name. -f follows a run that still runs.`,
		Example: `  tug job logs shop report
  tug job logs shop report --run 2`,
		Args: jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Name = args[0], args[1]
			if n, err := strconv.Atoi(o.Run); err == nil && n < 1 {
				// before any request: no run is numbered below 1
				return inputerr.Errorf("--run %d: runs are numbered from 1, the newest; see 'tug job info %s %s'", n, o.App, o.Name)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runJobLogs(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Run, "run", "", "Which run: 1 the newest (default), 2 the one before, or a run's name")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "Follow the log while the run runs")
	return cmd
}

func runJobLogs(ctx context.Context, o *jobLogsOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	return job.Logs(ctx, s, o.LogsOptions, text.NewWriter(o.IO.Out, false))
}
