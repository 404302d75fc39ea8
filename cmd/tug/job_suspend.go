package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
)

func newJobSuspendCmd(f *cli.Factory, suspend bool) *cobra.Command {
	verb, short := "resume", "Resume a suspended job's schedule"
	if suspend {
		verb, short = "suspend", "Stop a job's schedule (runs under way go on); no release"
	}
	cmd := &cobra.Command{
		Use:         verb + " APP NAME",
		Annotations: argsAre(argApp, argJob),
		Short:       short,
		Long: `Suspend stops the job's schedule until resume; a run under way goes on, and
'tug job run' still runs it by hand. It is part of the app, not of a release:
no release is made, no unit restarts, and a deploy or rollback keeps it.`,
		Example: fmt.Sprintf("  tug job %s shop report", verb),
		Args:    jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := deployDeps(cmd.Context(), f, cmd.Flags())
			if err != nil {
				return err
			}
			err = job.SetSuspended(cmd.Context(), d, args[0], args[1], suspend)
			if isNoChange(err) {
				fmt.Fprintf(f.IOStreams.ErrOut, "job %q of app %q is %sed already\n", args[1], args[0], strings.TrimSuffix(verb, "e"))
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "job %q of app %q %sed\n", args[1], args[0], strings.TrimSuffix(verb, "e"))
			return nil
		},
	}
	takesLock(cmd)
	return cmd
}
