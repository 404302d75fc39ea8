package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/metrics"
)

// autoscaleRow is one process in `autoscale list -o json`: its settings
// (null when it does not autoscale) and what its autoscaler last saw.
type autoscaleRow struct {
	*app.Autoscale
	*metrics.AutoscalerStatus
}

// autoscaleListOptions are `tug app autoscale list`.
type autoscaleListOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App    string
	Output cli.OutputOptions
}

func newAutoscaleListCmd(f *cli.Factory, runF func(context.Context, *autoscaleListOptions) error) *cobra.Command {
	o := &autoscaleListOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Aliases:     []string{"ls"},
		Short:       "List autoscaled processes, with their current and target CPU use",
		Long: `List each process's autoscaling: its bounds, its target CPU use (a share of
the units' CPU request) and what its autoscaler last saw (the current use and
units), or why it cannot act (the cluster does not serve the metrics API, the
units have no CPU request, ...).`,
		Example: "  tug app autoscale list shop",
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAutoscaleList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	cli.SetNameKind(cmd, "process")
	return cmd
}

func runAutoscaleList(ctx context.Context, o *autoscaleListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	st, err := metrics.Autoscalers(ctx, s.Client, s.Namespace, a.Name)
	if err != nil {
		return err
	}
	rows := map[string]*autoscaleRow{}
	for _, p := range a.ProcessNames() {
		if as := a.Processes[p].Autoscale; as != nil {
			r := &autoscaleRow{Autoscale: as}
			if h, ok := st[p]; ok {
				r.AutoscalerStatus = &h
			}
			rows[p] = r
		} else {
			rows[p] = nil
		}
	}
	return o.Output.Print(o.IO, rows, func() error { return autoscaleTable(a, rows).Render(o.IO, o.Output.NoHeaders) })
}

func autoscaleTable(a *app.App, rows map[string]*autoscaleRow) *cli.Table {
	t := cli.NewTable("process", "min", "max", "cpu", "current", "units", "note")
	for _, p := range a.ProcessNames() {
		r := rows[p]
		if r == nil {
			t.AddRow(p, "-", "-", "-", "-", fmt.Sprintf("%d (fixed)", a.Processes[p].Units()), "")
			continue
		}
		current, units, note := "-", fmt.Sprint(a.Processes[p].Replicas), ""
		if h := r.AutoscalerStatus; h != nil {
			if h.CurrentCPUPercent != nil {
				current = fmt.Sprintf("%d%%", *h.CurrentCPUPercent)
			}
			units = fmt.Sprint(h.CurrentUnits)
			if h.DesiredUnits != h.CurrentUnits {
				units = fmt.Sprintf("%d (to %d)", h.CurrentUnits, h.DesiredUnits)
			}
			note = h.Problem
		}
		t.AddRow(p, fmt.Sprint(r.Min), fmt.Sprint(r.Max), fmt.Sprintf("%d%%", r.CPUPercent), current, units, note)
	}
	return t
}
