package main

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/canary"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lifecycle"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/text"
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
		newAppEventsCmd(f),
		newAppDeployCmd(f),
		newAppRemoveCmd(f),
		newAppExportCmd(f),
		newAppScaleCmd(f),
		newAppLifecycleCmd(f, "restart"),
		newAppLifecycleCmd(f, "stop"),
		newAppLifecycleCmd(f, "start"),
		newLimitCmd(f),
		newHealthcheckCmd(f),
		newAppSettingsCmd(f),
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
	s, err := namedAppStore(f, name)
	if err != nil {
		return nil, nil, err
	}
	a, err := s.GetApp(cmd.Context(), name)
	if err != nil {
		return nil, nil, err
	}
	return s, a, nil
}

// namedAppStore checks an app name, then makes the store to read it from:
// a bad name is a usage error before any kubeconfig is read.
func namedAppStore(f *cli.Factory, name string) (*app.Store, error) {
	if err := app.ValidateName(name); err != nil {
		return nil, err
	}
	return appStore(f)
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
	d := deploy.Deps{Client: client, Namespace: ns, Progress: f.Progress(), Holder: lock.Self(user),
		MaintenanceImage: os.Getenv("TUG_MAINTENANCE_IMAGE"), Warn: warnOnce(f.IOStreams), Gateways: &route.Finder{},
		SideBySide: canary.Runner{}}
	if f.Verbosity > 0 {
		d.Note = sayOnce(f.IOStreams, "note: ")
	}
	// what the cluster offers its apps (its Gateway, apps domain), read
	// from the cluster itself, and the client for the Gateway API
	if d.Settings, err = clustersettings.Read(cmd.Context(), client); err != nil {
		return deploy.Deps{}, err
	}
	if cfg, err := f.RESTConfig(); err == nil {
		if d.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
			return deploy.Deps{}, err
		}
	}
	if cmd.Flags().Lookup("wait-lock") != nil {
		if d.WaitLock, err = cmd.Flags().GetDuration("wait-lock"); err != nil {
			return deploy.Deps{}, err
		}
		if d.WaitLock < 0 {
			return deploy.Deps{}, inputerr.Errorf("--wait-lock must not be negative, not %s", d.WaitLock)
		}
	}
	return d, nil
}

// warnOnce prints each warning a change gives once per command on stderr
// (a rollout and its restore render the same objects twice), on a line of
// its own: a spinner's line is erased first and redrawn below it.
func warnOnce(ios *cli.IOStreams) func(string) { return sayOnce(ios, "warning: ") }

// sayOnce is warnOnce with another prefix.
func sayOnce(ios *cli.IOStreams, prefix string) func(string) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if seen[msg] {
			return
		}
		seen[msg] = true
		erase := ""
		if ios.IsStderrTTY() {
			erase = "\r\x1b[K"
		}
		fmt.Fprintf(ios.ErrOut, "%s%s%s\n", erase, prefix, text.Sanitize(text.OneLine(msg)))
	}
}

// ---------------------------------------------------------------- create

type appCreateOptions struct {
	lifecycle.CreateOptions
	Output cli.OutputOptions
}

func newAppCreateCmd(f *cli.Factory) *cobra.Command {
	o := &appCreateOptions{}
	cmd := &cobra.Command{
		Use:         "create NAME",
		Annotations: argsAre(argNewName),
		Short:       "Create an app",
		Long: `Create an app in the namespace. Nothing runs until its first deploy.

Names are lower-case letters, digits and '-', at most 30 characters, so that
every object derived from them stays valid.`,
		Example: `  tug app create shop
  tug app create shop --pool gpu --team payments --description "the web shop"`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := app.ValidateName(o.Name); err != nil {
				return err
			}
			if o.Pool != "" {
				if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
					return inputerr.Wrap(err)
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
			a, err := lifecycle.Create(cmd.Context(), s, o.CreateOptions)
			if err != nil {
				return err
			}
			return o.Output.Print(f.IOStreams, a, func() error {
				_, err := fmt.Fprintf(f.IOStreams.Out, "app %q created in namespace %q; deploy it from its source folder with '%s app deploy %s --builder IMAGE --repository REPO', or an image with '--image IMAGE'\n", a.Name, a.Namespace, f.CommandName, a.Name)
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
		Example: `  tug app list
  tug app list -n staging -o name`,
		Args: cli.NoArgs,
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
					units := unitsCell(a.Processes)
					if a.Failed != nil && len(a.Processes) == 0 {
						units = fmt.Sprintf("none (v%d %s)", a.Failed.Version, a.Failed.Status)
					}
					t.AddRow(a.Name, releaseCell(a.Release), units, a.Image, text.Age(a.CreatedAt))
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
