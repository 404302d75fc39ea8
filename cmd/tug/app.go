package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/usage"
)

func newAppCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "app",
		Short:   "Create, deploy, inspect and remove apps",
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(
		newAppCreateCmd(f),
		newAppListCmd(f),
		newAppInfoCmd(f),
		newAppDeployCmd(f),
		newAppRemoveCmd(f),
		newAppExportCmd(f),
		newAppScaleCmd(f),
		newAppLifecycleCmd(f, "restart"),
		newAppLifecycleCmd(f, "stop"),
		newAppLifecycleCmd(f, "start"),
		newLimitCmd(f),
		newHealthcheckCmd(f),
		newAutoscaleCmd(f),
		newPoolSetCmd(f),
		newTagCmd(f),
		newAppAddressCmd(f),
		newAppRoutableCmd(f),
		newAppMaintenanceCmd(f),
		newAllowCmd(f),
		newAppExecCmd(f),
	)
	return cmd
}

// appStore is the namespace's app store, for commands that only read or
// write records.
func appStore(f *cli.Factory) (*app.Store, error) {
	client, err := f.KubeClient()
	if err != nil {
		return nil, err
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	return &app.Store{Client: client, Namespace: ns}, nil
}

// loadApp checks an app name, then reads the app's record: what most
// commands do first. A bad name is a usage error; a missing app says how
// to find the right one.
func loadApp(cmd *cobra.Command, f *cli.Factory, name string) (*app.Store, *app.App, error) {
	if err := app.ValidateName(name); err != nil {
		return nil, nil, usage.Wrap(err)
	}
	s, err := appStore(f)
	if err != nil {
		return nil, nil, err
	}
	a, err := s.GetApp(cmd.Context(), name)
	if err != nil {
		return nil, nil, err
	}
	return s, a, nil
}

// deployDeps is what commands that change what runs (deploy, env, rollback,
// remove) hand to pkg/deploy: the client, the namespace, progress on stderr
// and a lock holder naming the user as the API server knows them.
func deployDeps(cmd *cobra.Command, f *cli.Factory) (deploy.Deps, error) {
	client, err := f.KubeClient()
	if err != nil {
		return deploy.Deps{}, err
	}
	ns, err := f.Namespace()
	if err != nil {
		return deploy.Deps{}, err
	}
	fallback := ""
	if raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		if c, ok := raw.Contexts[raw.CurrentContext]; ok {
			fallback = c.AuthInfo
		}
	}
	user := kube.WhoAmI(cmd.Context(), client, fallback)
	return deploy.Deps{Client: client, Namespace: ns, Progress: f.Progress(), Holder: kube.Holder(user)}, nil
}

// ---------------------------------------------------------------- create

type appCreateOptions struct {
	app.CreateOptions
	Output cli.OutputOptions
}

