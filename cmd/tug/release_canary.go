package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/canary"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
)

// Two releases side by side: app deploy's --strategy, --canary,
// --canary-steps, --step-interval and --keep, and release promote|abort.

type canaryFlags struct {
	Strategy     string
	Canary       string
	Steps        string
	StepInterval time.Duration
	Keep         time.Duration
	changed      func(string) bool
}

func (c *canaryFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.Strategy, "strategy", "rolling", "How the release replaces the running one: rolling, canary (with --canary) or blue-green (see docs/guide.md, \"Canary and blue-green\")")
	cmd.Flags().StringVar(&c.Canary, "canary", "", "Start the release as a canary beside the running one with this share of requests, e.g. 25%; then 'tug release promote' or 'tug release abort'")
	cmd.Flags().StringVar(&c.Steps, "canary-steps", "", "Shares the canary moves to by itself while healthy, e.g. 10,50, one every --step-interval; then it is promoted")
	cmd.Flags().DurationVar(&c.StepInterval, "step-interval", 0, "Time between --canary-steps (default 1m)")
	cmd.Flags().DurationVar(&c.Keep, "keep", 0, "Blue-green: keep the previous release's units this long (default: until the next deploy) for an instant 'tug release rollback'")
	c.changed = func(name string) bool { return cmd.Flags().Changed(name) }
}

// options are the deploy's CanaryOptions, nil for a rolling update; bad
// or contradictory flags are usage errors.
func (c *canaryFlags) options() (*deploy.CanaryOptions, error) {
	strategy := c.Strategy
	if strategy == "rolling" && (c.Canary != "" || c.Steps != "") {
		strategy = app.StrategyCanary
	}
	switch strategy {
	case "rolling":
		for _, f := range []string{"step-interval", "keep"} {
			if c.changed(f) {
				return nil, inputerr.Errorf("--%s needs --canary or --strategy blue-green", f)
			}
		}
		return nil, nil
	case app.StrategyBlueGreen:
		if c.Canary != "" || c.Steps != "" || c.changed("step-interval") {
			return nil, inputerr.Errorf("--strategy blue-green switches every request at once: --canary, --canary-steps and --step-interval are for --strategy canary")
		}
		if c.Keep < 0 {
			return nil, inputerr.Errorf("--keep must be positive, not %s", c.Keep)
		}
		return &deploy.CanaryOptions{Strategy: strategy, Keep: c.Keep}, nil
	case app.StrategyCanary:
	default:
		return nil, inputerr.Errorf("unknown --strategy %q: rolling, canary or blue-green", c.Strategy)
	}
	if c.changed("keep") {
		return nil, inputerr.Errorf("--keep is for --strategy blue-green")
	}
	return c.canaryOptions()
}

// canaryOptions are --strategy canary's: a first weight and/or steps.
func (c *canaryFlags) canaryOptions() (*deploy.CanaryOptions, error) {
	o := &deploy.CanaryOptions{Strategy: app.StrategyCanary}
	if c.Steps != "" {
		steps, err := app.ParseSteps(c.Steps)
		if err != nil {
			return nil, inputerr.Wrap(err)
		}
		o.Steps, o.Weight, o.StepInterval = steps, steps[0], time.Minute
		if c.changed("step-interval") {
			o.StepInterval = c.StepInterval
		}
		if o.StepInterval <= 0 {
			return nil, inputerr.Errorf("--step-interval must be positive, not %s", c.StepInterval)
		}
	} else if c.changed("step-interval") {
		return nil, inputerr.Errorf("--step-interval needs --canary-steps")
	}
	if c.Canary == "" && c.Steps == "" {
		return nil, inputerr.Errorf("--strategy canary needs --canary P%% (the share of requests to start with) or --canary-steps")
	}
	if c.Canary != "" {
		w, err := app.ParsePercent(c.Canary)
		if err != nil {
			return nil, inputerr.Errorf("--canary: %v", err)
		}
		if len(o.Steps) > 0 && w >= o.Steps[len(o.Steps)-1] {
			return nil, inputerr.Errorf("--canary %d%% must be below the last of --canary-steps", w)
		}
		o.Weight = w
	}
	return o, nil
}

