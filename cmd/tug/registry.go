package main

import (
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
	cmd.AddCommand(newRegistrySetCmd(f), newRegistryUnsetCmd(f), newRegistryInfoCmd(f))
	return cmd
}

type registrySetOptions struct {
	Server        string
	Username      string
	PasswordStdin bool
	password      string // the refused --password flag
	passwordGiven bool
	rollout       rolloutFlags
}

func newRegistrySetCmd(f *cli.Factory) *cobra.Command {
	o := &registrySetOptions{}
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
			o.passwordGiven = cmd.Flags().Changed("password")
			creds, err := o.complete(f, args[0])
			if err != nil {
				return err
			}
			d, err := deployDeps(cmd.Context(), f, cmd.Flags())
			if err != nil {
				return err
			}
			p := f.Progress()
			d.Progress = p
			p.Update("storing registry credentials for " + creds.Server)
			info, res, err := registry.Set(cmd.Context(), d, args[0], creds, o.rollout.options())
			if err != nil {
				p.Fail("setting the registry credentials of " + args[0])
				return err
			}
			if res != nil {
				p.Done(doneLine(res, fmt.Sprintf("units pull with %s's credentials (secret %s)", creds.Server, info.Secret)))
			} else {
				p.Done(fmt.Sprintf("registry credentials for %s stored in secret %s; %s's first deploy pulls with them", creds.Server, info.Secret, args[0]))
			}
			return printRegistryResult(f, o.rollout.Output, info)
		},
	}
	cmd.Flags().StringVar(&o.Server, "server", "", "Registry host, e.g. registry.example.com or registry.example.com:5000 (required)")
	cmd.Flags().StringVar(&o.Username, "username", "", "User (or token name) to log in as (required)")
	cmd.Flags().BoolVar(&o.PasswordStdin, "password-stdin", false, "Read the password from stdin (required)")
	// Defined only to refuse it with a pointer to --password-stdin.
	cmd.Flags().StringVar(&o.password, "password", "", "")
	_ = cmd.Flags().MarkHidden("password")
	o.rollout.add(cmd, false)
	return cmd
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
func (o *registrySetOptions) complete(f *cli.Factory, appName string) (registry.Credentials, error) {
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
		return registry.Credentials{}, inputerr.Errorf("--password-stdin is required: pipe the password in, e.g. 'printf %%s \"$TOKEN\" | %s registry set %s --server %s --username %s --password-stdin'", f.CommandName, appName, c.Server, c.Username)
	}
	if err := o.rollout.validate(); err != nil {
		return registry.Credentials{}, err
	}
	// Reading a terminal would show the password as it is typed.
	if f.IOStreams.IsStdinTTY() {
		return registry.Credentials{}, inputerr.Errorf("--password-stdin reads a pipe or a file, and stdin is a terminal: pipe the password in, e.g. 'printf %%s \"$TOKEN\" | %s registry set ...'", f.CommandName)
	}
	pw, err := registry.ReadPassword(f.IOStreams.In)
	if err != nil {
		return registry.Credentials{}, err
	}
	c.Password = pw
	return c, nil
}

func newRegistryUnsetCmd(f *cli.Factory) *cobra.Command {
	r := &rolloutFlags{}
	cmd := &cobra.Command{
		Use:         "unset APP",
		Annotations: deleting(argApp),
		Short:       "Pull the app's image without credentials again, and delete them",
		Example:     `  tug registry unset shop`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			if err := r.validate(); err != nil {
				return err
			}
			d, err := deployDeps(cmd.Context(), f, cmd.Flags())
			if err != nil {
				return err
			}
			p := f.Progress()
			d.Progress = p
			res, err := registry.Unset(cmd.Context(), d, args[0], r.options())
			if err != nil {
				p.Fail("unsetting the registry credentials of " + args[0])
				return err
			}
			if res != nil {
				p.Done(doneLine(res, "registry credentials removed"))
			} else {
				p.Done(fmt.Sprintf("registry credentials of %s removed", args[0]))
			}
			return printRegistryResult(f, r.Output, &registry.Info{App: args[0], Namespace: d.Namespace, Units: []registry.Unit{}})
		},
	}
	r.add(cmd, false)
	return cmd
}

// printRegistryResult prints the credentials' state after set or unset for
// -o json|yaml; the human form is the progress line.
func printRegistryResult(f *cli.Factory, format cli.OutputFormat, info *registry.Info) error {
	if format == cli.OutputTable {
		return nil
	}
	return cli.OutputOptions{Format: format}.Print(f.IOStreams, info, nil)
}

func newRegistryInfoCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "info APP",
		Annotations: argsAre(argApp),
		Short:       "Show the registry server and user an app pulls with, and which units do",
		Example:     `  tug registry info shop`,
		Long:        "Show the registry credentials of an app: server, user, Secret and the units that pull with it. The password is never shown.",
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			info, err := registry.Get(cmd.Context(), s.Client, s.Namespace, args[0])
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, info, func() error { return printRegistryInfo(f, info) })
		},
	}
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func printRegistryInfo(f *cli.Factory, in *registry.Info) error {
	w := f.IOStreams.Out
	if in.Secret == "" {
		_, err := fmt.Fprintf(w, "app %s pulls its image without credentials; set some with '%s registry set %s --server HOST --username USER --password-stdin'\n", in.App, f.CommandName, in.App)
		return err
	}
	fmt.Fprintf(w, "App:       %s\n", in.App)
	fmt.Fprintf(w, "Server:    %s\n", dash(in.Server))
	fmt.Fprintf(w, "Username:  %s\n", dash(in.Username))
	fmt.Fprintf(w, "Secret:    %s\n", in.Secret)
	units := make([]string, 0, len(in.Units))
	for _, u := range in.Units {
		if u.Process == "" {
			units = append(units, u.Name+" (run)")
		} else {
			units = append(units, u.Name+" ("+u.Process+")")
		}
	}
	if len(units) == 0 {
		units = append(units, "none running")
	}
	_, err := fmt.Fprintf(w, "Units:     %s\n", strings.Join(units, ", "))
	return err
}
