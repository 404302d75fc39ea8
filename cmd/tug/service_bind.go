package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// serviceBindOptions are `tug service bind`.
type serviceBindOptions struct {
	Changer appChanger
	Deps    func(context.Context) (service.Deps, error)
	Rollout rolloutFlags

	service.Bind
}

func newServiceBindCmd(f *cli.Factory, runF func(context.Context, *serviceBindOptions) error) *cobra.Command {
	o := &serviceBindOptions{Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "bind APP NAME [--as PREFIX]",
		Annotations: atLevel(access.Operator, argsAre(argApp, argService)),
		Short:       "Bind a service to an app: its credentials as variables and files, a new release",
		Long: `Bind a service to an app: every unit gets the service's credentials as
variables (the plan's prefix: DATABASE_URL, DATABASE_HOST, ...; with --as
ORDERS: ORDERS_URL, ORDERS_HOST, ...) and as files under
$SERVICE_BINDING_ROOT/NAME (servicebinding.io: type, provider, host, port,
username, password, database, uri), which buildpacks, Spring Boot and
Quarkus read. This makes a new release, rolled out and watched like a
deploy, and rolled back if it fails; a rollback to a release before the bind
removes it. Several services bind side by side with different --as.`,
		Example: `  tug service bind shop db
  tug service bind shop reports --as REPORTS_DB`,
		Args: cli.ExactArgs("APP", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Service = args[0], args[1]
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceBind(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVar(&o.Prefix, "as", "", "Prefix of the variables, e.g. ORDERS_DB gives ORDERS_DB_URL (default: the plan's, DATABASE for postgres)")
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	o.Rollout.addDryRun(cmd, "")
	return cmd
}

func runServiceBind(ctx context.Context, o *serviceBindOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	return serviceLocked(ctx, o.Changer, o.Service, o.Rollout.DryRun, func(ctx context.Context) error {
		change := service.BindChange(ctx, d, o.Bind)
		return rollOutChange(ctx, o.Changer, o.App, change, o.Rollout.options(), o.Rollout.Output, rollVerb{"service " + o.Service + " bound", "binding service " + o.Service + " to"})
	})
}
