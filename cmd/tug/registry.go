package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/registry"
)

func newRegistryCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Set, unset and show the credentials an app pulls its image with",
		Long: `Credentials for a private registry live in a kubernetes.io/dockerconfigjson
Secret (tug-registry-APP) that every unit and one-off run pod of the app names
in imagePullSecrets. The password is read from stdin only, stored only in that
Secret, and never printed.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newRegistrySetCmd(f, nil), newRegistryUnsetCmd(f, nil), newRegistryInfoCmd(f, nil))
	return cmd
}

// registrySetOptions are `tug registry set`.
type registrySetOptions struct {
	Changer     appChanger
	CommandName string

	App string
	// Creds are the credentials to store, the password read from stdin.
	Creds         registry.Credentials
	Server        string
	Username      string
	PasswordStdin bool
	password      string // the refused --password flag
	passwordGiven bool
	rollout       rolloutFlags
}

func newRegistrySetCmd(f *cli.Factory, runF func(context.Context, *registrySetOptions) error) *cobra.Command {
	o := &registrySetOptions{CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "set APP --server HOST --username USER --password-stdin",
		Annotations: argsAre(argApp),
		Short:       "Pull the app's image with these credentials; the password comes from stdin",
		Long: `Store credentials for a private registry and make every unit pull with them.
The password (or token) is read from stdin, as 'docker login --password-stdin'
does: a password on the command line would show in shell history and process
lists. One trailing newline is dropped.

A deployed app's units are re-applied with the credentials and the rollout is
watched; an app with no release yet uses them from its first deploy. Setting
new credentials replaces the old ones.`,
		Example: `  printf '%s' "$REGISTRY_TOKEN" | tug registry set shop --server registry.example.com --username ci --password-stdin
  tug registry set shop --server ghcr.io --username octocat --password-stdin < token.txt`,
		Args: registrySetArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			o.passwordGiven = cmd.Flags().Changed("password")
			creds, err := o.complete()
			if err != nil {
				return err
			}
			o.Creds = creds
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runRegistrySet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVar(&o.Server, "server", "", "Registry host, e.g. registry.example.com or registry.example.com:5000 (required)")
	cmd.Flags().StringVar(&o.Username, "username", "", "User (or token name) to log in as (required)")
	cmd.Flags().BoolVar(&o.PasswordStdin, "password-stdin", false, "Read the password from stdin (required)")
	// Defined only to refuse it with a pointer to --password-stdin.
	cmd.Flags().StringVar(&o.password, "password", "", "")
	_ = cmd.Flags().MarkHidden("password")
	o.rollout.add(cmd, false, &o.Changer.WaitLock)
	return cmd
}

func runRegistrySet(ctx context.Context, o *registrySetOptions) error {
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	p := o.Changer.Progress()
	d.Progress = p
	p.Update("storing registry credentials for " + o.Creds.Server)
	info, res, err := registry.Set(ctx, d, o.App, o.Creds, o.rollout.options())
	if err != nil {
		p.Fail("setting the registry credentials of " + o.App)
		return err
	}
	if res != nil {
		p.Done(doneLine(res, fmt.Sprintf("units pull with %s's credentials (secret %s)", o.Creds.Server, info.Secret)))
	} else {
		p.Done(fmt.Sprintf("registry credentials for %s stored in secret %s; %s's first deploy pulls with them", o.Creds.Server, info.Secret, o.App))
	}
	return printRegistryResult(o.Changer.IO, o.rollout.Output, info)
}

// registrySetArgs takes APP alone, and never quotes an extra argument: it
// may be a password typed in the wrong place.
func registrySetArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return inputerr.Errorf("missing APP: %q takes APP --server HOST --username USER --password-stdin", cmd.CommandPath())
	case len(args) > 1:
		return inputerr.Errorf("%q takes only APP (got %d arguments); the password goes on stdin with --password-stdin", cmd.CommandPath(), len(args))
	}
	return nil
}

// complete validates the flags and reads the password from stdin. Nothing
// it returns quotes the password.
func (o *registrySetOptions) complete() (registry.Credentials, error) {
	appName, ios := o.App, o.Changer.IO
	if o.passwordGiven {
		return registry.Credentials{}, inputerr.Errorf("--password is not accepted: a password on the command line shows in shell history and process lists; pipe it in with --password-stdin")
	}
	if err := app.ValidateName(appName); err != nil {
		return registry.Credentials{}, err
	}
	c := registry.Credentials{Server: strings.TrimSpace(o.Server), Username: o.Username}
	if err := registry.ValidateServer(c.Server); err != nil {
		return registry.Credentials{}, err
	}
	if err := registry.ValidateUsername(c.Username); err != nil {
		return registry.Credentials{}, err
	}
	if !o.PasswordStdin {
		return registry.Credentials{}, inputerr.Errorf("--password-stdin is required: pipe the password in, e.g. 'printf %%s \"$TOKEN\" | %s registry set %s --server %s --username %s --password-stdin'", o.CommandName, appName, c.Server, c.Username)
	}
	if err := o.rollout.validate(); err != nil {
		return registry.Credentials{}, err
	}
	// Reading a terminal would show the password as it is typed.
	if ios.IsStdinTTY() {
		return registry.Credentials{}, inputerr.Errorf("--password-stdin reads a pipe or a file, and stdin is a terminal: pipe the password in, e.g. 'printf %%s \"$TOKEN\" | %s registry set ...'", o.CommandName)
	}
	pw, err := registry.ReadPassword(ios.In)
	if err != nil {
		return registry.Credentials{}, err
	}
	c.Password = pw
	return c, nil
}
