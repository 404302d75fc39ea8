package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
)

// execDeps is what the remote commands (run, shell, app exec) hand to
// pkg/session. Asking the API server who the user is starts at once and is
// waited for only when an audit event or a run pod needs the answer.
func execDeps(ctx context.Context, f *cli.Factory) (session.Deps, error) {
	proto, err := session.ParseProtocol(os.Getenv(session.ProtocolEnv))
	if err != nil {
		return session.Deps{}, inputerr.Wrap(err)
	}
	client, err := f.KubeClient()
	if err != nil {
		return session.Deps{}, err
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		return session.Deps{}, err
	}
	ns, err := f.Namespace()
	if err != nil {
		return session.Deps{}, err
	}
	fallback := ""
	if raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		if c, ok := raw.Contexts[raw.CurrentContext]; ok {
			fallback = c.AuthInfo
		}
	}
	user := sync.OnceValue(func() string { return kube.WhoAmI(ctx, client, fallback) })
	go user()
	return session.Deps{
		Client:      client,
		Namespace:   ns,
		Executor:    &session.Remote{Config: cfg, Client: client, Protocol: proto},
		IO:          f.IOStreams,
		Prompter:    f.Prompter(),
		Progress:    f.Progress(),
		User:        user,
		CommandName: f.CommandName,
	}, nil
}

// sessionFor is execDeps as a constructor for a command's options: the
// dependencies are made when the run asks, on the cluster routing picked.
func sessionFor(f *cli.Factory) func(context.Context) (session.Deps, error) {
	return func(ctx context.Context) (session.Deps, error) { return execDeps(ctx, f) }
}

// commandArgs checks `APP -- COMMAND [ARGS...]`: the command must come
// after "--", so that its own flags are never taken for tug's.
func commandArgs(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	synopsis := fmt.Sprintf("%s APP -- COMMAND [ARGS...]", cmd.CommandPath())
	switch {
	case len(args) == 0 || dash == 0:
		return inputerr.Errorf("missing APP: %s", synopsis)
	case dash < 0 && len(args) == 1:
		return inputerr.Errorf("missing command: put it after '--': %s", synopsis)
	case dash < 0:
		return inputerr.Errorf("put the command after '--': %s %s -- %s", cmd.CommandPath(), args[0], strings.Join(args[1:], " "))
	case dash > 1:
		return inputerr.Errorf("unexpected argument %q before '--': %s", args[1], synopsis)
	case len(args) == dash:
		return inputerr.Errorf("no command after '--': %s", synopsis)
	}
	if err := app.ValidateName(args[0]); err != nil {
		return inputerr.Wrap(err)
	}
	return nil
}

// validateProcess checks -p before anything is sent.
func validateProcess(proc string) error {
	if proc == "" {
		return nil
	}
	if err := app.ValidateProcessName(proc); err != nil {
		return inputerr.Wrap(err)
	}
	return nil
}

// parseRunEnv reads --env KEY=VALUE flags; a bare KEY takes the value of
// the variable in tug's own environment, so a secret need not be typed on
// the command line.
func parseRunEnv(flags []string, getenv func(string) (string, bool)) (app.ConfigMap, error) {
	env := app.ConfigMap{}
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if err := app.ValidateEnvName(k); err != nil {
			return nil, inputerr.Errorf("--env %s: %w", k, err)
		}
		if !ok {
			if v, ok = getenv(k); !ok {
				return nil, inputerr.Errorf("--env %s: %s is not set in this environment; give a value with --env %s=VALUE", k, k, k)
			}
		}
		env[k] = v
	}
	return env, nil
}

var lookupEnv = os.LookupEnv

// appAndOptionalArg accepts APP and, optionally, one more argument.
func appAndOptionalArg(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return inputerr.Errorf("missing APP: %q takes APP [%s]", cmd.CommandPath(), name)
		case len(args) > 2:
			return inputerr.Errorf("unexpected argument %q: %q takes APP [%s]", args[2], cmd.CommandPath(), name)
		}
		return nil
	}
}

// commandFlagErrors makes an unknown flag on a command that runs another
// command say where that command's own flags go: `tug run shop ls -l`
// fails on -l.
func commandFlagErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		var notExist *pflag.NotExistError
		if errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "" && isTugFlag(c.Root(), notExist.GetSpecifiedName()) {
			// a flag of tug's (job add --dry-run), not of the command:
			// it is this command that lacks it, whatever follows
			return cli.FlagErrorFunc(c, fmt.Errorf("%s has no --%s flag", c.CommandPath(), notExist.GetSpecifiedName()))
		}
		err = cli.FlagErrorFunc(c, err)
		if strings.Contains(err.Error(), "unknown") {
			return inputerr.Errorf("%v; the command and its own flags go after '--': %s APP -- COMMAND [ARGS...]", err, c.CommandPath())
		}
		return err
	})
}

// isTugFlag reports whether some tug command has the long flag name.
func isTugFlag(root *cobra.Command, name string) bool {
	found := false
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup(name) != nil || c.PersistentFlags().Lookup(name) != nil {
			found = true
		}
		for _, sub := range c.Commands() {
			if !found {
				walk(sub)
			}
		}
	}
	walk(root)
	return found
}
