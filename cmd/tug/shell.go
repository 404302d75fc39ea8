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

// shellOptions are `tug shell`.
type shellOptions struct {
	Session func(context.Context) (session.Deps, error)

	session.ShellOptions
}

func newShellCmd(f *cli.Factory, runF func(context.Context, *shellOptions) error) *cobra.Command {
	o := &shellOptions{Session: sessionFor(f)}
	cmd := &cobra.Command{
		Use:         "shell APP [UNIT]",
		Annotations: atLevel(access.Developer, argsAre(argApp, argUnit)),
		Short:       "Open a shell in one of the app's units",
		Long: `Open an interactive shell in a running unit of the app: bash when the image
has it, else sh (--command runs something else).

With no UNIT named, a terminal shows the running units to choose from when
there are several; otherwise the first ready unit of the web process (or of
-p PROCESS) is used.

On a terminal the shell gets a TTY: raw mode (Ctrl-C goes to the remote
side), your TERM, and the window size, following every resize. The terminal
is restored however the session ends. Without a terminal on stdin the shell
reads commands from it: echo 'ls /' | tug shell APP.

tug exits with the shell's exit code (e.g. 'exit 5' exits 5); 127 when the
image has no shell. Every session records a Kubernetes Event on the unit
naming you and the command.`,
		Example: `  tug shell shop
  tug shell shop shop-web-6d9c7b8f5-x2k9q
  tug shell shop -p worker --command 'rails console'
  echo 'ls /' | tug shell shop`,
		GroupID: "apps",
		Args:    appAndOptionalArg("UNIT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if len(args) > 1 {
				o.Unit = args[1]
			}
			if err := app.ValidateName(o.App); err != nil {
				return inputerr.Wrap(err)
			}
			if err := validateProcess(o.Process); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runShell(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Choose among this process's units")
	cmd.Flags().StringVarP(&o.Command, "command", "c", "", "Run this command line instead of bash or sh (not kubectl exec's -c, the container)")
	return cmd
}

func runShell(ctx context.Context, o *shellOptions) error {
	d, err := o.Session(ctx)
	if err != nil {
		return err
	}
	return session.Shell(ctx, d, o.ShellOptions)
}
