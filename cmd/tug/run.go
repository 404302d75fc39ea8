package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/session"
)

// runOptions are `tug run`.
type runOptions struct {
	IO          *cli.IOStreams
	CommandName string
	Session     func(context.Context) (session.Deps, error)

	session.RunOptions
	env []string
}

func newRunCmd(f *cli.Factory, runF func(context.Context, *runOptions) error) *cobra.Command {
	o := &runOptions{IO: f.IOStreams, CommandName: f.CommandName, Session: sessionFor(f)}
	cmd := &cobra.Command{
		Use:         "run APP -- COMMAND [ARGS...]",
		Annotations: atLevel(access.Developer, argsAre(argApp, argCommandLine)),
		Short:       "Run a one-off command in a new pod from the app's current release",
		Long: `Run a one-off command (a migration, a console, a script) in a new pod made
from the app's current release: the same image, config, limits, pool and pull
secret as the process's units (web, else the first; -p picks another). The pod
is labelled tug.dev/kind=run and never counts as a unit.

tug waits for the pod to start, shows its output and exits with the command's
exit code. The pod is deleted however the run ends: success, failure, Ctrl-C,
SIGTERM, a closed terminal or a lost connection. --detach leaves it running
and prints its name; follow it with 'tug logs APP --unit NAME -f'. Runs are
listed by 'tug unit list APP' (process "run") until removed, finished ones
included; 'tug unit kill APP NAME' stops and removes one.

Without -i the output comes from the pod's log, every line from the first,
stdout and stderr together. With -i tug attaches to the command's stdin,
stdout and stderr (falling back to its log if attaching fails); -t adds a
terminal (raw mode, live resize) and implies -i. Without a terminal on stdin,
-t warns and runs without one.

The COMMAND runs as given, without a shell: use -- sh -c '...' for one.
--env adds variables to the release's config for this run only; their values
are kept in a Secret removed with the pod, never in the pod's spec. A KEY
without a value takes it from your environment.

Exit codes: the command's own; 124 when --timeout stops it; 126 or 127 when
the command cannot be run or is not found in the image; 10, 12 or 13 when
the pod cannot start (image, configuration, no node; see docs/exit-codes.md).
Every run records a Kubernetes Event on its pod naming you and the command.`,
		Example: `  tug run shop -- rake db:migrate
  tug run shop -it -- /bin/sh
  tug run shop -p worker --env BATCH=500 --timeout 30m -- ./reindex
  echo 'select 1' | tug run shop -i -- psql "$DATABASE_URL"
  tug run shop --detach -- ./nightly-report`,
		GroupID: "apps",
		Args:    commandArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Command = args[0], args[cmd.ArgsLenAtDash():]
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runRun(cmd.Context(), o)
		},
	}
	o.addFlags(cmd)
	return cmd
}

// addFlags binds run's flags; a flag error says the command line goes
// after -- (commandFlagErrors).
func (o *runOptions) addFlags(cmd *cobra.Command) {
	commandFlagErrors(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&o.Process, "process", "p", "", "Process whose pod template to use (default web, else the first)")
	fl.BoolVarP(&o.Stdin, "stdin", "i", false, "Pass stdin to the command (attach)")
	fl.BoolVarP(&o.TTY, "tty", "t", false, "Give the command a terminal; implies -i")
	fl.StringArrayVarP(&o.env, "env", "e", nil, "Set KEY=VALUE for this run only (KEY alone: its value here); repeatable")
	fl.DurationVar(&o.Timeout, "timeout", 0, "Stop the run after this long (0: no limit); exit code 124")
	fl.BoolVarP(&o.Detach, "detach", "d", false, "Leave the pod running and print its name")
}

// validate checks the flags and reads --env, before anything is asked of
// the cluster.
func (o *runOptions) validate() error {
	if err := validateProcess(o.Process); err != nil {
		return err
	}
	if o.Timeout < 0 {
		return inputerr.Errorf("--timeout must not be negative, got %s", o.Timeout)
	}
	if o.Detach && (o.Stdin || o.TTY) {
		return inputerr.Errorf("--detach cannot be combined with -i or -t: a detached run has no one to read input from")
	}
	env, err := parseRunEnv(o.env, lookupEnv)
	if err != nil {
		return err
	}
	o.Env = env
	return nil
}

// runRun runs o's command in a one-off unit of o.App.
func runRun(ctx context.Context, o *runOptions) error {
	d, err := o.Session(ctx)
	if err != nil {
		return err
	}
	res, err := session.Run(ctx, d, o.RunOptions)
	if err != nil {
		return err
	}
	if o.Detach {
		fmt.Fprintln(o.IO.Out, res.Pod)
		fmt.Fprintf(o.IO.ErrOut, "run %s started; follow it with '%s logs %s --unit %s -f'; it stays, listed by '%s unit list %s', until '%s unit kill %s %s'\n",
			res.Pod, o.CommandName, o.App, res.Pod, o.CommandName, o.App, o.CommandName, o.App, res.Pod)
	}
	return nil
}