// canaryLine is the success line of a change that leaves two releases
// side by side.
func canaryLine(res *deploy.Result) string {
	c := res.Canary
	how := "exactly, by the router's weights"
	if !c.Exact {
		how = "approximately: by units on the app's Service (no Gateway)"
	}
	line := fmt.Sprintf("%s v%d runs as a canary: %d%% of requests (%s) to its %d web %s, %d%% to v%d",
		res.App, c.Release, c.Weight, how, c.Units, plural(int(c.Units)), 100-c.Weight, c.Stable)
	if c.Strategy == app.StrategyBlueGreen {
		line = fmt.Sprintf("%s v%d takes every request (%d web %s); v%d's units are kept: 'tug release rollback %s' switches back at once",
			res.App, c.Release, c.Units, plural(int(c.Units)), c.Stable, res.App)
	}
	if len(c.Others) > 0 {
		line += fmt.Sprintf("; %s keep running v%d until the promote", strings.Join(c.Others, ", "), c.Stable)
	}
	line += fmt.Sprintf("; 'tug release promote %s' or 'tug release abort %s'%s", res.App, res.App, whereLine(res))
	return line
}

func plural(n int) string {
	if n == 1 {
		return "unit"
	}
	return "units"
}

func newReleasePromoteCmd(f *cli.Factory, runF func(context.Context, *canaryEndOptions) error) *cobra.Command {
	return canaryEndCmd(f, runF, "promote", "Give the canary (or blue-green) release every request and make it the deployed one",
		`Promote the release that runs beside the deployed one (started by
'tug app deploy --canary' or '--strategy blue-green'): every request goes to
its units at once, the deployed release's units are rolled out to it (other
processes, workers, too), and once they run it the canary's own units go.`,
		canary.Promote, rollVerb{"promoted", "promoting the canary of"})
}

func newReleaseAbortCmd(f *cli.Factory, runF func(context.Context, *canaryEndOptions) error) *cobra.Command {
	return canaryEndCmd(f, runF, "abort", "Send every request back to the deployed release and remove the canary's units",
		`Abort the release that runs beside the deployed one (a canary, or a
blue-green release with its previous units kept): every request goes back
to the deployed release's units, which never stopped, then the canary's
units are removed and its release is marked aborted.`,
		canary.Abort, rollVerb{"aborted", "aborting the canary of"})
}

// canaryEndOptions are `tug release promote` and `tug release abort`.
type canaryEndOptions struct {
	Changer appChanger
	// End is canary.Promote or canary.Abort; Words name it.
	End   func(context.Context, deploy.Deps, string) (*deploy.Result, error)
	Words rollVerb

	App    string
	Format cli.OutputFormat
}

// canaryEndCmd is release promote or release abort: one app, the app's
// lock, a rollout's result.
func canaryEndCmd(f *cli.Factory, runF func(context.Context, *canaryEndOptions) error, verb, short, long string, end func(context.Context, deploy.Deps, string) (*deploy.Result, error), words rollVerb) *cobra.Command {
	o := &canaryEndOptions{End: end, Words: words}
	cmd := &cobra.Command{
		Use:         verb + " APP",
		Annotations: deleting(argApp), // removes the units of one of the two releases,
		Short:       short,
		Long:        long,
		Example:     "  tug release " + verb + " shop",
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runCanaryEnd(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	takesLock(cmd, &o.Changer.WaitLock)
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func runCanaryEnd(ctx context.Context, o *canaryEndOptions) error {
	return runRollout(ctx, o.Changer, o.App, func(ctx context.Context, d deploy.Deps) (*deploy.Result, error) {
		return o.End(ctx, d, o.App)
	}, o.Format, o.Words)
}
