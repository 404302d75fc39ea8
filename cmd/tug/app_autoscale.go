package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

func newAutoscaleCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "autoscale", Short: "Let a HorizontalPodAutoscaler set a process's units", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	cmd.AddCommand(newAutoscaleSetCmd(f, nil), newAutoscaleUnsetCmd(f, nil), newAutoscaleListCmd(f, nil))
	return cmd
}

// autoscaleSetOptions are `tug app autoscale set`.
type autoscaleSetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	app.SetAutoscaleOptions
}

func newAutoscaleSetCmd(f *cli.Factory, runF func(context.Context, *autoscaleSetOptions) error) *cobra.Command {
	o := &autoscaleSetOptions{}
	cmd := &cobra.Command{
		Use:         "set APP -p PROCESS --min N --max N --cpu P%",
		Annotations: argsAre(argApp),
		Short:       "Autoscale a process on CPU use",
		Long: `Autoscale a process between --min and --max units, aiming at --cpu percent of
its CPU request (set one with 'tug app limit set --cpu-request'). While a
process autoscales, 'tug app scale' refuses it and deploys keep its count.`,
		Example: `  tug app autoscale set shop -p web --min 2 --max 10 --cpu 70%`,
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAutoscaleSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (required)")
	cmd.Flags().Int32Var(&o.Min, "min", 1, "Fewest units")
	cmd.Flags().Int32Var(&o.Max, "max", 0, "Most units (required)")
	cmd.Flags().StringVar(&o.CPU, "cpu", "80%", "Target CPU use, as a percentage of the request")
	o.Rollout.add(cmd, false, &o.Changer.WaitLock)
	return cmd
}

func runAutoscaleSet(ctx context.Context, o *autoscaleSetOptions) error {
	return changeUnits(ctx, o.Changer, o.App, &o.Rollout, o.Apply)
}

// autoscaleUnsetOptions are `tug app autoscale unset`.
type autoscaleUnsetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	Store   func() (*app.Store, error)

	App     string
	Process string
}

func newAutoscaleUnsetCmd(f *cli.Factory, runF func(context.Context, *autoscaleUnsetOptions) error) *cobra.Command {
	o := &autoscaleUnsetOptions{Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "unset APP -p PROCESS",
		Annotations: deleting(argApp),
		Short:       "Stop autoscaling a process; it keeps its current units",
		Example:     `  tug app autoscale unset shop -p web`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateAppProcess(o.App, o.Process, true); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAutoscaleUnset(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (required)")
	o.Rollout.add(cmd, false, &o.Changer.WaitLock)
	return cmd
}

func runAutoscaleUnset(ctx context.Context, o *autoscaleUnsetOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	return changeUnits(ctx, o.Changer, o.App, &o.Rollout, deploy.UnsetAutoscale(ctx, s.Client, s.Namespace, o.Process))
}
