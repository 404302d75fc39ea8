package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/job"
)

// jobRemoveOptions are `tug job remove`.
type jobRemoveOptions struct {
	Changer  appChanger
	Prompter func() cli.Prompter

	App    string
	Name   string
	Yes    bool
	NoWait bool
	Output cli.OutputFormat
}

func newJobRemoveCmd(f *cli.Factory, runF func(context.Context, *jobRemoveOptions) error) *cobra.Command {
	o := &jobRemoveOptions{Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "remove APP NAME",
		Annotations: deleting(argApp, argJob),
		Aliases:     []string{"rm", "delete"},
		Short:       "Remove a job and its runs (no unit restarts)",
		Long: `Remove the job: its CronJob goes with its runs (one under way is stopped).
The deployed release loses the job in place (no unit restarts); a rollback to
an older release that had it brings it back.
Asks first on a terminal; elsewhere needs --yes.`,
		Example: `  tug job remove shop report --yes`,
		Args:    jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Name = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runJobRemove(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Remove without asking")
	takesLock(cmd, &o.Changer.WaitLock)
	cmd.Flags().BoolVar(&o.NoWait, "no-wait", false, "Accepted for scripts: a job change waits for nothing (no unit restarts)")
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

func runJobRemove(ctx context.Context, o *jobRemoveOptions) error {
	if err := cli.ConfirmOrFlag(ctx, o.Changer.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("remove job %q of app %q and its runs", o.Name, o.App),
	}); err != nil {
		return err
	}
	verb := rollVerb{"job " + o.Name + " removed", "removing job " + o.Name + " of"}
	return runRollout(ctx, o.Changer, o.App, func(ctx context.Context, d deploy.Deps) (*deploy.Result, error) {
		return job.Remove(ctx, d, o.App, o.Name)
	}, o.Output, verb)
}
