package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

func newJobCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Run commands of an app on a schedule",
		Long: `A job runs a command of the app on a cron schedule, in a pod made from the
app's deployed release: its image (by digest once known), its config, the
TUG_* variables, its pool, volumes and pull secret, and the job's own limits
(else those of web, or the first process). Each job is a CronJob
(APP-job-NAME) that every release renders again, so a deploy gives the job the
new image and config and a rollback restores the old ones. Adding, changing or
removing a job is a release, rolled out like a limits change; jobs can also be
declared in tug.yaml (docs/manifest.md).`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newJobAddCmd(f), newJobListCmd(f), newJobInfoCmd(f), newJobRunCmd(f), newJobLogsCmd(f),
		newJobSuspendCmd(f, true), newJobSuspendCmd(f, false), newJobRemoveCmd(f))
	return cmd
}

// jobAddFlags are 'job add”s flags.
type jobAddFlags struct {
	job     app.Job
	timeout time.Duration
	out     cli.OutputFormat
	noWait  bool
}

func newJobAddCmd(f *cli.Factory) *cobra.Command {
	o := &jobAddFlags{}
	cmd := &cobra.Command{
		Use:         "add APP NAME --schedule CRON [--time-zone TZ] [--concurrency allow|forbid|replace] [--timeout D] [--retries N] -- COMMAND [ARGS...]",
		Annotations: argsAre(argApp, argNewName, argCommandLine),
		Short:       "Add or change a scheduled job: a new release, rolled out",
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
is sent to the cluster: bad input exits 2 and changes nothing. The change is
a new release of the app (its units restart as for a config change), and a
rollback to an older release restores the jobs that release had.`,
		Example: `  tug job add shop report --schedule '0 6 * * *' --time-zone Europe/Paris -- ./bin/report
  tug job add shop cleanup --schedule @hourly --concurrency forbid --timeout 10m -- rake cleanup
  tug job add shop ping --schedule '*/5 * * * *' --retries 2 -- sh -c 'curl -fsS "$PING_URL"'`,
		Args: jobCommandArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runJobAdd(cmd, f, o, args[0], args[1], args[cmd.ArgsLenAtDash():])
		},
	}
	commandFlagErrors(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.job.Schedule, "schedule", "", "Cron schedule: five fields or @hourly, @daily, @every 1h (required)")
	fl.StringVar(&o.job.TimeZone, "time-zone", "", "IANA time zone of the schedule, e.g. Europe/Paris (default: the cluster's, usually UTC)")
	fl.StringVar(&o.job.Concurrency, "concurrency", app.ConcurrencyAllow, "When a run is due while one runs: allow, forbid (skip) or replace")
	fl.DurationVar(&o.timeout, "timeout", 0, "Stop a run after this long (0: no limit)")
	fl.Int32Var(&o.job.Retries, "retries", 0, "Run a failed run again up to this many times")
	fl.StringVar(&o.job.Limits.CPU, "cpu", "", "CPU limit of the job's pod (default: the web process's)")
	fl.StringVar(&o.job.Limits.Memory, "memory", "", "Memory limit of the job's pod (default: the web process's)")
	takesLock(cmd)
	fl.BoolVar(&o.noWait, "no-wait", false, "Return once the release is applied, without waiting for its units")
	cli.AddFormatFlag(cmd, &o.out)
	return cmd
}

// runJobAdd checks the job and rolls out the release that adds it.
func runJobAdd(cmd *cobra.Command, f *cli.Factory, o *jobAddFlags, appName, name string, command []string) error {
	if err := app.ValidateJobName(name); err != nil {
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
	verb := rollVerb{"job " + name + " set", "setting job " + name + " of"}
	return roll(cmd, f, appName, job.AddChange(name, j), optionsNoWait(o.noWait), o.out, verb)
}

// jobCommandArgs checks APP NAME -- COMMAND...
func jobCommandArgs(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	synopsis := cmd.CommandPath() + " APP NAME --schedule CRON -- COMMAND [ARGS...]"
	switch {
	case len(args) < 2 || dash >= 0 && dash < 2:
		return inputerr.Errorf("missing APP and NAME: %s", synopsis)
	case dash < 0 && len(args) == 2:
		return inputerr.Errorf("missing command: put it after '--': %s", synopsis)
	case dash < 0 || dash > 2:
		return inputerr.Errorf("put the command after '--': %s", synopsis)
	case len(args) == dash:
		return inputerr.Errorf("no command after '--': %s", synopsis)
	}
	return app.ValidateName(args[0])
}

// jobArgs checks APP NAME.
func jobArgs(cmd *cobra.Command, args []string) error {
	if err := cli.ExactArgs("APP", "NAME")(cmd, args); err != nil {
		return err
	}
	if err := app.ValidateName(args[0]); err != nil {
		return err
	}
	return app.ValidateJobName(args[1])
}

func newJobListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List an app's jobs: schedule, last run and its status, next run",
		Example: `  tug job list shop
  tug job list shop -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			jobs, err := job.List(cmd.Context(), s, args[0], time.Now())
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, jobs, func() error {
				if len(jobs) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "app %q has no jobs; add one with '%s job add %s NAME --schedule @daily -- COMMAND'\n", args[0], f.CommandName, args[0])
					return nil
				}
				t := cli.NewTable("name", "schedule", "last run", "status", "next run", "command")
				for _, j := range jobs {
					t.AddRow(j.Name, jobSchedule(j), lastRun(j.LastRun), lastStatus(j.LastRun), nextRun(j), text.Excerpt(j.Command))
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

func jobSchedule(j job.Job) string {
	if j.TimeZone != "" {
		return j.Schedule + " (" + j.TimeZone + ")"
	}
	return j.Schedule
}

func lastRun(r *job.RunInfo) string {
	if r == nil {
		return "-"
	}
	return text.Age(r.StartedAt) + " ago"
}

func lastStatus(r *job.RunInfo) string {
	if r == nil {
		return "-"
	}
	if r.Reason != "" {
		return r.Status + " (" + r.Reason + ")"
	}
	return r.Status
}

func nextRun(j job.Job) string {
	switch {
	case j.Suspended:
		return "suspended"
	case j.NextRun == nil:
		return "-"
	}
	return "in " + text.Age(time.Now().Add(-time.Until(*j.NextRun)))
}

func newJobInfoCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "info APP NAME",
		Annotations: argsAre(argApp, argJob),
		Short:       "Show a job: its settings and its runs kept",
		Example:     `  tug job info shop report`,
		Args:        jobArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := appStore(f)
			if err != nil {
				return err
			}
			j, err := job.Info(cmd.Context(), s, args[0], args[1], time.Now())
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, j, func() error { return printJobInfo(f, j, o.NoHeaders) })
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

func printJobInfo(f *cli.Factory, j *job.Job, noHeaders bool) error {
	w := f.IOStreams.Out
	fmt.Fprintf(w, "Job:         %s (app %s, release v%d)\n", j.Name, j.App, j.Release)
	fmt.Fprintf(w, "Command:     %s\n", text.Excerpt(j.Command))
	fmt.Fprintf(w, "Schedule:    %s\n", jobSchedule(*j))
	fmt.Fprintf(w, "Next run:    %s\n", nextRun(*j))
	fmt.Fprintf(w, "Concurrency: %s\n", j.Concurrency)
	fmt.Fprintf(w, "Timeout:     %s\n", dash(j.Timeout))
	fmt.Fprintf(w, "Retries:     %d\n", j.Retries)
	if len(j.Runs) == 0 {
		fmt.Fprintf(w, "Runs:        none yet\n")
		return nil
	}
	fmt.Fprintln(w, "Runs:")
	t := cli.NewTable("#", "run", "started", "status", "duration", "by")
	for i, r := range j.Runs {
		by, took := "schedule", "-"
		if r.Manual {
			by = "job run"
		}
		if r.EndedAt != nil {
			took = r.EndedAt.Sub(r.StartedAt).Round(time.Second).String()
		}
		t.AddRow(fmt.Sprint(i+1), r.Name, text.Age(r.StartedAt)+" ago", lastStatus(&r), took, by)
	}
	return t.Render(f.IOStreams, noHeaders)
}

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
			d, err := execDeps(cmd, f)
			if err != nil {
				return err
			}
			_, err = job.Run(cmd.Context(), d, job.RunOptions{App: args[0], Name: args[1]})
			return err
		},
	}
	return cmd
}

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
			d, err := deployDeps(cmd, f)
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
			return roll(cmd, f, args[0], job.RemoveChange(args[1]), optionsNoWait(noWait), out, verb)
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Remove without asking")
	takesLock(cmd)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "Return once the release is applied, without waiting for its units")
	cli.AddFormatFlag(cmd, &out)
	return cmd
}

func isNoChange(err error) bool { return errors.Is(err, deploy.ErrNoChange) }

// optionsNoWait are the rollout options of a job change: the app's own
// deploy timeout, --no-wait as given.
func optionsNoWait(noWait bool) deploy.Options { return deploy.Options{NoWait: noWait} }

// jobsLine is app info's line of jobs: "report (0 6 * * *), ping (@hourly, suspended)".
func jobsLine(jobs []app.JobSummary) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		what := j.Schedule
		if j.TimeZone != "" {
			what += " " + j.TimeZone
		}
		if j.Suspended {
			what += ", suspended"
		}
		parts[i] = fmt.Sprintf("%s (%s)", j.Name, what)
	}
	return strings.Join(parts, ", ")
}
