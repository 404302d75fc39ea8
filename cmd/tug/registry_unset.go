package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/registry"
)

// registryUnsetOptions are `tug registry unset`.
type registryUnsetOptions struct {
	Changer appChanger
	Rollout rolloutFlags

	App string
}

func newRegistryUnsetCmd(f *cli.Factory, runF func(context.Context, *registryUnsetOptions) error) *cobra.Command {
	o := &registryUnsetOptions{}
	cmd := &cobra.Command{
		Use:         "unset APP",
		Annotations: deleting(argApp),
		Short:       "Pull the app's image without credentials again, and delete them",
		Example:     `  tug registry unset shop`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runRegistryUnset(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.add(cmd, false, &o.Changer.WaitLock)
	return cmd
}

func runRegistryUnset(ctx context.Context, o *registryUnsetOptions) error {
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	p := o.Changer.Progress()
	d.Progress = p
	res, err := registry.Unset(ctx, d, o.App, o.Rollout.options())
	if err != nil {
		p.Fail("unsetting the registry credentials of " + o.App)
		return err
	}
	if res != nil {
		p.Done(doneLine(res, "registry credentials removed"))
	} else {
		p.Done(fmt.Sprintf("registry credentials of %s removed", o.App))
	}
	return printRegistryResult(o.Changer.IO, o.Rollout.Output, &registry.Info{App: o.App, Namespace: d.Namespace, Units: []registry.Unit{}})
}

// printRegistryResult prints the credentials' state after set or unset for
// -o json|yaml; the human form is the progress line.
func printRegistryResult(ios *cli.IOStreams, format cli.OutputFormat, info *registry.Info) error {
	if format == cli.OutputTable {
		return nil
	}
	return cli.OutputOptions{Format: format}.Print(ios, info, nil)
}
