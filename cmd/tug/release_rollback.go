package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

// releaseRollbackOptions are `tug release rollback`.
type releaseRollbackOptions struct {
	Changer appChanger
	Store   func() (*app.Store, error)
	Rollout rolloutFlags

	App string
	// Target is the release to roll back to, 0 for the one before the current.
	Target           int
	SkipReleasePhase bool
}

func newReleaseRollbackCmd(f *cli.Factory, runF func(context.Context, *releaseRollbackOptions) error) *cobra.Command {
	o := &releaseRollbackOptions{Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "rollback APP [vN]",
		Annotations: atLevel(access.Developer, argsAre(argApp, argRelease)),
		Short:       "Roll back to an earlier release's image and config",
		Long: `Roll back to an earlier release: a new release with that release's image,
process commands and config, rolled out and watched like a deploy. Without vN,
the release that ran before the current one; after a rollout that stopped
before it finished (Ctrl-C; the release is listed as interrupted), the
deployed release, which the units ran before it: rolling back to it, by
default or by its vN, puts every unit back on it.

A release deployed by tag records the digest its units ran once it rolled
out (see 'tug release info'); the rollback runs that digest, so a tag moved
since then does not change what runs. Images loaded onto nodes without a
registry cannot be pinned; a rollback runs the tag.

The restored release's release phase (its Procfile's release: command) runs
first, with its config, as on a deploy: when it exits non-zero nothing is
rolled back (exit code 17) and the current release keeps running. A rollback
does not undo what a release command did (a migration stays applied); when the
restored release's command must not run again, pass --skip-release-phase.

--dry-run asks the API server to validate the rollback release and its
objects, then lists what would change against what runs now (image,
commands, config names, never values, and the units that would restart)
and whether the release phase would run; it stores no release and takes no
lock.`,
		Example: `  tug release rollback shop
  tug release rollback shop v3
  tug release rollback shop v3 --dry-run`,
		Args: cli.Args("APP", "[vN]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runReleaseRollback(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	o.Rollout.addDryRun(cmd, "")
	cmd.Flags().BoolVar(&o.SkipReleasePhase, "skip-release-phase", false, "Roll back without running the restored release's release: command")
	return cmd
}

// complete takes the app and the release to roll back to from the
// arguments (none: the one before the current), refusing bad input before
// any request.
func (o *releaseRollbackOptions) complete(args []string) error {
	o.App = args[0]
	if err := app.ValidateName(o.App); err != nil {
		return err
	}
	o.Target = 0
	if len(args) == 2 {
		v, err := app.ParseVersion(args[1])
		if err != nil {
			return err
		}
		o.Target = v
	}
	return o.Rollout.validate()
}

func runReleaseRollback(ctx context.Context, o *releaseRollbackOptions) error {
	store, err := o.Store()
	if err != nil {
		return err
	}
	opts := o.Rollout.options()
	opts.SkipReleasePhase = o.SkipReleasePhase
	opts.Rollback, opts.RollbackTo = true, o.Target
	return rollOutChange(ctx, o.Changer, o.App, deploy.RollbackChange(ctx, store, o.Target), opts, o.Rollout.Output, rollVerb{"rolled back", "rolling back"})
}
