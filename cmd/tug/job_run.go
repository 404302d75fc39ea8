package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/session"
)

// jobRunOptions are `tug job run`.
type jobRunOptions struct {
	Session func(context.Context) (session.Deps, error)

	job.RunOptions
}

func newJobRunCmd(f *cli.Factory, runF func(context.Context, *jobRunOptions) error) *cobra.Command {
	o := &jobRunOptions{Session: sessionFor(f)}
	cmd := &cobra.Command{
		Use:         "run APP NAME",
		Annotations: atLevel(access.Operator, argsAre(argApp, argJob)),
		Short:       "Run a job now and stream its output; exits with its exit code",
		Long: `Run the job once now, from the same template its schedule runs (the
deployed release's image and config), as a Job that the job owns. tug waits
for its pod, streams its log from the first line and exits with the
command's exit code; a run now is never retried, whatever --retries says.
A run stopped at the job's --timeout exits 124.

The finished run is kept (see 'tug job info', 'tug job logs'). Ctrl-C,
SIGTERM or a closed terminal deletes the run and its pod. A tug killed
outright leaves it to the cluster, which stops it at the job's timeout.`,
		Example: `  tug job run shop report`,
		Args:    jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Name = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runJobRun(cmd.Context(), o)
		},
	}
	return cmd
}

func runJobRun(ctx context.Context, o *jobRunOptions) error {
	d, err := o.Session(ctx)
	if err != nil {
		return err
	}
	_, err = job.Run(ctx, d, o.RunOptions)
	return err
}
