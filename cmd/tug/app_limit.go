package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func newLimitCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "limit", Short: "Set, unset and list a process's CPU and memory", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	cmd.AddCommand(newLimitSetCmd(f, nil), newLimitUnsetCmd(f, nil), newSettingsListCmd(f, nil, "list APP", "List each process's limits and requests", "  tug app limit list shop", func(a *app.App, rel *app.Release) any {
		out := map[string]app.Limits{}
		for _, p := range a.ProcessNames() {
			out[p] = rel.Limits[p]
		}
		return out
	}, func(a *app.App, rel *app.Release) *cli.Table {
		t := cli.NewTable("process", "cpu", "memory", "cpu-request", "memory-request")
		for _, p := range a.ProcessNames() {
			l := rel.Limits[p]
			t.AddRow(p, dash(l.CPU), dash(l.Memory), dash(l.CPURequest), dash(l.MemoryRequest))
		}
		return t
	}))
	return cmd
}

// limitSetOptions are `tug app limit set`.
type limitSetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	app.SetLimitsOptions
}

func newLimitSetCmd(f *cli.Factory, runF func(context.Context, *limitSetOptions) error) *cobra.Command {
	o := &limitSetOptions{}
	cmd := &cobra.Command{
		Use:         "set APP -p PROCESS [--cpu Q] [--memory Q] [--cpu-request Q] [--memory-request Q]",
		Annotations: argsAre(argApp),
		Short:       "Set limits and requests: a new release, rolled out",
		Example:     `  tug app limit set shop -p web --cpu 500m --memory 256Mi --memory-request 128Mi`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runLimitSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (required)")
	cmd.Flags().StringVar(&o.Limits.CPU, "cpu", "", "CPU limit, e.g. 500m or 1")
	cmd.Flags().StringVar(&o.Limits.Memory, "memory", "", "Memory limit, e.g. 256Mi")
	cmd.Flags().StringVar(&o.Limits.CPURequest, "cpu-request", "", "CPU the scheduler reserves")
	cmd.Flags().StringVar(&o.Limits.MemoryRequest, "memory-request", "", "Memory the scheduler reserves")
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runLimitSet(ctx context.Context, o *limitSetOptions) error {
	return rollOutSettings(ctx, o.Changer, o.App, app.KindLimits, "limits of "+o.Process, &o.Rollout, o.Apply)
}

// limitUnsetOptions are `tug app limit unset`.
type limitUnsetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	app.UnsetLimitsOptions
}

func newLimitUnsetCmd(f *cli.Factory, runF func(context.Context, *limitUnsetOptions) error) *cobra.Command {
	o := &limitUnsetOptions{}
	cmd := &cobra.Command{
		Use:         "unset APP -p PROCESS [--cpu] [--memory]",
		Annotations: deleting(argApp),
		Short:       "Remove limits (and their requests): a new release, rolled out",
		Example: `  tug app limit unset shop -p web
  tug app limit unset shop -p worker --memory`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runLimitUnset(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (required)")
	cmd.Flags().BoolVar(&o.CPU, "cpu", false, "Remove the CPU limit and request")
	cmd.Flags().BoolVar(&o.Memory, "memory", false, "Remove the memory limit and request")
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runLimitUnset(ctx context.Context, o *limitUnsetOptions) error {
	return rollOutSettings(ctx, o.Changer, o.App, app.KindLimits, "limits of "+o.Process+" removed", &o.Rollout, o.Apply)
}
