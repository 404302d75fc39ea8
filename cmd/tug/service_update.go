package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/service"
)

// serviceUpdateOptions are `tug service update`.
type serviceUpdateOptions struct {
	IO      *cli.IOStreams
	Deps    func(context.Context) (service.Deps, error)
	Changer appChanger
	Rollout rolloutFlags

	Name string
	URI  string
}

func newServiceUpdateCmd(f *cli.Factory, runF func(context.Context, *serviceUpdateOptions) error) *cobra.Command {
	o := &serviceUpdateOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "update NAME --uri URI",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Short:       "Give an external service a new URI; its bound apps are rolled out with it",
		Long: `Give a service made with --uri its new URI (its owner changed the password,
or it moved). Its binding is rewritten and every bound app is rolled out
with it, one after the other.`,
		Example: `  tug service update legacy --uri - < new-uri.txt`,
		Args:    cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			var err error
			if o.URI, err = uriFrom(o.IO.In, o.URI); err != nil {
				return err
			}
			if o.URI == "" {
				return inputerr.Errorf("give the new URI with --uri")
			}
			if _, err := service.ParseURI(o.URI); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceUpdate(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVar(&o.URI, "uri", "", "The new connection URI (required); - reads it from stdin, out of ps and the shell's history")
	o.Rollout.add(cmd, false, &o.Changer.WaitLock)
	return cmd
}

func runServiceUpdate(ctx context.Context, o *serviceUpdateOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	d.WaitLock = o.Changer.WaitLock // serviceDeps named the lock's holder
	restart := appRestarter(o.Changer, d.Progress, &o.Rollout)
	apps, err := service.UpdateURI(ctx, d, o.Name, o.URI, restart)
	if err != nil {
		d.Progress.Fail("updating service " + o.Name)
		return err
	}
	msg := "no app is bound"
	if len(apps) > 0 {
		msg = "rolled out: " + strings.Join(apps, ", ")
	}
	d.Progress.Done(fmt.Sprintf("service %s has its new URI; %s", o.Name, msg))
	return nil
}
