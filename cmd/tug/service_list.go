package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// serviceListOptions are `tug service list`.
type serviceListOptions struct {
	IO          *cli.IOStreams
	Deps        func(context.Context) (service.Deps, error)
	CommandName string
	Output      cli.OutputOptions
}

func newServiceListCmd(f *cli.Factory, runF func(context.Context, *serviceListOptions) error) *cobra.Command {
	o := &serviceListOptions{IO: f.IOStreams, Deps: serviceDepsFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(access.Viewer, nil),
		Aliases:     []string{"ls"},
		Short:       "List the namespace's services, their status and the apps bound to them",
		Example:     "  tug service list",
		Args:        cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runServiceList(ctx context.Context, o *serviceListOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	list, err := service.List(ctx, d)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, list, func() error {
		if len(list) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no services in namespace %q; create one with '%s service create NAME --plan postgres'\n", d.Namespace, o.CommandName)
			return nil
		}
		t := cli.NewTable("name", "plan", "version", "status", "size", "apps")
		for _, s := range list {
			apps := make([]string, 0, len(s.Apps))
			for _, a := range s.Apps {
				apps = append(apps, a.App)
			}
			t.AddRow(s.Name, s.Plan, dash(s.Version), s.Status, dash(s.Size), dash(strings.Join(apps, ",")))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
