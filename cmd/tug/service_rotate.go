package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/service"
)

// serviceRotateOptions are `tug service rotate`.
type serviceRotateOptions struct {
	IO      *cli.IOStreams
	Deps    func(context.Context) (service.Deps, error)
	Changer appChanger
	Rollout rolloutFlags

	Name string
	// WaitRuns is --wait-runs (service.Deps.WaitRuns).
	WaitRuns time.Duration
	// WaitUnits is --wait-units (service.Deps.WaitUnits).
	WaitUnits bool
}

func newServiceRotateCmd(f *cli.Factory, runF func(context.Context, *serviceRotateOptions) error) *cobra.Command {
	o := &serviceRotateOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "rotate NAME",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Short:       "Give a service new credentials; every bound app rolled out with them, then the old revoked",
		Long: `Give a service new credentials with no failed request: the plan's other login
gets a new password; every bound app is rolled out with it (a restart,
watched like a deploy) and checked, all apps side by side; only then is
the old login taken away. If an app does not roll out, it is rolled back
and the rotate stops with both credentials valid: fix the app and rotate
again.

The old units keep serving a few seconds while they stop (so that no
request fails), still with the old login. When the plan can (postgres
can), the rotate does not wait for them: it has the database itself refuse
the old login from when the last of them must have stopped (their grace
period from now, plus 10 s), prints that time and returns. With
--wait-units it waits for them to stop and then takes the old login away
at once: use it when the old password leaked.

Pods that no rollout replaces (a CronJob's run, a one-off 'tug run') and
that started before the new credentials were written still use the old
login. By default the rotate revokes it anyway and names them (they fail
from then on; run them again). With --wait-runs it first waits up to that
long for them to end; if one is still running then, the rotate stops
without revoking (every app already runs with the new login, the old one
stays valid) and says which: run the rotate again once they end.`,
		Example: "  tug service rotate db\n  tug service rotate db --wait-units\n  tug service rotate db --wait-runs 15m",
		Args:    cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if o.WaitRuns < 0 {
				return inputerr.Errorf("invalid --wait-runs %s: want a duration of 0 or more, e.g. 15m", o.WaitRuns)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceRotate(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.addWatched(cmd, &o.Changer.WaitLock)
	cmd.Flags().BoolVar(&o.WaitUnits, "wait-units", false, "Wait for the old units of the bound apps to stop, then take the old login away at once (default: the database refuses it from when they must have stopped, and the rotate returns without waiting)")
	cmd.Flags().DurationVar(&o.WaitRuns, "wait-runs", 0, "Before revoking the old login, wait up to this long for pods no rollout replaces (a CronJob's run, a one-off run) that started with it to end; if one has not, stop with the old login still valid (default: revoke at once and name them)")
	return cmd
}

func runServiceRotate(ctx context.Context, o *serviceRotateOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	d.WaitLock = o.Changer.WaitLock // serviceDeps named the lock's holder
	d.WaitRuns = o.WaitRuns
	d.WaitUnits = o.WaitUnits
	restart := appRestarter(o.Changer, d.Progress, &o.Rollout)
	res, err := service.Rotate(ctx, d, o.Name, restart)
	if err != nil {
		d.Progress.Fail("rotating the credentials of service " + o.Name)
		return err
	}
	revoked := "revoked"
	if time.Until(res.RevokedAt) > time.Second {
		revoked = "refused from " + res.RevokedAt.Format("15:04:05 MST") + ", when its old units have stopped"
	}
	d.Progress.Done(fmt.Sprintf("service %s: apps use login %s; login %s %s", o.Name, res.Username, res.Revoked, revoked))
	if len(res.StillOld) > 0 {
		fmt.Fprintf(o.IO.ErrOut, "warning: pods started before the rotate still use login %s, %s: %s (a CronJob's or one-off run; run them again)\n", res.Revoked, revoked, strings.Join(res.StillOld, ", "))
	}
	return (cli.OutputOptions{Format: o.Rollout.Output}).Print(o.IO, res, func() error {
		apps := "no app was bound"
		if len(res.Apps) > 0 {
			apps = "rolled out: " + strings.Join(res.Apps, ", ")
		}
		_, err := fmt.Fprintf(o.IO.Out, "service %q has new credentials; %s\n", o.Name, apps)
		return err
	})
}
