package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/usage"
)

// rolloutFlags are shared by every command that rolls out a release:
// app deploy, env set/unset, release rollback.
type rolloutFlags struct {
	Timeout    time.Duration
	NoRollback bool
	NoWait     bool
	Output     cli.OutputFormat
}

func (r *rolloutFlags) add(cmd *cobra.Command, withRollback bool) {
	cmd.Flags().DurationVar(&r.Timeout, "timeout", 10*time.Minute, "Fail when the rollout makes no progress for this long")
	cmd.Flags().BoolVar(&r.NoWait, "no-wait", false, "Return once the release is applied, without waiting for its units")
	if withRollback {
		cmd.Flags().BoolVar(&r.NoRollback, "no-rollback", false, "On failure, leave the failed release in place for inspection")
	}
	cli.AddFormatFlag(cmd, &r.Output)
}

func (r *rolloutFlags) options() deploy.Options {
	return deploy.Options{Timeout: r.Timeout, NoRollback: r.NoRollback, NoWait: r.NoWait}
}

func (r *rolloutFlags) validate() error {
	if r.Timeout <= 0 {
		return usage.Errorf("--timeout must be positive, not %s", r.Timeout)
	}
	return nil
}

// roll runs a change through the deploy pipeline and reports it: progress on
// stderr, the result on stdout (a line, or JSON/YAML), the failure as the
// error whose exit code says its class.
func roll(cmd *cobra.Command, f *cli.Factory, appName string, change deploy.Change, opts deploy.Options, format cli.OutputFormat, verb string) error {
	d, err := deployDeps(cmd, f)
	if err != nil {
		return err
	}
	p := f.Progress()
	d.Progress = p
	res, err := deploy.Roll(cmd.Context(), d, appName, change, opts)
	if errors.Is(err, deploy.ErrNoChange) {
		p.Done("nothing changed")
		return nil
	}
	var failed *deploy.Error
	if err != nil && !errors.As(err, &failed) {
		p.Fail(verb + " " + appName)
		return err
	}
	if failed != nil {
		p.Fail(fmt.Sprintf("release v%d failed", res.Release))
		printFailure(f.IOStreams, res)
	} else {
		p.Done(doneLine(res, verb))
	}
	if format != cli.OutputTable {
		if perr := (cli.OutputOptions{Format: format}).Print(f.IOStreams, res, nil); perr != nil {
			return perr
		}
	} else if len(res.Plan) > 0 {
		fmt.Fprintf(f.IOStreams.Out, "dry run: release v%d of %s would change:\n", res.Release, res.App)
		for _, line := range res.Plan {
			fmt.Fprintf(f.IOStreams.Out, "  %s\n", line)
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
	return fmt.Sprintf("%s: %s v%d is running (%s) in %.1fs", verb, res.App, res.Release, strings.Join(units, ", "), float64(res.DurationMS)/1000)
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
		fmt.Fprintf(w, "  last %d log lines:\n", len(f.Logs))
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

// ---------------------------------------------------------------- app deploy

type appDeployOptions struct {
	Image     string
	Processes []string
	Procfile  string
	Message   string
	DryRun    bool
	rollout   rolloutFlags
	warnings  []string
	build     buildFlags // without --image (build.go)
}

func newAppDeployCmd(f *cli.Factory) *cobra.Command {
	o := &appDeployOptions{}
	cmd := &cobra.Command{
		Use:   "deploy APP --image IMAGE",
		Short: "Deploy an image: a new release, rolled out and watched",
		Long: `Deploy an image as a new release of the app and wait until its units run.

Process types come from --process flags, else a Procfile in the current
directory (or --procfile), else the image's own command runs as "web". A new
process type starts with 1 unit; later deploys keep each type's count. The
web process gets $PORT (8080 unless the config sets PORT) and a Service.

tug watches the rollout and explains a failure as soon as it shows (an image
that cannot be pulled, a crash with its last log lines, a unit that cannot be
scheduled or never gets ready), then rolls back to the last good release and
exits with the failure's code (see docs/exit-codes.md). The timeout restarts
whenever the rollout makes progress.`,
		Example: `  tug app deploy shop --image registry.example.com/shop:1.4
  tug app deploy shop --image shop:1.4 --process web='shop serve' --process worker='shop work'
  tug app deploy shop --image shop:1.5 --dry-run`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if o.Image == "" {
				if err := o.build.prepare(cmd, o); err != nil {
					return err
				}
			}
			procs, err := o.validate(name)
			if err != nil {
				return err
			}
			for _, w := range o.warnings {
				fmt.Fprintln(f.IOStreams.ErrOut, "warning: "+w)
			}
			opts := o.rollout.options()
			opts.DryRun = o.DryRun
			if o.build.active {
				if o.Image, err = o.build.image(cmd, f, name, procs, o.DryRun); err != nil || o.Image == "" {
					return err
				}
			}
			return roll(cmd, f, name, deploy.DeployChange(o.Image, procs, o.Message), opts, o.rollout.Output, "deployed")
		},
	}
	cmd.Flags().StringVar(&o.Image, "image", "", "Image to deploy; without it, build from --source (see docs/builders.md)")
	cmd.Flags().StringArrayVar(&o.Processes, "process", nil, "A process type and its command, TYPE='command args' (repeatable)")
	cmd.Flags().StringVar(&o.Procfile, "procfile", "", "Procfile to read process types from (default ./Procfile when present)")
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "Why this deploy, shown in the release history")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Validate on the server and show what would change; change nothing")
	o.rollout.add(cmd, true)
	o.build.add(cmd)
	return cmd
}

// validate checks everything that needs no cluster and resolves the
// process types, so bad input fails before anything is read or written.
func (o *appDeployOptions) validate(name string) (map[string]string, error) {
	if err := app.ValidateName(name); err != nil {
		return nil, usage.Wrap(err)
	}
	if strings.TrimSpace(o.Image) == "" && !o.build.active {
		return nil, usage.Errorf("--image is required: the image to deploy")
	}
	if strings.ContainsAny(o.Image, " \t\n") {
		return nil, usage.Errorf("invalid --image %q: an image reference has no spaces", o.Image)
	}
	if err := o.rollout.validate(); err != nil {
		return nil, err
	}
	if len(o.Processes) > 0 && o.Procfile != "" {
		return nil, usage.Errorf("--process and --procfile cannot be used together")
	}
	if o.DryRun && o.rollout.NoWait {
		return nil, usage.Errorf("--dry-run and --no-wait cannot be used together")
	}
	if len(o.Processes) > 0 {
		procs, err := app.ParseProcessFlags(o.Processes)
		if err != nil {
			return nil, usage.Wrap(err)
		}
		return procs, nil
	}
	path := o.Procfile
	if path == "" {
		if _, err := os.Stat("Procfile"); err != nil {
			return map[string]string{app.WebProcess: ""}, nil
		}
		path = "Procfile"
	}
	b, err := readFileArg("--procfile", path)
	if err != nil {
		return nil, err
	}
	procs, err := app.ParseProcfile(bytes.NewReader(b))
	if err != nil {
		return nil, usage.Errorf("%s: %w", path, err)
	}
	// Heroku's "release:" is a release-phase command, not a process: it
	// would run forever as one and "crash" when it exits 0.
	if cmd, ok := procs["release"]; ok {
		delete(procs, "release")
		o.warnings = append(o.warnings, fmt.Sprintf("%s: skipping the release-phase command %q; run it with 'tug run APP -- %s'", path, cmd, cmd))
		if len(procs) == 0 {
			return nil, usage.Errorf("%s declares only a release-phase command; add a process such as web", path)
		}
	}
	return procs, nil
}
