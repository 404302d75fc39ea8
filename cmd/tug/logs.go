package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/logs"
)

// defaultTail is how many lines of each unit `tug logs` shows unless told.
const defaultTail = 100

// logsOptions are `tug logs`.
type logsOptions struct {
	IO          *cli.IOStreams
	CommandName string
	// Client is made without the client-side rate limit (logsClient).
	Client    func() (kubernetes.Interface, error)
	Namespace func() (string, error)

	logs.Options
	since string
}

func newLogsCmd(f *cli.Factory, runF func(context.Context, *logsOptions) error) *cobra.Command {
	o := &logsOptions{IO: f.IOStreams, CommandName: f.CommandName, Namespace: f.Namespace,
		Client: func() (kubernetes.Interface, error) { return logsClient(f) }}
	cmd := &cobra.Command{
		Use:         "logs APP",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Short:       "Show the app's logs, from every unit, merged",
		Long: `Show the lines the app's units have written, merged in time order, each
prefixed with its unit's name (coloured per unit on a terminal). One-off runs
that still exist are included unless -p is given; --unit shows one unit (or
run pod), without prefixes.

By default the last 100 lines of each unit are shown; --tail -1 shows all,
and --since alone shows everything in that window.

-f follows: new lines as they come, units that start later, containers that
restart; units that end are let go. There is no limit on the number of units.
Ctrl-C ends it (exit code 0).`,
		Example: `  tug logs shop
  tug logs shop -f
  tug logs shop -p worker --since 10m --timestamps
  tug logs shop --unit shop-web-6d9c7b8f5-x2k9q --previous`,
		GroupID: "apps",
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.complete(cmd.Flags().Changed("tail"), time.Now()); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runLogs(cmd.Context(), o)
		},
	}
	tailFlagErrors(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&o.Process, "process", "p", "", "Only this process's units (not kubectl's -p, which is --previous here)")
	fl.StringVarP(&o.Unit, "unit", "u", "", "Only this unit (or one-off run pod)")
	fl.BoolVarP(&o.Follow, "follow", "f", false, "Keep showing new lines, and units that start later")
	fl.Int64Var(&o.Tail, "tail", defaultTail, "Lines to show from the end of each unit's log (-1: all)")
	fl.StringVar(&o.since, "since", "", "Only lines newer than a duration (10m, 2h) or a time (2024-05-01T10:00:00Z)")
	fl.BoolVar(&o.Timestamps, "timestamps", false, "Show each line's time")
	fl.BoolVar(&o.Previous, "previous", false, "Show the previous container of each unit (after a crash)")
	return cmd
}

// complete checks the app, the flags and their combinations before
// anything is asked of the cluster, and reads --since as of now: alone
// (tailSet false) it shows the whole window, not the last lines.
func (o *logsOptions) complete(tailSet bool, now time.Time) error {
	if err := app.ValidateName(o.App); err != nil {
		return inputerr.Wrap(err)
	}
	if err := validateProcess(o.Process); err != nil {
		return err
	}
	if o.Unit != "" {
		if err := app.ValidateUnitName(o.Unit); err != nil {
			return err
		}
	}
	if o.Follow && o.Previous {
		return inputerr.Errorf("--previous shows a container that has ended: it cannot be followed (-f)")
	}
	if o.since != "" {
		if err := parseSince(o.since, &o.Options, now); err != nil {
			return err
		}
		if !tailSet {
			o.Tail = -1
		}
	}
	if o.Tail < -1 {
		return inputerr.Errorf("--tail must be -1 (all) or more, got %d", o.Tail)
	}
	return nil
}

func runLogs(ctx context.Context, o *logsOptions) error {
	client, err := o.Client()
	if err != nil {
		return err
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	return logs.Show(ctx, logs.Deps{Client: client, Namespace: ns, IO: o.IO, CommandName: o.CommandName}, o.Options)
}

// parseSince reads --since: a positive duration, or an RFC 3339 time.
func parseSince(v string, o *logs.Options, now time.Time) error {
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return inputerr.Errorf("--since must be positive, got %s", v)
		}
		o.Since = d
		return nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return inputerr.Errorf("--since %q: give a duration (10m, 2h) or a time (2024-05-01T10:00:00Z)", v)
	}
	if t.After(now) {
		return inputerr.Errorf("--since %s is in the future", v)
	}
	o.SinceTime = t
	return nil
}

// logsClient is a client without the client-side rate limit: logs open one
// stream per unit (two with -f), and a limit meant to pace many small
// requests would make the hundredth unit's first line wait seconds (as
// kubectl's does). The API server's own priority and fairness still applies.
func logsClient(f *cli.Factory) (kubernetes.Interface, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	return kubernetes.NewForConfig(cfg)
}

// tailFlagErrors explains --tail to a Heroku user, whose 'heroku logs
// --tail' follows: here --tail is a number of lines and -f follows.
// `logs shop --tail` lacks its number; `logs --tail shop` took the app
// for it (pflag said strconv.ParseInt).
func tailFlagErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		msg := err.Error()
		switch {
		case msg == "flag needs an argument: --tail":
			return inputerr.Errorf("--tail takes a number of lines (-1: all); to follow the log as 'heroku logs --tail' does, use -f (--follow)")
		case strings.HasPrefix(msg, `invalid argument "`) && strings.Contains(msg, `" for "--tail" flag`):
			v := strings.TrimPrefix(msg, `invalid argument "`)
			v = v[:strings.Index(v, `" for "--tail" flag`)]
			return inputerr.Errorf("--tail takes a number of lines (-1: all), not %q; to follow the log as 'heroku logs --tail' does, use -f (--follow): tug logs APP -f", v)
		}
		return cli.FlagErrorFunc(c, err)
	})
}
