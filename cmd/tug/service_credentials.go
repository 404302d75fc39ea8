package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// serviceCredentialsOptions are `tug service credentials`.
type serviceCredentialsOptions struct {
	IO     *cli.IOStreams
	Deps   func(context.Context) (service.Deps, error)
	Name   string
	Reveal bool
	Output cli.OutputOptions
}

func newServiceCredentialsCmd(f *cli.Factory, runF func(context.Context, *serviceCredentialsOptions) error) *cobra.Command {
	o := &serviceCredentialsOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "credentials NAME [--reveal]",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Short:       "Show the keys of a service's credentials; their values with --reveal",
		Long: `Show the keys a bound app gets (host, port, username, password, database,
uri, ...). Values are shown only with --reveal; they can always be read
again, by whoever may read the service's Secrets.`,
		Example: "  tug service credentials db\n  tug service credentials db --reveal -o json | jq -r .values.uri",
		Args:    cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceCredentials(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Reveal, "reveal", false, "Show the values too")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runServiceCredentials(ctx context.Context, o *serviceCredentialsOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	c, err := service.ReadCredentials(ctx, d, o.Name, o.Reveal)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, c, func() error {
		t := cli.NewTable("key", "value")
		for _, k := range c.Keys {
			v := "(hidden: --reveal)"
			if o.Reveal {
				v = c.Values[k]
			}
			t.AddRow(k, v)
		}
		if err := t.Render(o.IO, false); err != nil {
			return err
		}
		_, err := fmt.Fprintf(o.IO.ErrOut, "from Secret %s\n", c.Secret)
		return err
	})
}
