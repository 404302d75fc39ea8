package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/service"
	"tug.dev/tug/pkg/session"
)

func newServiceCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Backing services (databases) for apps: create, bind, credentials",
		Long: `A service is a backing service an app uses, such as a PostgreSQL database,
made in the namespace from a plan ('tug service plans'): tug's own postgres
plan, or one an admin published in the cluster. Binding a service to an app
gives the app its credentials as variables (DATABASE_URL, ...) and as files
under $SERVICE_BINDING_ROOT/NAME (servicebinding.io), in a new release that
is rolled out; a rollback restores the bindings of the release it restores.
See docs/services.md.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newServicePlansCmd(f, nil), newServiceCreateCmd(f, nil), newServiceListCmd(f, nil), newServiceInfoCmd(f, nil),
		newServiceCredentialsCmd(f, nil), newServiceBindCmd(f, nil), newServiceUnbindCmd(f, nil), newServiceRemoveCmd(f, nil), newServiceRotateCmd(f, nil),
		newServiceConnectCmd(f, nil), newServiceBackupCmd(f, nil), newServiceRestoreCmd(f, nil), newServiceUpdateCmd(f, nil), newServiceBackupsCmd(f, nil))
	return cmd
}

// serviceDeps are what service commands reach the cluster with, made when
// a run asks.
func serviceDeps(ctx context.Context, f *cli.Factory) (service.Deps, error) {
	client, err := f.KubeClient()
	if err != nil {
		return service.Deps{}, err
	}
	ns, err := f.Namespace()
	if err != nil {
		return service.Deps{}, err
	}
	// a service's lock names its holder as an app's deploy lock does
	d := service.Deps{Client: client, Namespace: ns, Progress: f.Progress(), Holder: lock.Self(kube.WhoAmI(ctx, client, ""))}
	cfg, err := f.RESTConfig()
	if err != nil {
		return service.Deps{}, err
	}
	d.Exec = &session.Remote{Config: cfg, Client: client}
	d.Dynamic, err = newDynamic(cfg)
	return d, err
}

// serviceDepsFor is serviceDeps as an options constructor.
func serviceDepsFor(f *cli.Factory) func(context.Context) (service.Deps, error) {
	return func(ctx context.Context) (service.Deps, error) { return serviceDeps(ctx, f) }
}

// uriFrom is --uri's value, read from stdin's first line for "-": a URI
// in argv (it holds a password) shows in ps and in the shell's history.
func uriFrom(in io.Reader, uri string) (string, error) {
	if uri != "-" {
		return uri, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading --uri from stdin: %w", err)
	}
	if line = strings.TrimSpace(line); line == "" {
		return "", inputerr.Errorf("--uri -: stdin gave no URI")
	}
	return line, nil
}

// serviceLocked runs change under the service's lock, taken for the
// holder and --wait-lock of c (a dry run, which changes nothing, takes
// none): a bind or unbind does not run beside a rotate or remove of the
// service. The lock is taken before the app's.
func serviceLocked(ctx context.Context, c appChanger, name string, dryRun bool, change func(context.Context) error) error {
	if dryRun {
		return change(ctx)
	}
	dd, err := c.Deps(ctx)
	if err != nil {
		return err
	}
	sd := service.Deps{Client: dd.Client, Namespace: dd.Namespace, Progress: dd.Progress, Holder: dd.Holder, WaitLock: dd.WaitLock}
	ctx, unlock, err := sd.Hold(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	return change(ctx)
}

// servicesLocked is serviceLocked for several services, names sorted: two
// tugs taking the same locks take them in the same order, so neither holds
// one the other waits for while waiting for one the other holds.
func servicesLocked(ctx context.Context, c appChanger, names []string, dryRun bool, change func(context.Context) error) error {
	if len(names) == 0 {
		return change(ctx)
	}
	return serviceLocked(ctx, c, names[0], dryRun, func(ctx context.Context) error {
		return servicesLocked(ctx, c, names[1:], dryRun, change)
	})
}

// appRestarter restarts an app's units, watched like a deploy and rolled
// back on failure: how rotate and update roll bound apps onto new
// credentials (a release names the binding Secret, not its values, so a
// restart is what makes units read them again).
func appRestarter(c appChanger, p progress.Reporter, r *rolloutFlags) func(context.Context, string) error {
	return func(ctx context.Context, appName string) error {
		d, err := c.Deps(ctx)
		if err != nil {
			return err
		}
		d.Progress = p
		_, err = deploy.Reshape(ctx, d, appName, func(a *app.App) error { return a.Restart("", time.Now()) }, r.options())
		return err
	}
}
