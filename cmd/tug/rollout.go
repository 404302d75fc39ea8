package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/session"
)

// What every command that changes what runs shares: the rollout flags, and
// rollOutChange (a new release), changeUnits (units only) and rollOutSettings (a settings
// release), which call pkg/deploy and report the result.

// rolloutFlags are shared by every command that rolls out a release:
// app deploy, env set/unset, release rollback.
type rolloutFlags struct {
	// Timeout 0 (not given) is the app's deploy-timeout setting.
	Timeout    time.Duration
	NoRollback bool
	NoWait     bool
	// DryRun is --dry-run, on the commands that call addDryRun.
	DryRun bool
	Output cli.OutputFormat

	timeoutGiven func() bool
}

// annotationLocks marks a command that takes the app's deploy lock; it has
// --wait-lock (takesLock).
const annotationLocks = "tug.dev/locks"

// takesLock declares that c takes the app's deploy lock and gives it
// --wait-lock, bound into wait (the options' appChanger.WaitLock).
func takesLock(c *cobra.Command, wait *time.Duration) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[annotationLocks] = "true"
	c.Flags().Var((*lockWait)(wait), "wait-lock", "While another change of the app runs, wait up to this long for it to finish (default: fail at once)")
	return c
}

// lockWait is --wait-lock's value: a duration refused when negative as the
// flags are parsed, before a build or any request.
type lockWait time.Duration

func (w *lockWait) String() string {
	if *w == 0 {
		return "0" // pflag's zero: no "(default 0s)" in the help
	}
	return time.Duration(*w).String()
}
func (w *lockWait) Type() string { return "duration" }
func (w *lockWait) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("must not be negative, not %s", d)
	}
	*w = lockWait(d)
	return nil
}

func (r *rolloutFlags) add(cmd *cobra.Command, withRollback bool, waitLock *time.Duration) {
	r.addWatched(cmd, waitLock)
	cmd.Flags().BoolVar(&r.NoWait, "no-wait", false, "Return once the release is applied, without waiting for its units")
	if withRollback {
		cmd.Flags().BoolVar(&r.NoRollback, "no-rollback", false, "On failure, leave the failed release in place for inspection")
	}
}

// addWatched adds the flags of a rollout that is always watched to its end:
// --wait-lock, --timeout and -o, no --no-wait (service rotate revokes the
// old credentials only once no unit uses them, which needs the wait).
func (r *rolloutFlags) addWatched(cmd *cobra.Command, waitLock *time.Duration) {
	takesLock(cmd, waitLock)
	cmd.Flags().DurationVar(&r.Timeout, "timeout", 0, fmt.Sprintf("Fail when the rollout makes no progress for this long (default: the app's deploy-timeout setting, %s unless set)", app.FormatSeconds(app.RolloutDefaults.DeployTimeout)))
	r.timeoutGiven = func() bool { return cmd.Flags().Changed("timeout") }
	cli.AddFormatFlag(cmd, &r.Output)
}

// dryRunUsage is --dry-run's help on a command that makes a release.
const dryRunUsage = "Validate on the server and show what would change; change nothing"

// addDryRun adds --dry-run (deploy.Options.DryRun: the server validates the
// release and its objects, nothing is stored, no lock is taken) to a
// command that makes a release through deploy.Roll: app deploy, env
// set|unset, release rollback, app pool set. usage "" is dryRunUsage.
func (r *rolloutFlags) addDryRun(cmd *cobra.Command, usage string) {
	if usage == "" {
		usage = dryRunUsage
	}
	cmd.Flags().BoolVar(&r.DryRun, "dry-run", false, usage)
}

func (r *rolloutFlags) options() deploy.Options {
	return deploy.Options{Timeout: r.Timeout, NoRollback: r.NoRollback, NoWait: r.NoWait, DryRun: r.DryRun}
}

// validate checks the rollout flags before anything asks the cluster.
func (r *rolloutFlags) validate() error {
	if r.Timeout < 0 || r.Timeout == 0 && r.timeoutGiven != nil && r.timeoutGiven() {
		return inputerr.Errorf("--timeout must be positive, not %s", r.Timeout)
	}
	if r.DryRun && r.NoWait {
		// a dry run waits for nothing: --no-wait there means a mistake
		return inputerr.Errorf("--dry-run and --no-wait cannot be used together")
	}
	return nil
}