func newAppCreateCmd(f *cli.Factory) *cobra.Command {
	o := &appCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an app",
		Long: `Create an app in the namespace. Nothing runs until its first deploy.

Names are lower-case letters, digits and '-', at most 30 characters, so that
every object derived from them stays valid.`,
		Example: `  tug app create shop
  tug app create shop --pool gpu --team payments --description "the web shop"`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := app.ValidateName(o.Name); err != nil {
				return usage.Wrap(err)
			}
			if o.Pool != "" {
				if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
					return usage.Wrap(err)
				}
				// The app lives in its pool's cluster (see 'tug cluster').
				if err := routeToPool(f, o.Pool); err != nil {
					return err
				}
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			a, err := app.Create(cmd.Context(), s, o.CreateOptions)
			if err != nil {
				return err
			}
			return o.Output.Print(f.IOStreams, a, func() error {
				_, err := fmt.Fprintf(f.IOStreams.Out, "app %q created in namespace %q; deploy it with '%s app deploy %s --image IMAGE'\n", a.Name, a.Namespace, f.CommandName, a.Name)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Pool whose nodes run the app's units")
	cmd.Flags().StringVar(&o.Description, "description", "", "What the app is")
	cmd.Flags().StringVar(&o.Team, "team", "", "Team that owns the app")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

// ---------------------------------------------------------------- list

func newAppListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the apps in the namespace",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := appStore(f)
			if err != nil {
				return err
			}
			apps, err := app.List(cmd.Context(), s)
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, apps, func() error {
				if len(apps) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "no apps in namespace %q; create one with '%s app create NAME'\n", s.Namespace, f.CommandName)
					return nil
				}
				t := cli.NewTable("name", "release", "units", "image", "age")
				for _, a := range apps {
					t.AddRow(a.Name, releaseCell(a.Release), unitsCell(a.Processes), a.Image, age(a.CreatedAt))
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

func releaseCell(v int) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("v%d", v)
}

// unitsCell is "web 2/2, worker 1/1": ready of desired per process.
func unitsCell(procs []app.ProcessSummary) string {
	if len(procs) == 0 {
		return "-"
	}
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = fmt.Sprintf("%s %d/%d", p.Name, p.Ready, p.Desired)
		if p.Stopped {
			parts[i] = p.Name + " stopped"
		}
	}
	return strings.Join(parts, ", ")
}

func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// ---------------------------------------------------------------- info

func newAppInfoCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:   "info APP",
		Short: "Show an app: processes and units, release, image, addresses, config",
		Args:  cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			info, err := app.GetInfo(cmd.Context(), s, args[0])
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, info, func() error { return printAppInfo(f.IOStreams, info) })
		},
	}
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func printAppInfo(ios *cli.IOStreams, in *app.Info) error {
	w := ios.Out
	fmt.Fprintf(w, "App:        %s\n", in.Name)
	fmt.Fprintf(w, "Namespace:  %s\n", in.Namespace)
	if in.Description != "" {
		fmt.Fprintf(w, "About:      %s\n", in.Description)
	}
	if in.Team != "" {
		fmt.Fprintf(w, "Team:       %s\n", in.Team)
	}
	if in.Pool != "" {
		fmt.Fprintf(w, "Pool:       %s\n", in.Pool)
	}
	fmt.Fprintf(w, "Release:    %s\n", releaseCell(in.Release))
	if in.Image != "" {
		fmt.Fprintf(w, "Image:      %s\n", in.Image)
	}
	printBuildSettings(w, in.Build)
	fmt.Fprintf(w, "Config:     %d %s (values: tug env get %s --show-values)\n", in.ConfigKeys, pluralWord(in.ConfigKeys, "key", "keys"), in.Name)
	if len(in.Addresses) > 0 {
		fmt.Fprintf(w, "Addresses:  %s\n", strings.Join(in.Addresses, ", "))
	}
	if len(in.Domains) > 0 {
		fmt.Fprintf(w, "Domains:    %s\n", strings.Join(in.Domains, ", "))
	}
	switch {
	case in.Maintenance:
		fmt.Fprintln(w, "Traffic:    maintenance: requests get a 503 page (tug app maintenance APP off)")
	case !in.Routable:
		fmt.Fprintln(w, "Traffic:    not routable: no requests reach the units (tug app routable APP on)")
	}
	if len(in.Allow) > 0 {
		fmt.Fprintf(w, "Allowed:    %s\n", strings.Join(in.Allow, ", "))
	}
	if lc := in.LastChange; lc != nil {
		line := fmt.Sprintf("v%d %s, %s by %s, %s ago", lc.Version, lc.Kind, lc.Status, lc.Author, age(lc.CreatedAt))
		if lc.FailReason != "" {
			line += ": " + lc.FailReason
		}
		fmt.Fprintf(w, "Last change: %s\n", line)
	}
	if len(in.Processes) == 0 {
		fmt.Fprintln(w, "\nNo processes yet: deploy an image.")
		return nil
	}
	fmt.Fprintln(w)
	t := cli.NewTable("process", "units", "ready", "command")
	for _, p := range in.Processes {
		cmd := p.Command
		if cmd == "" {
			cmd = "(image default)"
		}
		units := fmt.Sprint(p.Desired)
		switch {
		case p.Stopped:
			units = fmt.Sprintf("stopped (%d when started)", p.Replicas)
		case p.Autoscale != nil:
			units = fmt.Sprintf("%d (autoscale %d-%d)", p.Desired, p.Autoscale.Min, p.Autoscale.Max)
		}
		t.AddRow(p.Name, units, fmt.Sprint(p.Ready), cmd)
	}
	return t.Render(ios, false)
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ---------------------------------------------------------------- remove

func newAppRemoveCmd(f *cli.Factory) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "remove APP",
		Aliases: []string{"rm", "delete"},
		Short:   "Remove an app and everything it runs",
		Long: `Remove an app: its units, Deployments, Service, release history and config.
Waits until its units are gone. Asks first on a terminal; elsewhere needs --yes.`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := app.ValidateName(name); err != nil {
				return usage.Wrap(err)
			}
			d, err := deployDeps(cmd, f)
			if err != nil {
				return err
			}
			// fail on a missing app before asking about it
			if _, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(cmd.Context(), name); err != nil {
				return err
			}
			if err := cli.ConfirmOrFlag(cmd.Context(), f.IOStreams, f.Prompter(), yes, cli.Confirmation{
				Action: fmt.Sprintf("remove app %q and all its units, releases and config", name),
			}); err != nil {
				return err
			}
			p := f.Progress()
			d.Progress = p
			if err := deploy.Remove(cmd.Context(), d, name); err != nil {
				p.Fail("removing app " + name)
				return err
			}
			p.Done(fmt.Sprintf("app %q removed", name))
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Remove without asking")
	return cmd
}

// ---------------------------------------------------------------- export

func newAppExportCmd(f *cli.Factory) *cobra.Command {
	var includeConfig bool
	format := cli.OutputYAML
	cmd := &cobra.Command{
		Use:   "export APP",
		Short: "Print the app's deployed release as plain Kubernetes manifests",
		Long: `Print the objects that run the app's deployed release as manifests that
'kubectl apply' accepts without tug: no lock-in. They carry no namespace, so
'kubectl apply -n NS -f -' puts them anywhere.

Config values are left out unless --include-config; the Deployments then
treat the config Secret as optional, and run without it until it is copied.`,
		Example: `  tug app export shop | kubectl apply -n staging -f -
  tug app export shop --include-config -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			objs, err := deploy.Export(cmd.Context(), s, args[0], includeConfig)
			if err != nil {
				return err
			}
			if format == cli.OutputJSON {
				return cli.WriteJSON(f.IOStreams, map[string]any{"apiVersion": "v1", "kind": "List", "items": objs})
			}
			for i, o := range objs {
				if i > 0 {
					fmt.Fprintln(f.IOStreams.Out, "---")
				}
				if err := cli.WriteYAML(f.IOStreams, o); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&includeConfig, "include-config", false, "Include the config Secret, with its values")
	cli.AddFormatFlag(cmd, &format)
	return cmd
}

// readFileArg reads a file named on the command line, saying which flag named it.
func readFileArg(flag, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usage.Errorf("%s %s: %w", flag, path, err)
	}
	return b, nil
}
