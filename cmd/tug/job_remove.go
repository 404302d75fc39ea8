package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
)

func newJobRemoveCmd(f *cli.Factory) *cobra.Command {
	var yes, noWait bool
	var out cli.OutputFormat
	cmd := &cobra.Command{
		Use:         "remove APP NAME",
		Annotations: deleting(argApp, argJob),
		Aliases:     []string{"rm", "delete"},
		Short:       "Remove a job and its runs: a new release, rolled out",
		Long: `Remove the job: its CronJob goes with its runs (one under way is stopped).
This is a release; a rollback to an older release brings the job back.
Asks first on a terminal; elsewhere needs --yes.`,
		Example: `  tug job remove shop report --yes`,
		Args:    jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.ConfirmOrFlag(cmd.Context(), f.IOStreams, f.Prompter(), yes, cli.Confirmation{
				Action: fmt.Sprintf("remove job %q of app %q and its runs", args[1], args[0]),
			}); err != nil {
				return err
			}
			verb := rollVerb{"job " + args[1] + " removed", "removing job " + args[1] + " of"}
			return roll(cmd.Context(), changerFor(cmd, f), args[0], job.RemoveChange(args[1]), optionsNoWait(noWait), out, verb)
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Remove without asking")
	takesLock(cmd)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "Return once the release is applied, without waiting for its units")
	cli.AddFormatFlag(cmd, &out)
	return cmd
}
