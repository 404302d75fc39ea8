package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lifecycle"
)

// appCreateOptions are `tug app create`.
type appCreateOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string
	// RouteToPool points the store at the cluster of the app's pool.
	RouteToPool func(pool string) error

	lifecycle.CreateOptions
	Output cli.OutputOptions
}

func newAppCreateCmd(f *cli.Factory, runF func(context.Context, *appCreateOptions) error) *cobra.Command {
	o := &appCreateOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName,
		RouteToPool: func(pool string) error { return routeToPool(f, pool) }}
	cmd := &cobra.Command{
		Use:         "create NAME",
		Annotations: atLevel(access.Admin, argsAre(argNewName)),
		Short:       "Create an app",
		Long: `Create an app in the namespace. Nothing runs until its first deploy.

Names are lower-case letters, digits and '-', at most 30 characters, so that
every object derived from them stays valid.`,
		Example: `  tug app create shop
  tug app create shop --pool gpu --team payments --description "the web shop"`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := app.ValidateName(o.Name); err != nil {
				return err
			}
			if o.Pool != "" {
				if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
					return inputerr.Wrap(err)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppCreate(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Pool whose nodes run the app's units")
	cmd.Flags().StringVar(&o.Description, "description", "", "What the app is")
	cmd.Flags().StringVar(&o.Team, "team", "", "Team that owns the app")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runAppCreate(ctx context.Context, o *appCreateOptions) error {
	if o.Pool != "" {
		// The app lives in its pool's cluster (see 'tug cluster').
		if err := o.RouteToPool(o.Pool); err != nil {
			return err
		}
	}
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := lifecycle.Create(ctx, s, o.CreateOptions)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, a, func() error {
		_, err := fmt.Fprintf(o.IO.Out, "app %q created in namespace %q; deploy it from its source folder with '%s app deploy %s --builder IMAGE --repository REPO', or an image with '--image IMAGE'\n", a.Name, a.Namespace, o.CommandName, a.Name)
		return err
	})
}
