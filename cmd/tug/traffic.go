package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/traffic"
)

// Traffic commands: addresses (here), routable and maintenance (here),
// domains (domain.go), certificates (cert.go), allowed sources (allow.go).
// Each change is a pkg/traffic action that changes the app record and
// re-applies the deployed release; none makes a release.

// trafficOptions bound the wait after a traffic change.
var trafficOptions = deploy.Options{Timeout: 5 * time.Minute}

// changeTraffic runs a traffic action with progress and reports it.
func changeTraffic(ctx context.Context, c appChanger, appName, done string, action func(d deploy.Deps) (*deploy.Result, error)) error {
	d, err := c.Deps(ctx)
	if err != nil {
		return err
	}
	p := c.Progress()
	d.Progress = p
	res, err := action(d)
	if err != nil {
		p.Fail("changing app " + appName)
		return err
	}
	p.Done(changeDone(done, res))
	return nil
}

// changeDone is the done line of a traffic change: a change staged for the
// first deploy says so, and one the router has not confirmed it serves
// says that, never that it is served.
func changeDone(done string, res *deploy.Result) string {
	switch {
	case res.Status == app.StatusStaged:
		return done + "; it applies at the first deploy"
	case res.Routing == route.RoutingPending:
		return done + "; applied, not yet confirmed by the router"
	}
	return done
}

func checkApp(name string) error {
	if err := app.ValidateName(name); err != nil {
		return inputerr.Wrap(err)
	}
	return nil
}

// ---------------------------------------------------------------- address

// appAddressOptions are `tug app address`.
type appAddressOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App    string
	Output cli.OutputOptions
}

func newAppAddressCmd(f *cli.Factory, runF func(context.Context, *appAddressOptions) error) *cobra.Command {
	o := &appAddressOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "address APP",
		Annotations: argsAre(argApp),
		Short:       "List where the app can be reached",
		Example: `  tug app address shop
  tug app address shop -o json`,
		Long: `List the addresses of the app's web process: its Service's cluster IP and
in-cluster name, its NodePort on every node (on the nodes of its pool, when it
has one), load balancer addresses, and its domains through the Ingress.
First come its URLs: its own under the cluster's apps domain, through the
cluster's Gateway, and its domains.`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppAddress(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runAppAddress(ctx context.Context, o *appAddressOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	addrs, err := traffic.Addresses(ctx, s.Client, s.Namespace, o.App, a.Pool)
	if err != nil {
		return err
	}
	if len(addrs) > 0 { // it has a web process
		addrs = append(traffic.URLAddresses(a), addrs...)
	}
	return o.Output.Print(o.IO, addrs, func() error {
		if len(addrs) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "app %q has no web process, so no address\n", o.App)
			return nil
		}
		t := cli.NewTable("kind", "address", "note")
		for _, a := range addrs {
			t.AddRow(a.Kind, a.URL, a.Note)
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}

// ---------------------------------------------------------------- routable, maintenance

// onOffOptions are `tug app routable` and `tug app maintenance`.
type onOffOptions struct {
	Changer appChanger

	Setting traffic.Setting
	App     string
	// Word is on or off as given, On what it means.
	Word string
	On   bool
}

func newOnOffCmd(f *cli.Factory, runF func(context.Context, *onOffOptions) error, s traffic.Setting, short, long string) *cobra.Command {
	o := &onOffOptions{Setting: s}
	cmd := &cobra.Command{
		Use:         string(s) + " APP on|off",
		Annotations: argsAre(argApp, argOnOff),
		Short:       short,
		Example:     "  tug app " + string(s) + " shop off\n  tug app " + string(s) + " shop on",
		Long:        long,
		Args:        cli.ExactArgs("APP", "on|off"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Word = args[0], args[1]
			if err := checkApp(o.App); err != nil {
				return err
			}
			on, err := traffic.ParseOnOff(o.Word)
			if err != nil {
				return err
			}
			o.On = on
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runOnOff(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	return takesLock(cmd, &o.Changer.WaitLock)
}

func runOnOff(ctx context.Context, o *onOffOptions) error {
	return changeTraffic(ctx, o.Changer, o.App, fmt.Sprintf("%s %s for %s", o.Setting, o.Word, o.App), func(d deploy.Deps) (*deploy.Result, error) {
		return traffic.Set(ctx, d, o.App, o.Setting, o.On, trafficOptions)
	})
}

func newAppRoutableCmd(f *cli.Factory, runF func(context.Context, *onOffOptions) error) *cobra.Command {
	return newOnOffCmd(f, runF, traffic.Routable, "Take the app out of traffic (off) or put it back (on)",
		`Off: the app's Service (and so its domains and NodePorts) routes to nothing,
while its units keep running. On: traffic reaches the units again.`)
}

func newAppMaintenanceCmd(f *cli.Factory, runF func(context.Context, *onOffOptions) error) *cobra.Command {
	return newOnOffCmd(f, runF, traffic.Maintenance, "Answer requests with a 503 maintenance page (on) or with the app (off)",
		`On: a small maintenance backend starts and the app's Service switches to it,
so every request (through domains, NodePorts or the cluster IP) gets a 503
"down for maintenance" answer with Retry-After, whatever ingress controller
runs; the app's units keep running. Off: once every web unit is ready, the
Service switches back, and the page goes once the router serves the units;
with no web unit, or units that fail, the app stays in maintenance. The page's
image is `+render.MaintenanceImage+` (TUG_MAINTENANCE_IMAGE overrides it).`)
}
