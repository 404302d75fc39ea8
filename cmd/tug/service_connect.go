package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/service"
	"tug.dev/tug/pkg/session"
)

// serviceConnectOptions are `tug service connect`.
type serviceConnectOptions struct {
	Deps    func(context.Context) (service.Deps, error)
	Session func(context.Context) (session.Deps, error)

	Name    string
	Command []string
}

func newServiceConnectCmd(f *cli.Factory, runF func(context.Context, *serviceConnectOptions) error) *cobra.Command {
	o := &serviceConnectOptions{Deps: serviceDepsFor(f), Session: sessionFor(f)}
	cmd := &cobra.Command{
		Use:         "connect NAME [-- COMMAND...]",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Short:       "Open the service's client (psql) in its unit, or run one command there",
		Long: `Open an interactive client session in the service's unit (psql for the
postgres plan), on your terminal as 'tug shell' does. With -- COMMAND, run
that command there instead and exit with its code.`,
		Example: "  tug service connect db\n  tug service connect db -- psql -U app -c 'select count(*) from tug_rows'",
		Args:    connectArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			o.Name = args[0]
			if dash > 0 {
				o.Command = args[dash:]
				if len(o.Command) == 0 {
					return inputerr.Errorf("no command after '--'")
				}
			}
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceConnect(cmd.Context(), o)
		},
	}
	return cmd
}

func runServiceConnect(ctx context.Context, o *serviceConnectOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	t, argv, err := service.ConnectTarget(ctx, d, o.Name, o.Command)
	if err != nil {
		return err
	}
	sd, err := o.Session(ctx)
	if err != nil {
		return err
	}
	return session.ExecIn(ctx, sd, t, argv, len(o.Command) == 0)
}

// connectArgs checks `NAME [-- COMMAND...]`: a command comes after "--",
// so that its own flags are never taken for tug's.
func connectArgs(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	switch {
	case len(args) == 0 || dash == 0:
		return inputerr.Errorf("missing NAME: %s NAME [-- COMMAND...]", cmd.CommandPath())
	case (dash < 0 && len(args) > 1) || dash > 1:
		return inputerr.Errorf("unexpected argument %q: put a command after '--'", args[1])
	}
	return nil
}
