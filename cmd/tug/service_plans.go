package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// servicePlansOptions are `tug service plans`.
type servicePlansOptions struct {
	IO     *cli.IOStreams
	Deps   func(context.Context) (service.Deps, error)
	Output cli.OutputOptions
}

func newServicePlansCmd(f *cli.Factory, runF func(context.Context, *servicePlansOptions) error) *cobra.Command {
	o := &servicePlansOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "plans",
		Annotations: atLevel(levelNone, nil),
		Short:       "List the plans this cluster offers: name, description, versions",
		Long: `List the plans services are made from: tug's built-in ones and those an admin
published in the cluster ('tug cluster plans set -f plan.yaml').`,
		Example: "  tug service plans\n  tug service plans -o json",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServicePlans(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runServicePlans(ctx context.Context, o *servicePlansOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	cat, err := service.ReadCatalog(ctx, d.Client)
	if err != nil {
		return err
	}
	for name, why := range cat.Broken {
		fmt.Fprintf(o.IO.ErrOut, "warning: published plan %q is skipped: %s\n", name, cli.Sanitize(why))
	}
	infos := cat.Infos()
	return o.Output.Print(o.IO, infos, func() error {
		t := cli.NewTable("name", "versions", "default", "source", "description")
		for _, p := range infos {
			t.AddRow(p.Name, strings.Join(p.Versions, ","), p.Default, p.Source, p.Description)
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
