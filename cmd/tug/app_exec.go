package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/session"
)

// appExecOptions are `tug app exec`.
type appExecOptions struct {
	Session func(context.Context) (session.Deps, error)

	session.ExecOptions
}

func newAppExecCmd(f *cli.Factory, runF func(context.Context, *appExecOptions) error) *cobra.Command {
	o := &appExecOptions{Session: sessionFor(f)}
	cmd := &cobra.Command{
		Use:         "exec APP -- COMMAND [ARGS...]",
		Annotations: atLevel(access.Developer, argsAre(argApp, argCommandLine)),
		Short:       "Run a command in one running unit, or in all of them",
		Long: `Run a command in the app's running units, as they are.

By default it runs in one unit: --unit names it, else the first ready unit of
the web process (or of -p PROCESS). Its output is passed through unchanged and
tug exits with the command's exit code. -i passes stdin; -t gives it a
terminal.

With --all it runs in every running unit (of -p PROCESS, or of every process)
at once. Each line of output is prefixed with its unit's name, stdout on
stdout and stderr on stderr. The exit code is that of the first unit, in the
order units are listed (web first, then by name), where the command did not
succeed: its exit code, or 1 when it could not be run there at all (127 when
not found); 0 when it succeeded everywhere. A summary of the failures ends
the output on stderr.

The COMMAND runs as given, without a shell: use -- sh -c '...' for one.
Every run records a Kubernetes Event on each unit naming you and the command.`,
		Example: `  tug app exec shop -- ls /app
  tug app exec shop --all -- sh -c 'echo $HOSTNAME'
  tug app exec shop -p worker --unit shop-worker-7c9d8-h2k4p -- kill -USR1 1
  tug app exec shop -i -- sh -c 'cat > /tmp/seed.sql' < seed.sql`,
		Args: commandArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Command = args[0], args[cmd.ArgsLenAtDash():]
			if err := validateProcess(o.Process); err != nil {
				return err
			}
			if o.All && o.Unit != "" {
				return inputerr.Errorf("--all and --unit exclude each other")
			}
			if o.Unit != "" {
				if err := app.ValidateUnitName(o.Unit); err != nil {
					return err
				}
			}
			if o.All && (o.Stdin || o.TTY) {
				return inputerr.Errorf("-i and -t work with one unit only, not with --all")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppExec(cmd.Context(), o)
		},
	}
	commandFlagErrors(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&o.Process, "process", "p", "", "Only this process's units")
	fl.StringVarP(&o.Unit, "unit", "u", "", "Run in this unit")
	fl.BoolVarP(&o.All, "all", "a", false, "Run in every running unit, output prefixed with the unit's name")
	fl.BoolVarP(&o.Stdin, "stdin", "i", false, "Pass stdin to the command (one unit only)")
	fl.BoolVarP(&o.TTY, "tty", "t", false, "Give the command a terminal (one unit only)")
	return cmd
}

func runAppExec(ctx context.Context, o *appExecOptions) error {
	d, err := o.Session(ctx)
	if err != nil {
		return err
	}
	return session.Exec(ctx, d, o.ExecOptions)
}
