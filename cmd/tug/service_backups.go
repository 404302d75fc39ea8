package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// serviceBackupsOptions are `tug service backups`.
type serviceBackupsOptions struct {
	IO     *cli.IOStreams
	Deps   func(context.Context) (service.Deps, error)
	Name   string
	Output cli.OutputOptions
}

func newServiceBackupsCmd(f *cli.Factory, runF func(context.Context, *serviceBackupsOptions) error) *cobra.Command {
	o := &serviceBackupsOptions{IO: f.IOStreams, Deps: serviceDepsFor(f)}
	cmd := &cobra.Command{
		Use:         "backups NAME",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Short:       "List the dumps of a service's scheduled backups, newest first",
		Example:     "  tug service backups db",
		Args:        cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceBackups(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runServiceBackups(ctx context.Context, o *serviceBackupsOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	files, err := service.Backups(ctx, d, o.Name)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, files, func() error {
		if len(files) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no dumps yet in the backups of service %q\n", o.Name)
			return nil
		}
		t := cli.NewTable("dump", "bytes", "made")
		for _, f := range files {
			t.AddRow(f.Name, strconv.FormatInt(f.Size, 10), f.Time.Format(time.RFC3339))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
