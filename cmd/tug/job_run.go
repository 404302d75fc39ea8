package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
)

func newJobRunCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:         "run APP NAME",
		Annotations: argsAre(argApp, argJob),
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
			d, err := execDeps(cmd.Context(), f)
			if err != nil {
				return err
			}
			_, err = job.Run(cmd.Context(), d, job.RunOptions{App: args[0], Name: args[1]})
			return err
		},
	}
	return cmd
}
