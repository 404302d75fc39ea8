package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/session"
)

// jobAddOptions are `tug job add`.
type jobAddOptions struct {
	Changer appChanger

	App  string
	Name string
	// Job is the job to add, checked: the flags' and the command's.
	Job app.Job

	job     app.Job // as the flags give it
	timeout time.Duration
	out     cli.OutputFormat
	noWait  bool
}

func newJobAddCmd(f *cli.Factory, runF func(context.Context, *jobAddOptions) error) *cobra.Command {
	o := &jobAddOptions{}
	cmd := &cobra.Command{
		Use:         "add APP NAME --schedule CRON [--time-zone TZ] [--concurrency allow|forbid|replace] [--timeout D] [--retries N] -- COMMAND [ARGS...]",
		Annotations: argsAre(argApp, argNewName, argCommandLine),
		Short:       "Add or change a scheduled job (no unit restarts)",
		Long: `Add a job that runs COMMAND on --schedule, or change the job of that name.

--schedule is a cron line as Kubernetes reads it: five fields (minute, hour,
day of month, month, day of week) or @hourly, @daily, @weekly, @monthly,
@yearly, @every 1h30m. --time-zone is an IANA zone (Europe/Paris); without
it the schedule runs in the cluster controller's zone, UTC on most clusters.
--concurrency says what a run due while the last one still runs does:
allow (the default) runs both, forbid skips the new one, replace stops the
old one. --timeout stops a run after that long (the cluster enforces it,
with or without tug). --retries runs a failed run again, up to N times.

The schedule, time zone and every other value are checked before anything
is sent to the cluster: bad input exits 2 and changes nothing. The job is set
on the deployed release in place (and on config staged with --no-restart):
its CronJob is applied and no unit restarts. A later release carries it; a
rollback to an older release restores the jobs that release had.`,
		Example: `  tug job add shop report --schedule '0 6 * * *' --time-zone Europe/Paris -- ./bin/report
  tug job add shop cleanup --schedule @hourly --concurrency forbid --timeout 10m -- rake cleanup
  tug job add shop ping --schedule '*/5 * * * *' --retries 2 -- sh -c 'curl -fsS "$PING_URL"'`,
		Args: jobCommandArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Name = args[0], args[1]
			if err := o.complete(args[cmd.ArgsLenAtDash():]); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runJobAdd(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	commandFlagErrors(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.job.Schedule, "schedule", "", "Cron schedule: five fields or @hourly, @daily, @every 1h (required)")
	fl.StringVar(&o.job.TimeZone, "time-zone", "", "IANA time zone of the schedule, e.g. Europe/Paris (default: the cluster's, usually UTC)")
	fl.StringVar(&o.job.Concurrency, "concurrency", app.ConcurrencyAllow, "When a run is due while one runs: allow, forbid (skip) or replace")
	fl.DurationVar(&o.timeout, "timeout", 0, "Stop a run after this long (0: no limit)")
	fl.Int32Var(&o.job.Retries, "retries", 0, "Run a failed run again up to this many times")
	fl.StringVar(&o.job.Limits.CPU, "cpu", "", "CPU limit of the job's pod (default: the web process's)")
	fl.StringVar(&o.job.Limits.Memory, "memory", "", "Memory limit of the job's pod (default: the web process's)")
	takesLock(cmd, &o.Changer.WaitLock)
	fl.BoolVar(&o.noWait, "no-wait", false, "Accepted for scripts: a job change waits for nothing (no unit restarts)")
	cli.AddFormatFlag(cmd, &o.out)
	return cmd
}

// complete checks the job's name and flags and makes Job, with command.
func (o *jobAddOptions) complete(command []string) error {
	if err := app.ValidateJobName(o.Name); err != nil {
		return err
	}
	if o.timeout < 0 || o.timeout%time.Second != 0 {
		return inputerr.Errorf("--timeout must be a positive number of seconds (10m, 1h30m), not %s", o.timeout)
	}
	j := o.job
	j.TimeoutSeconds = int64(o.timeout / time.Second)
	j.Command = session.ShellJoin(command)
	if err := j.Validate(); err != nil {
		return err
	}
	if j.Concurrency == app.ConcurrencyAllow {
		j.Concurrency = ""
	}
	o.Job = j
	return nil
}

// runJobAdd sets the job on the deployed release; no unit restarts.
func runJobAdd(ctx context.Context, o *jobAddOptions) error {
	verb := rollVerb{"job " + o.Name + " set", "setting job " + o.Name + " of"}
	return runRollout(ctx, o.Changer, o.App, func(ctx context.Context, d deploy.Deps) (*deploy.Result, error) {
		return job.Add(ctx, d, o.App, o.Name, o.Job)
	}, o.out, verb)
}