// rollVerb names a change twice: Done as the success line says it ("config
// set: shop v4 is running"), Doing as a failure line says it ("setting the
// config of shop"), so a failure never prints words that read as success.
type rollVerb struct{ Done, Doing string }

// rollOutChange runs a change through the deploy pipeline and reports it: progress on
// stderr, the result on stdout (a line, or JSON/YAML), the failure as the
// error whose exit code says its class.
func rollOutChange(ctx context.Context, c appChanger, appName string, change deploy.Change, opts deploy.Options, format cli.OutputFormat, verb rollVerb) error {
	return runRollout(ctx, c, appName, func(ctx context.Context, d deploy.Deps) (*deploy.Result, error) {
		return deploy.Roll(ctx, d, appName, change, opts)
	}, format, verb)
}

// runRollout is rollOutChange for any pkg/deploy call that may roll out a release.
func runRollout(ctx context.Context, c appChanger, appName string, run func(context.Context, deploy.Deps) (*deploy.Result, error), format cli.OutputFormat, verb rollVerb) error {
	d, p, err := rolloutDeps(ctx, c)
	if err != nil {
		return err
	}
	res, err := run(ctx, d)
	return reportRollout(c, p, appName, res, err, format, verb)
}

// rolloutDeps are the deploy dependencies of a rollout: progress on
// stderr, and a release phase that streams its unit's output there.
func rolloutDeps(ctx context.Context, c appChanger) (deploy.Deps, progress.Reporter, error) {
	d, err := c.Deps(ctx)
	if err != nil {
		return deploy.Deps{}, nil, err
	}
	p := c.Progress()
	d.Progress = p
	d.ReleasePhase = func(ctx context.Context, s deploy.ReleasePhaseSpec) (int, error) {
		user := d.Holder.User
		return session.RunReleasePhase(ctx, session.Deps{Client: d.Client, Namespace: d.Namespace, IO: c.IO,
			Progress: p, User: func() string { return user }}, s)
	}
	return d, p, nil
}

// reportRollout reports what a rollout did: progress on stderr, the
// result on stdout (a line, or JSON/YAML), the failure as the error whose
// exit code says its class.
func reportRollout(c appChanger, p progress.Reporter, appName string, res *deploy.Result, err error, format cli.OutputFormat, verb rollVerb) error {
	if errors.Is(err, deploy.ErrNoChange) {
		p.Done("nothing changed")
		return nil
	}
	// A failed rollout or release phase comes with a result to explain
	// and print; any other error has none.
	var failed *deploy.Error
	var phase *deploy.ReleasePhaseError
	hasResult := errors.As(err, &failed) || (errors.As(err, &phase) && phase.Result != nil)
	if err != nil && !hasResult {
		p.Fail(verb.Doing + " " + appName)
		return err
	}
	if err != nil {
		p.Fail(fmt.Sprintf("release v%d failed", res.Release))
		printFailure(c.IO, res)
	} else if res.Canary != nil {
		p.Done(canaryLine(res))
	} else {
		p.Done(doneLine(res, verb.Done))
	}
	if format != cli.OutputTable {
		if perr := (cli.OutputOptions{Format: format}).Print(c.IO, res, nil); perr != nil {
			return perr
		}
	} else if len(res.Plan) > 0 {
		fmt.Fprintf(c.IO.Out, "dry run: release v%d of %s would change:\n", res.Release, res.App)
		for _, line := range res.Plan {
			fmt.Fprintf(c.IO.Out, "  %s\n", line)
		}
	}
	return err
}

