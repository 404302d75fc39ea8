package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/canary"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
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
		newAppCreateCmd(f, nil),
		newAppListCmd(f, nil),
		newAppInfoCmd(f, nil),
		newAppEventsCmd(f, nil),
		newAppDeployCmd(f, nil),
		newAppRemoveCmd(f, nil),
		newAppExportCmd(f, nil),
		newAppScaleCmd(f, nil),
		newAppLifecycleCmd(f, nil, "restart"),
		newAppLifecycleCmd(f, nil, "stop"),
		newAppLifecycleCmd(f, nil, "start"),
		newLimitCmd(f),
		newHealthcheckCmd(f),
		newAppSettingsCmd(f),
		newAutoscaleCmd(f),
		newAppPoolCmd(f),
		newTagCmd(f),
		newAppAddressCmd(f, nil),
		newAppRoutableCmd(f, nil),
		newAppMaintenanceCmd(f, nil),
		newAllowCmd(f),
		newAppExecCmd(f, nil),
		newAppPromoteCmd(f, nil),
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

// storeFor is appStore as a constructor for a command's options: the
// store is made when the run asks, on the cluster routing picked.
func storeFor(f *cli.Factory) func() (*app.Store, error) {
	return func() (*app.Store, error) { return appStore(f) }
}

// deployDeps is what commands that change what runs (deploy, env, rollback,
// remove) hand to pkg/deploy: the client, the namespace, progress on stderr
// and a lock holder naming the user as the API server knows them.
func deployDeps(ctx context.Context, f *cli.Factory) (deploy.Deps, error) {
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
	user := kube.WhoAmI(ctx, client, fallback)
	d := deploy.Deps{Client: client, Namespace: ns, Progress: f.Progress(), Holder: lock.Self(user),
		MaintenanceImage: os.Getenv("TUG_MAINTENANCE_IMAGE"), Warn: warnOnce(f.IOStreams), Gateways: &route.Finder{},
		SideBySide: canary.Runner{}}
	if f.Verbosity > 0 {
		d.Note = sayOnce(f.IOStreams, "note: ")
	}
	// what the cluster offers its apps (its Gateway, apps domain), read
	// from the cluster itself, and the client for the Gateway API
	if d.Settings, err = clustersettings.Read(ctx, client); err != nil {
		return deploy.Deps{}, err
	}
	if cfg, err := f.RESTConfig(); err == nil {
		if d.Dynamic, err = newDynamic(cfg); err != nil {
			return deploy.Deps{}, err
		}
	}
	return d, nil
}

// newDynamic makes the Gateway API's client (a test's fake in tests that
// route without a cluster).
var newDynamic = func(cfg *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(cfg) }

// appChanger is how a command's run reaches pkg/deploy: the streams its
// result goes to, and the deploy dependencies and progress reporter, made
// when the run asks for them (after routing picked the app's cluster).
// Tests replace NewDeps.
type appChanger struct {
	IO *cli.IOStreams
	// WaitLock is --wait-lock (takesLock binds it): how long the change
	// waits for the app's lock (deploy.Deps.WaitLock).
	WaitLock time.Duration
	NewDeps  func(context.Context) (deploy.Deps, error)
	Progress func() progress.Reporter
}

// Deps are the deploy dependencies of the change, waiting WaitLock for
// the app's lock.
func (c appChanger) Deps(ctx context.Context) (deploy.Deps, error) {
	d, err := c.NewDeps(ctx)
	if err != nil {
		return deploy.Deps{}, err
	}
	d.WaitLock = c.WaitLock
	return d, nil
}

// changerFor is the appChanger of a command that changes an app through f.
func changerFor(f *cli.Factory) appChanger {
	return appChanger{IO: f.IOStreams, Progress: f.Progress, NewDeps: func(ctx context.Context) (deploy.Deps, error) {
		return deployDeps(ctx, f)
	}}
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
