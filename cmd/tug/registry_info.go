package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/registry"
)

// registryInfoOptions are `tug registry info`.
type registryInfoOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string

	App    string
	Output cli.OutputOptions
}

func newRegistryInfoCmd(f *cli.Factory, runF func(context.Context, *registryInfoOptions) error) *cobra.Command {
	o := &registryInfoOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "info APP",
		Annotations: atLevel(access.Developer, argsAre(argApp)),
		Short:       "Show the registry server and user an app pulls with, and which units do",
		Example:     `  tug registry info shop`,
		Long:        "Show the registry credentials of an app: server, user, Secret and the units that pull with it. The password is never shown.",
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runRegistryInfo(cmd.Context(), o)
		},
	}
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runRegistryInfo(ctx context.Context, o *registryInfoOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	info, err := registry.Get(ctx, s.Client, s.Namespace, o.App)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, info, func() error { return printRegistryInfo(o.IO, o.CommandName, info) })
}

func printRegistryInfo(ios *cli.IOStreams, commandName string, in *registry.Info) error {
	w := ios.Out
	if in.Secret == "" {
		_, err := fmt.Fprintf(w, "app %s pulls its image without credentials; set some with '%s registry set %s --server HOST --username USER --password-stdin'\n", in.App, commandName, in.App)
		return err
	}
	fmt.Fprintf(w, "App:       %s\n", in.App)
	fmt.Fprintf(w, "Server:    %s\n", dash(in.Server))
	fmt.Fprintf(w, "Username:  %s\n", dash(in.Username))
	fmt.Fprintf(w, "Secret:    %s\n", in.Secret)
	units := make([]string, 0, len(in.Units))
	for _, u := range in.Units {
		if u.Process == "" {
			units = append(units, u.Name+" (run)")
		} else {
			units = append(units, u.Name+" ("+u.Process+")")
		}
	}
	if len(units) == 0 {
		units = append(units, "none running")
	}
	_, err := fmt.Fprintf(w, "Units:     %s\n", strings.Join(units, ", "))
	return err
}