func doneLine(res *deploy.Result, verb string) string {
	switch res.Status {
	case app.StatusStaged:
		return fmt.Sprintf("release v%d of %s stored; it applies at the next deploy", res.Release, res.App)
	case "dry-run":
		return fmt.Sprintf("dry run of v%d passed server-side validation; nothing changed", res.Release)
	}
	units := make([]string, 0, len(res.Processes))
	for _, p := range res.Processes {
		units = append(units, fmt.Sprintf("%s %d", p.Name, p.Units))
	}
	if res.Status == deploy.StatusApplied {
		return fmt.Sprintf("%s: %s v%d applied (%s); not waited for its units (--no-wait): see 'tug unit list %s'", verb, res.App, res.Release, strings.Join(units, ", "), res.App)
	}
	if res.Unchanged && verb == "promoted" {
		return fmt.Sprintf("nothing to promote: %s v%d runs that image, from that release, already (%s)", res.App, res.Release, strings.Join(units, ", "))
	}
	if res.Unchanged {
		return fmt.Sprintf("nothing new to deploy: the build made the image %s v%d runs, which keeps running (%s)", res.App, res.Release, strings.Join(units, ", "))
	}
	if len(res.RemovedProcesses) > 0 {
		verb += "; removed " + strings.Join(res.RemovedProcesses, ", ")
	}
	if r := res.UnitsRestarted; r != nil && !*r {
		return fmt.Sprintf("%s; units not restarted: %s v%d keeps running (%s)", verb, res.App, res.Release, strings.Join(units, ", "))
	} else if r != nil {
		verb += "; units restarted"
	}
	return fmt.Sprintf("%s: %s v%d is running (%s) in %.1fs%s", verb, res.App, res.Release, strings.Join(units, ", "), float64(res.DurationMS)/1000, whereLine(res))
}

// whereLine says where the app answers, as far as the router confirmed it:
// " at URL" once it served (or accepted) the route; a route the router has
// not confirmed yet is said so, never as served.
func whereLine(res *deploy.Result) string {
	if len(res.URLs) == 0 {
		return ""
	}
	switch res.Routing {
	case route.RoutingPending:
		return fmt.Sprintf("; %s: route applied, not yet confirmed by the router", res.URLs[0])
	case route.RoutingServed, route.RoutingAccepted:
		return " at " + res.URLs[0]
	}
	return ""
}

// printFailure explains a failed rollout on stderr: what failed, where, the
// crashed unit's last log lines, and what tug did about it.
func printFailure(ios *cli.IOStreams, res *deploy.Result) {
	f := res.Failure
	w := ios.ErrOut
	c := ios.ErrColors()
	fmt.Fprintf(w, "%s %s\n", c.Red(string(f.Class)+":"), f.Message)
	if f.Unit != "" {
		fmt.Fprintf(w, "  unit:    %s (process %s)\n", f.Unit, f.Process)
	}
	if f.Reason != "" {
		fmt.Fprintf(w, "  reason:  %s\n", f.Reason)
	}
	if len(f.Logs) > 0 {
		fmt.Fprintf(w, "  %s:\n", lastLogLines(len(f.Logs)))
		for _, l := range f.Logs {
			fmt.Fprintf(w, "    | %s\n", l)
		}
	}
	switch {
	case res.RolledBackTo > 0:
		fmt.Fprintf(w, "rolled back to v%d, which is running again\n", res.RolledBackTo)
	case res.Status == app.StatusFailed:
		fmt.Fprintf(w, "release v%d is marked failed\n", res.Release)
	}
}

// changeUnits runs a formation change (scale, stop, start, restart) and reports it.
func changeUnits(ctx context.Context, c appChanger, appName string, r *rolloutFlags, change func(*app.App) error) error {
	d, err := c.Deps(ctx)
	if err != nil {
		return err
	}
	p := c.Progress()
	d.Progress = p
	res, err := deploy.Reshape(ctx, d, appName, change, r.options())
	if err != nil {
		p.Fail("changing the units of " + appName)
		return err
	}
	p.Done(doneLine(res, "done"))
	if r.Output != cli.OutputTable {
		return (cli.OutputOptions{Format: r.Output}).Print(c.IO, res, nil)
	}
	return nil
}

// rollOutSettings rolls out a settings change as a new release.
func rollOutSettings(ctx context.Context, c appChanger, appName, kind, message string, r *rolloutFlags, edit func(a *app.App, rel *app.Release) error) error {
	return rollOutChange(ctx, c, appName, deploy.SettingsChange(kind, message, edit), r.options(), r.Output, rollVerb{kind + " changed", "changing the " + kind + " of"})
}

// changeRolloutSettings runs `app settings set|unset`: in place when only
// how tug rolls out changes, as a settings release otherwise
// (deploy.ChangeRollout).
func changeRolloutSettings(ctx context.Context, c appChanger, appName, message string, r *rolloutFlags, edit func(a *app.App, rel *app.Release) error) error {
	return runRollout(ctx, c, appName, func(ctx context.Context, d deploy.Deps) (*deploy.Result, error) {
		return deploy.ChangeRollout(ctx, d, appName, message, edit, r.options())
	}, r.Output, rollVerb{"settings changed", "changing the settings of"})
}
