package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/job"
)

// jobSuspendOptions are `tug job suspend` and `tug job resume`.
type jobSuspendOptions struct {
	Changer appChanger

	App     string
	Name    string
	Suspend bool
}

func newJobSuspendCmd(f *cli.Factory, runF func(context.Context, *jobSuspendOptions) error, suspend bool) *cobra.Command {
	o := &jobSuspendOptions{Suspend: suspend}
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
			o.App, o.Name = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runJobSuspend(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	takesLock(cmd, &o.Changer.WaitLock)
	return cmd
}

func runJobSuspend(ctx context.Context, o *jobSuspendOptions) error {
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	done := map[bool]string{true: "suspended", false: "resumed"}[o.Suspend]
	err = job.SetSuspended(ctx, d, o.App, o.Name, o.Suspend)
	if isNoChange(err) {
		fmt.Fprintf(o.Changer.IO.ErrOut, "job %q of app %q is %s already\n", o.Name, o.App, done)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Changer.IO.ErrOut, "job %q of app %q %s\n", o.Name, o.App, done)
	return nil
}
