package main

import (
	"context"
	"fmt"
	"sort"

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
	cmd.AddCommand(newEnvSetCmd(f, nil), newEnvUnsetCmd(f, nil), newEnvGetCmd(f, nil))
	return cmd
}

// envSetOptions are `tug env set` and `tug env unset`.
type envSetOptions struct {
	Changer appChanger

	App string
	// Set is what env set sets (KEY=VALUE arguments, then --from-env-file),
	// Unset the keys env unset removes.
	Set              app.ConfigMap
	Unset            []string
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
	o.rollout.add(cmd, true, &o.Changer.WaitLock)
	o.rollout.addDryRun(cmd, "")
}

func newEnvSetCmd(f *cli.Factory, runF func(context.Context, *envSetOptions) error) *cobra.Command {
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
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if err := o.rollout.validate(); err != nil {
				return err
			}
			set, err := app.ParseEnvArgs(args[1:], o.FromFile, f.IOStreams.In)
			if err != nil {
				return err
			}
			o.Set = set
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runEnvSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVar(&o.FromFile, "from-env-file", "", "Read KEY=VALUE lines from a file (- for standard input)")
	o.addFlags(cmd)
	return cmd
}

func runEnvSet(ctx context.Context, o *envSetOptions) error {
	return rollOutChange(ctx, o.Changer, o.App, deploy.EnvChange(o.Set, nil, o.Message), o.options(), o.rollout.Output, rollVerb{"config set", "setting the config of"})
}

func newEnvUnsetCmd(f *cli.Factory, runF func(context.Context, *envSetOptions) error) *cobra.Command {
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
			o.App, o.Unset = args[0], args[1:]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if err := o.rollout.validate(); err != nil {
				return err
			}
			if err := app.ValidateEnvUnset(o.Unset); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runEnvUnset(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.addFlags(cmd)
	return cmd
}

func runEnvUnset(ctx context.Context, o *envSetOptions) error {
	return rollOutChange(ctx, o.Changer, o.App, deploy.EnvChange(nil, o.Unset, o.Message), o.options(), o.rollout.Output, rollVerb{"config unset", "unsetting the config of"})
}

// EnvVar is one row of `tug env get -o json`; Value is present only with
// --show-values.
type EnvVar struct {
	Name  string  `json:"name"`
	Value *string `json:"value,omitempty"`
	// Staged says the units do not run with this: "set", "changed" or
	// "unset" by a change stored with --no-restart, which the next
	// rollout applies; omitted for a live key (deploy.StagedConfig.Key).
	Staged string `json:"staged,omitempty"`
}

// envGetOptions are `tug env get`.
type envGetOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string

	App string
	// Key is the one variable asked for, when KeyGiven.
	Key      string
	KeyGiven bool
	Show     bool
	Output   cli.OutputOptions
}

func newEnvGetCmd(f *cli.Factory, runF func(context.Context, *envGetOptions) error) *cobra.Command {
	o := &envGetOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName}
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
			o.App = args[0]
			if len(args) == 2 {
				o.Key, o.KeyGiven = args[1], true
			}
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runEnvGet(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Show, "show-values", false, "Print the values too")
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runEnvGet(ctx context.Context, o *envGetOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	staged, err := deploy.Staged(ctx, s, a)
	if err != nil {
		return err
	}
	config := staged.Next
	keys := config.Keys()
	for _, k := range staged.Live.Keys() {
		if _, ok := config[k]; !ok {
			keys = append(keys, k) // staged to be unset: the units still have it
		}
	}
	sort.Strings(keys)
	if o.KeyGiven {
		if _, ok := config[o.Key]; !ok {
			return fmt.Errorf("config %q is not set on app %q", o.Key, o.App)
		}
		keys = []string{o.Key}
		if o.Show && o.Output.Format == cli.OutputTable {
			_, err := fmt.Fprintln(o.IO.Out, config[o.Key])
			return err
		}
	}
	vars := make([]EnvVar, len(keys))
	for i, k := range keys {
		vars[i] = EnvVar{Name: k, Staged: staged.Key(k)}
		if o.Show {
			v, ok := config[k]
			if !ok {
				v = staged.Live[k]
			}
			vars[i].Value = &v
		}
	}
	if staged.Any() {
		defer fmt.Fprintln(o.IO.ErrOut, stagedNote(o.CommandName, o.App, staged))
	}
	return o.Output.Print(o.IO, vars, func() error { return printEnvVars(o, vars, staged.Any()) })
}

// stagedNote says what config is staged and what applies it, where a user
// would take it as live (env get, app restart).
func stagedNote(cmdName, appName string, s *deploy.StagedConfig) string {
	runs := "no unit runs yet"
	if s.Running > 0 {
		runs = fmt.Sprintf("the units run v%d's config without it", s.Running)
	}
	return fmt.Sprintf("config staged in v%d with --no-restart (%s): %s; the next rollout applies it ('%s app deploy %s', or 'env set'/'env unset' without --no-restart); 'app restart' does not",
		s.Release, s.Diff(), runs, cmdName, appName)
}

// printEnvVars is env get's table: the values hidden unless --show-values.
func printEnvVars(o *envGetOptions, vars []EnvVar, staged bool) error {
	if len(vars) == 0 {
		fmt.Fprintf(o.IO.ErrOut, "app %q has no config; set some with '%s env set %s KEY=VALUE'\n", o.App, o.CommandName, o.App)
		return nil
	}
	cols := []string{"name", "value"}
	if staged {
		cols = append(cols, "state")
	}
	t := cli.NewTable(cols...)
	for _, v := range vars {
		val := "(hidden: --show-values)"
		if v.Value != nil {
			val = *v.Value
		}
		row := []string{v.Name, val}
		if staged {
			state := "live"
			if v.Staged != "" {
				state = "staged: " + v.Staged
			}
			row = append(row, state)
		}
		t.AddRow(row...)
	}
	if err := t.Render(o.IO, o.Output.NoHeaders); err != nil || o.Show || !o.KeyGiven {
		return err
	}
	// The one value asked for, hidden: say how to see it.
	fmt.Fprintf(o.IO.ErrOut, "%s is set; its value is hidden: print it with '%s env get %s %s --show-values'\n", o.Key, o.CommandName, o.App, o.Key)
	return nil
}
