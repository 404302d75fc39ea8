package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func newHealthcheckCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "healthcheck", Short: "Set, unset and list a process's readiness, liveness and startup checks", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	cmd.AddCommand(newHealthcheckSetCmd(f, nil), newHealthcheckUnsetCmd(f, nil), newSettingsListCmd(f, nil, "list APP", "List each process's checks", "  tug app healthcheck list shop", func(a *app.App, rel *app.Release) any {
		out := map[string]app.Healthcheck{}
		for _, p := range a.ProcessNames() {
			out[p] = rel.Healthchecks[p]
		}
		return out
	}, healthcheckTable))
	return cmd
}

func healthcheckTable(a *app.App, rel *app.Release) *cli.Table {
	t := cli.NewTable("process", "readiness", "liveness", "startup", "timing")
	for _, p := range a.ProcessNames() {
		h, ok := rel.Healthchecks[p]
		ready := dash(h.Readiness)
		if !ok && p == app.WebProcess {
			ready = "tcp:$PORT (default)"
		}
		timing := ""
		if ok {
			d := h.WithDefaults()
			timing = fmt.Sprintf("delay %ds, every %ds, timeout %ds, %d failures", d.InitialDelay, d.Period, d.Timeout, d.FailureThreshold)
		}
		t.AddRow(p, ready, dash(h.Liveness), dash(h.Startup), dash(timing))
	}
	return t
}

// healthcheckSetOptions are `tug app healthcheck set`.
type healthcheckSetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	app.SetHealthcheckOptions
}

func newHealthcheckSetCmd(f *cli.Factory, runF func(context.Context, *healthcheckSetOptions) error) *cobra.Command {
	o := &healthcheckSetOptions{}
	cmd := &cobra.Command{
		Use:         "set APP -p PROCESS [--readiness SPEC] [--liveness SPEC] [--startup SPEC]",
		Annotations: argsAre(argApp),
		Short:       "Set checks (http:PORT/PATH, tcp:PORT, exec:COMMAND): a new release, rolled out",
		Long: `Set a process's checks. Each SPEC is http:PORT/PATH (an HTTP GET that must
answer 2xx or 3xx), tcp:PORT (a connection must open) or exec:COMMAND (must exit
0). A readiness check replaces the web process's default (a TCP check on $PORT).`,
		Example: `  tug app healthcheck set shop -p web --readiness http:8080/healthz --period 5
  tug app healthcheck set shop -p worker --liveness exec:'test -f /tmp/alive'`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runHealthcheckSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	h := &o.Healthcheck
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (required)")
	cmd.Flags().StringVar(&h.Readiness, "readiness", "", "When a unit may receive traffic")
	cmd.Flags().StringVar(&h.Liveness, "liveness", "", "When a unit must be restarted")
	cmd.Flags().StringVar(&h.Startup, "startup", "", "When a slow unit has started (holds the other checks until it passes)")
	cmd.Flags().Int32Var(&h.InitialDelay, "initial-delay", 0, "Seconds before the first check")
	cmd.Flags().Int32Var(&h.Period, "period", 0, fmt.Sprintf("Seconds between checks (default %d)", app.DefaultProbePeriod))
	cmd.Flags().Int32Var(&h.Timeout, "timeout-seconds", 0, fmt.Sprintf("Seconds a check may take (default %d)", app.DefaultProbeTimeout))
	cmd.Flags().Int32Var(&h.FailureThreshold, "failure-threshold", 0, fmt.Sprintf("Failures in a row that count (default %d)", app.DefaultProbeFailureThreshold))
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runHealthcheckSet(ctx context.Context, o *healthcheckSetOptions) error {
	return rollOutSettings(ctx, o.Changer, o.App, app.KindHealthcheck, "healthcheck of "+o.Process, &o.Rollout, o.Apply)
}

// healthcheckUnsetOptions are `tug app healthcheck unset`.
type healthcheckUnsetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	app.UnsetHealthcheckOptions
}

func newHealthcheckUnsetCmd(f *cli.Factory, runF func(context.Context, *healthcheckUnsetOptions) error) *cobra.Command {
	o := &healthcheckUnsetOptions{}
	cmd := &cobra.Command{
		Use:         "unset APP -p PROCESS",
		Annotations: deleting(argApp),
		Short:       "Remove a process's checks: a new release, rolled out",
		Example:     `  tug app healthcheck unset shop -p web`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runHealthcheckUnset(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (required)")
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runHealthcheckUnset(ctx context.Context, o *healthcheckUnsetOptions) error {
	return rollOutSettings(ctx, o.Changer, o.App, app.KindHealthcheck, "healthcheck of "+o.Process+" removed", &o.Rollout, o.Apply)
}
