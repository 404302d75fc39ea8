package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/text"
)

func newJobLogsCmd(f *cli.Factory) *cobra.Command {
	o := job.LogsOptions{}
	cmd := &cobra.Command{
		Use:         "logs APP NAME [--run N] [-f]",
		Annotations: argsAre(argApp, argJob),
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
			s, err := appStore(f)
			if err != nil {
				return err
			}
			return job.Logs(cmd.Context(), s, o, text.NewWriter(f.IOStreams.Out, false))
		},
	}
	cmd.Flags().StringVar(&o.Run, "run", "", "Which run: 1 the newest (default), 2 the one before, or a run's name")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "Follow the log while the run runs")
	return cmd
}
