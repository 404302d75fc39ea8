package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

func newEnvCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Set, unset and show an app's config (environment variables)",
		Long: `An app's config is its environment variables. Values live in a Secret per
release and reach units through envFrom: they never appear in a Deployment, in
'app info', in exported manifests or in logs. Every change is a new release,
rolled out like a deploy, unless --no-restart. --dry-run shows what a change
would do (the config names it adds, changes and removes, never their values,
and the units that would restart) and changes nothing.

A config change runs the release phase (the release: command of the deployed
code's Procfile) with the new config before any unit gets it, as a deploy
does; when it exits non-zero the change stops with exit code 17, the units
keep the old config and the new release is marked failed.
--skip-release-phase skips it.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newEnvSetCmd(f), newEnvUnsetCmd(f), newEnvGetCmd(f))
	return cmd
}

type envSetOptions struct {
	FromFile         string
	NoRestart        bool
	Message          string
	SkipReleasePhase bool
	rollout          rolloutFlags
}

func (o *envSetOptions) options() deploy.Options {
	opts := o.rollout.options()
	opts.NoRestart = o.NoRestart
	opts.SkipReleasePhase = o.SkipReleasePhase
	return opts
}

func (o *envSetOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.NoRestart, "no-restart", false, "Store the change; it applies at the next deploy")
	cmd.Flags().StringVarP(&o.Message, "message", "m", "", "Why this change, shown in the release history")
	cmd.Flags().BoolVar(&o.SkipReleasePhase, "skip-release-phase", false, "Roll out without running the release: command")
	o.rollout.add(cmd, true)
	o.rollout.addDryRun(cmd, "")
}

func newEnvSetCmd(f *cli.Factory) *cobra.Command {
	o := &envSetOptions{}
	cmd := &cobra.Command{
		Use:         "set APP KEY=VALUE...",
		Annotations: argsAre(argApp),
		Short:       "Set config variables: a new release, rolled out",
		Long: `Set config variables. KEY=@FILE reads the value from a file and KEY=@- from
standard input, and --from-env-file reads KEY=VALUE lines (- for standard
input), so secrets stay out of shell history.

TUG_APP, TUG_PROCESS and TUG_RELEASE are set by tug and refused here. PORT
may be set: it is the port the web process listens on (default 8080), and
the container port, readiness check and Service follow it; it must be a
number from 1 to 65535.

The release phase (the deployed code's release: command) runs first with the
new config; when it exits non-zero nothing changes for the units (exit 17).

--dry-run asks the API server to validate the new release and its objects,
then lists what would change ("env: +DB_URL, ~TOKEN (values hidden)", "web:
3 units restart") and stores nothing; with --no-restart, or before the first
deploy, it says the release would be stored for the next deploy.`,
		Example: `  tug env set shop LOG_LEVEL=debug
  tug env set shop TLS_KEY=@key.pem
  vault read -field=url db | tug env set shop DATABASE_URL=@-
  tug env set shop --from-env-file prod.env --no-restart
  tug env set shop LOG_LEVEL=debug --dry-run`,
		Args: cli.Args("APP", "[KEY=VALUE...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := app.ValidateName(name); err != nil {
				return err
			}
			if err := o.rollout.validate(); err != nil {
				return err
			}
			set, err := app.ParseEnvArgs(args[1:], o.FromFile, f.IOStreams.In)
			if err != nil {
				return err
			}
			return roll(cmd.Context(), changerFor(cmd, f), name, deploy.EnvChange(set, nil, o.Message), o.options(), o.rollout.Output, rollVerb{"config set", "setting the config of"})
		},
	}
	cmd.Flags().StringVar(&o.FromFile, "from-env-file", "", "Read KEY=VALUE lines from a file (- for standard input)")
	o.addFlags(cmd)
	return cmd
}

func newEnvUnsetCmd(f *cli.Factory) *cobra.Command {
	o := &envSetOptions{}
	cmd := &cobra.Command{
		Use:         "unset APP KEY...",
		Annotations: deleting(argApp),
		Short:       "Remove config variables: a new release, rolled out",
		Long: `Remove config variables: a new release without them, rolled out like a
deploy, unless --no-restart. --dry-run lists what would change and changes
nothing.`,
		Example: `  tug env unset shop LOG_LEVEL DEBUG
  tug env unset shop DEBUG --dry-run`,
		Args: cli.Args("APP", "KEY..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := app.ValidateName(name); err != nil {
				return err
			}
			if err := o.rollout.validate(); err != nil {
				return err
			}
			if err := app.ValidateEnvUnset(args[1:]); err != nil {
				return err
			}
			return roll(cmd.Context(), changerFor(cmd, f), name, deploy.EnvChange(nil, args[1:], o.Message), o.options(), o.rollout.Output, rollVerb{"config unset", "unsetting the config of"})
		},
	}
	o.addFlags(cmd)
	return cmd
}

// EnvVar is one row of `tug env get -o json`; Value is present only with
// --show-values.
type EnvVar struct {
	Name  string  `json:"name"`
	Value *string `json:"value,omitempty"`
}

func newEnvGetCmd(f *cli.Factory) *cobra.Command {
	var show bool
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:         "get APP [KEY]",
		Annotations: argsAre(argApp, argKey),
		Short:       "Show an app's config names (values with --show-values)",
		Long: `Show the names of an app's config variables. Values are printed only with
--show-values; with a KEY and --show-values, just that value is printed, for
scripts. A KEY without --show-values is listed with its value hidden, and
standard error says how to print it.`,
		Example: `  tug env get shop
  tug env get shop DATABASE_URL --show-values`,
		Args: cli.Args("APP", "[KEY]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			s, a, err := loadApp(cmd, f, name)
			if err != nil {
				return err
			}
			_, config, err := deploy.BaseRelease(cmd.Context(), s, a)
			if err != nil {
				return err
			}
			keys := config.Keys()
			if len(args) == 2 {
				if _, ok := config[args[1]]; !ok {
					return fmt.Errorf("config %q is not set on app %q", args[1], name)
				}
				keys = []string{args[1]}
				if show && o.Format == cli.OutputTable {
					_, err := fmt.Fprintln(f.IOStreams.Out, config[args[1]])
					return err
				}
			}
			vars := make([]EnvVar, len(keys))
			for i, k := range keys {
				vars[i] = EnvVar{Name: k}
				if show {
					v := config[k]
					vars[i].Value = &v
				}
			}
			return o.Print(f.IOStreams, vars, func() error {
				if len(vars) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "app %q has no config; set some with '%s env set %s KEY=VALUE'\n", name, f.CommandName, name)
					return nil
				}
				t := cli.NewTable("name", "value")
				for _, v := range vars {
					val := "(hidden: --show-values)"
					if v.Value != nil {
						val = *v.Value
					}
					t.AddRow(v.Name, val)
				}
				if err := t.Render(f.IOStreams, o.NoHeaders); err != nil || show || len(args) < 2 {
					return err
				}
				// The one value asked for, hidden: say how to see it.
				fmt.Fprintf(f.IOStreams.ErrOut, "%s is set; its value is hidden: print it with '%s env get %s %s --show-values'\n", args[1], f.CommandName, name, args[1])
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&show, "show-values", false, "Print the values too")
	cli.AddOutputFlags(cmd, o)
	return cmd
}
