package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/events"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// appEventsOptions are `tug app events`'s.
type appEventsOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	events.Options
	follow bool
	out    cli.OutputOptions
}

func newAppEventsCmd(f *cli.Factory, runF func(context.Context, *appEventsOptions) error) *cobra.Command {
	o := &appEventsOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "events APP",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Short:       "Show what happened to an app: its objects' events and tug's records, oldest first",
		Long: `Show what happened to an app, oldest first: the Kubernetes Events of its
objects (units, Deployments and ReplicaSets, the autoscaler, the Service and
routes, one-off runs) merged with tug's own records: its releases (deploys,
config changes, rollbacks, with their author and how they ended) and what
its units' status tells (a crash's exit code, an OOM kill past the memory
limit, an eviction).

History is short: Kubernetes keeps Events for an hour by default (the API
server's --event-ttl) and a unit only its containers' last exit.

-f keeps printing new events as they happen until Ctrl-C.`,
		Example: `  tug app events shop
  tug app events shop --since 10m
  tug app events shop -f
  tug app events shop -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Since < 0 {
				return inputerr.Errorf("--since must be positive, got %s", o.Since)
			}
			if o.follow && o.out.Format != "" && o.out.Format != cli.OutputTable && o.out.Format != cli.OutputJSON {
				return inputerr.Errorf("-f prints a table or JSON lines (-o json), not %s", o.out.Format)
			}
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppEvents(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "Keep printing new events")
	cmd.Flags().DurationVar(&o.Since, "since", 0, "Only events of the last duration (10m, 2h)")
	cli.AddOutputFlags(cmd, &o.out)
	return cmd
}

// runAppEvents lists the app's events, then prints them as a table or,
// following, as lines while new ones come.
func runAppEvents(ctx context.Context, o *appEventsOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	evs, err := listAppEvents(ctx, o, s)
	if err != nil {
		return err
	}
	if !o.follow {
		return printAppEvents(o, evs)
	}
	return followAppEvents(ctx, o, s, evs)
}

// listAppEvents lists the app's events so far, with its release records
// to say which release each belongs to. It settles the options the events
// are chosen by: the app's name as stored, its processes, and the apps
// whose objects could pass for its own.
func listAppEvents(ctx context.Context, o *appEventsOptions, s *app.Store) ([]events.Event, error) {
	// The app and the apps named like its objects (shop-web's units
	// would pass for shop's web), in one LIST.
	a, apps, err := s.GetAppAndList(ctx, o.App)
	if err != nil {
		return nil, err
	}
	o.App, o.Processes = a.Name, a.ProcessNames()
	o.Others = events.OthersLike(a.Name, apps)
	releases, err := s.ListReleases(ctx, o.App)
	if kube.IsRBACDenial(err) {
		// ListReleases gives a viewer the records in ConfigMaps; a Role
		// that reads neither: the cluster's Events still say what happened.
		fmt.Fprintln(o.IO.ErrOut, "note: tug's release records are not shown: your access does not read them (see 'tug access')")
		releases, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return events.List(ctx, s.Client, s.Namespace, o.Options, releases)
}

// printAppEvents prints the events as a table, saying on stderr how far
// back the cluster keeps them when the table may be missing older ones.
func printAppEvents(o *appEventsOptions, evs []events.Event) error {
	ios := o.IO
	return o.out.Print(ios, evs, func() error {
		if len(evs) == 0 {
			fmt.Fprintf(ios.ErrOut, "no events (%s)\n", events.Expiry)
			return nil
		}
		if err := eventsTable(evs).Render(ios, o.out.NoHeaders); err != nil {
			return err
		}
		if o.Since == 0 || o.Since > time.Hour {
			fmt.Fprintln(ios.ErrOut, events.Expiry)
		}
		return nil
	})
}

// followAppEvents prints the events so far, then each new one as it comes:
// one line per event (JSON lines with -o json), without the table's
// alignment, which would need every row first.
func followAppEvents(ctx context.Context, o *appEventsOptions, s *app.Store, evs []events.Event) error {
	ios := o.IO
	var werr error
	emit := func(e events.Event) {
		if werr != nil {
			return
		}
		if o.out.Format == cli.OutputJSON {
			b, _ := json.Marshal(e) // an Event always encodes
			_, werr = ios.Out.Write(append(b, '\n'))
			return
		}
		_, werr = io.WriteString(ios.Out, eventLine(e))
	}
	for _, e := range evs {
		emit(e)
	}
	if err := events.Follow(ctx, s.Client, s.Namespace, o.Options, evs, emit); err != nil {
		return err
	}
	return werr
}

func eventsTable(evs []events.Event) *cli.Table {
	t := cli.NewTable("time", "type", "object", "reason", "message")
	for _, e := range evs {
		t.AddRow(e.Time.Local().Format("15:04:05"), e.Type, e.Object, e.Reason, eventMessage(e))
	}
	return t
}

func eventLine(e events.Event) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format("15:04:05"), e.Type, e.Object, e.Reason, text.Sanitize(eventMessage(e)))
}

func eventMessage(e events.Event) string {
	if e.Count > 1 {
		return fmt.Sprintf("%s (x%d)", e.Message, e.Count)
	}
	return e.Message
}
