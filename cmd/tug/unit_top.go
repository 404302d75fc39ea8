package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/metrics"
)

// unitTopOptions are `tug unit top`'s.
type unitTopOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	app.ListUnitsOptions
	sort     string
	once     bool
	interval time.Duration
	out      cli.OutputOptions
}

func newUnitTopCmd(f *cli.Factory, runF func(context.Context, *unitTopOptions) error) *cobra.Command {
	o := &unitTopOptions{IO: f.IOStreams, Store: storeFor(f), sort: "cpu", interval: 5 * time.Second}
	cmd := &cobra.Command{
		Use:         "top APP",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Short:       "Show the CPU and memory each of an app's units uses",
		Long: `Show the CPU (millicores) and memory (working set) each unit uses now, with
the share of its limit where one is set, from the cluster's metrics API
(metrics.k8s.io, served by metrics-server; it samples every 15 s or so).

On a terminal the table refreshes in place every --interval until Ctrl-C;
piped, with --once or with -o json|yaml it prints once.`,
		Example: `  tug unit top shop
  tug unit top shop -p worker --sort memory
  tug unit top shop --once -o json`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runUnitTop(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Only units of this process type")
	cmd.Flags().StringVar(&o.sort, "sort", o.sort, "Sort by cpu or memory (most first)")
	_ = cmd.RegisterFlagCompletionFunc("sort", cobra.FixedCompletions([]cobra.Completion{"cpu", "memory"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().BoolVar(&o.once, "once", false, "Print once, even on a terminal")
	cmd.Flags().DurationVar(&o.interval, "interval", o.interval, "Time between refreshes on a terminal")
	cli.AddOutputFlags(cmd, &o.out)
	return cmd
}

func (o *unitTopOptions) validate() error {
	if o.sort != "cpu" && o.sort != "memory" {
		return inputerr.Errorf("--sort must be cpu or memory, not %q", o.sort)
	}
	if o.interval < time.Second {
		return inputerr.Errorf("--interval must be at least 1s, not %s", o.interval)
	}
	if o.Process == app.RunProcess {
		return inputerr.Errorf("-p run: one-off runs are not units; 'tug unit top' shows a process's units")
	}
	return app.ValidateAppProcess(o.App, o.Process, false)
}

// runUnitTop prints the units' usage once, or refreshes it in place on a
// terminal until ctx ends (Ctrl-C ends it without an error).
func runUnitTop(ctx context.Context, o *unitTopOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	ios := o.IO
	live := ios.IsStdoutTTY() && !o.once && (o.out.Format == "" || o.out.Format == cli.OutputTable)
	for {
		units, err := topUnits(ctx, s, o)
		if err != nil {
			if live && ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !live {
			return o.out.Print(ios, units, func() error { return topTable(units).Render(ios, o.out.NoHeaders) })
		}
		// home, clear, then the table: one write, so it does not flicker
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J")
		fmt.Fprintf(&b, "%s  every %s  %s (Ctrl-C to stop)\n\n", o.App, o.interval, time.Now().Format("15:04:05"))
		if _, err := io.WriteString(ios.Out, b.String()); err != nil {
			return err
		}
		if err := topTable(units).Render(ios, o.out.NoHeaders); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// topUnits reads the app (it must exist), its units and their usage: the
// units' LIST and the PodMetrics' LIST run at once. Without the metrics API
// there is nothing to show: that is the error.
func topUnits(ctx context.Context, s *app.Store, o *unitTopOptions) ([]app.Unit, error) {
	use, stop := metrics.Fetch(ctx, metrics.FromClient(s.Client), s.Namespace, metrics.Selector(o.ListUnitsOptions))
	defer stop()
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return nil, err
	}
	if o.Process != "" {
		if _, err := a.Process(o.Process); err != nil {
			return nil, err
		}
	}
	units, err := app.ListUnits(ctx, s.Client, s.Namespace, o.ListUnitsOptions)
	if err != nil {
		return nil, err
	}
	if miss := use(units); miss != nil {
		return nil, miss
	}
	sortUnitsBy(units, o.sort)
	return units, nil
}

// sortUnitsBy orders units by what they use of key, most first; unknown last.
func sortUnitsBy(units []app.Unit, key string) {
	val := func(u app.Unit) int64 {
		p := u.CPU
		if key == "memory" {
			p = u.Memory
		}
		if p == nil {
			return -1
		}
		return *p
	}
	sort.SliceStable(units, func(i, j int) bool { return val(units[i]) > val(units[j]) })
}

func topTable(units []app.Unit) *cli.Table {
	t := cli.NewTable("unit", "process", "status", "cpu", "memory")
	for _, u := range units {
		t.AddRow(u.Name, u.Process, u.Status, metrics.CPUCell(u.UnitUsage), metrics.MemoryCell(u.UnitUsage))
	}
	return t
}
