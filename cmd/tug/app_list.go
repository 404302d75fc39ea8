package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/text"
)

// appListOptions are `tug app list`.
type appListOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string

	Output cli.OutputOptions
}

func newAppListCmd(f *cli.Factory, runF func(context.Context, *appListOptions) error) *cobra.Command {
	o := &appListOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(access.Viewer, nil),
		Aliases:     []string{"ls"},
		Short:       "List the apps in the namespace",
		Example: `  tug app list
  tug app list -n staging -o name`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runAppList(ctx context.Context, o *appListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	apps, err := app.List(ctx, s)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, apps, func() error {
		if len(apps) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no apps in namespace %q; create one with '%s app create NAME'\n", s.Namespace, o.CommandName)
			return nil
		}
		t := cli.NewTable("name", "release", "units", "image", "age")
		for _, a := range apps {
			units := unitsCell(a.Processes)
			if a.Failed != nil && len(a.Processes) == 0 {
				units = fmt.Sprintf("none (v%d %s)", a.Failed.Version, a.Failed.Status)
			}
			t.AddRow(a.Name, releaseCell(a.Release), units, a.Image, text.Age(a.CreatedAt))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
