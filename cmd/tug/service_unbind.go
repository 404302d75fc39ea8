package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// serviceUnbindOptions are `tug service unbind`.
type serviceUnbindOptions struct {
	Changer appChanger
	Rollout rolloutFlags

	App     string
	Service string
}

func newServiceUnbindCmd(f *cli.Factory, runF func(context.Context, *serviceUnbindOptions) error) *cobra.Command {
	o := &serviceUnbindOptions{}
	cmd := &cobra.Command{
		Use:         "unbind APP NAME",
		Annotations: atLevel(access.Operator, deleting(argApp, argService)),
		Short:       "Unbind a service from an app: a new release, rolled out",
		Long:        "Remove a service's variables and files from an app's units, as a new release. The service and its data stay.",
		Example:     "  tug service unbind shop db",
		Args:        cli.ExactArgs("APP", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Service = args[0], args[1]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if err := service.ValidateName(o.Service); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceUnbind(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	o.Rollout.addDryRun(cmd, "")
	return cmd
}

func runServiceUnbind(ctx context.Context, o *serviceUnbindOptions) error {
	return serviceLocked(ctx, o.Changer, o.Service, o.Rollout.DryRun, func(ctx context.Context) error {
		return rollOutChange(ctx, o.Changer, o.App, service.UnbindChange(o.Service), o.Rollout.options(), o.Rollout.Output, rollVerb{"service " + o.Service + " unbound", "unbinding service " + o.Service + " from"})
	})
}
