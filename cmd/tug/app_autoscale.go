package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

func newAutoscaleCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "autoscale", Short: "Let a HorizontalPodAutoscaler set a process's units", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	cmd.AddCommand(newAutoscaleSetCmd(f), newAutoscaleUnsetCmd(f), newAutoscaleListCmd(f))
	return cmd
}

func newAutoscaleSetCmd(f *cli.Factory) *cobra.Command {
	o := &app.SetAutoscaleOptions{}
	r := &rolloutFlags{}
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
			return reshape(cmd.Context(), changerFor(cmd, f), o.App, r, o.Apply)
		},
	}
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Process type (required)")
	cmd.Flags().Int32Var(&o.Min, "min", 1, "Fewest units")
	cmd.Flags().Int32Var(&o.Max, "max", 0, "Most units (required)")
	cmd.Flags().StringVar(&o.CPU, "cpu", "80%", "Target CPU use, as a percentage of the request")
	r.add(cmd, false)
	return cmd
}

func newAutoscaleUnsetCmd(f *cli.Factory) *cobra.Command {
	var proc string
	r := &rolloutFlags{}
	cmd := &cobra.Command{
		Use:         "unset APP -p PROCESS",
		Annotations: deleting(argApp),
		Short:       "Stop autoscaling a process; it keeps its current units",
		Example:     `  tug app autoscale unset shop -p web`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateAppProcess(args[0], proc, true); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			return reshape(cmd.Context(), changerFor(cmd, f), args[0], r, deploy.UnsetAutoscale(cmd.Context(), s.Client, s.Namespace, proc))
		},
	}
	cmd.Flags().StringVarP(&proc, "process", "p", "", "Process type (required)")
	r.add(cmd, false)
	return cmd
}
