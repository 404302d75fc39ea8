package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/metrics"
	"tug.dev/tug/pkg/text"
)

// unitFormat is -o for unit list: the usual formats plus wide and name.
type unitFormat string

func (u *unitFormat) String() string { return string(*u) }
func (u *unitFormat) Type() string   { return "format" }
func (u *unitFormat) Set(s string) error {
	if s == "wide" || s == string(cli.OutputName) {
		*u = unitFormat(s)
		return nil
	}
	if f, err := cli.ParseFormat(s); err == nil {
		*u = unitFormat(f)
		return nil
	}
	return fmt.Errorf("must be one of table, wide, json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE")
}

// unitListOptions are `tug unit list`'s.
type unitListOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	app.ListUnitsOptions
	format    unitFormat
	noHeaders bool
}

func newUnitListCmd(f *cli.Factory, runF func(context.Context, *unitListOptions) error) *cobra.Command {
	o := &unitListOptions{IO: f.IOStreams, Store: storeFor(f), format: unitFormat("table")}
	cmd := &cobra.Command{
		Use:         "list [APP]",
		Annotations: atLevel(access.Viewer, argsAre(argApp)),
		Aliases:     []string{"ls"},
		Short:       "List an app's units (or every app's, with --all)",
		Long: `List units with their status as people think of it:

  pending   not placed on a node yet (the scheduler's reason)
  created   placed; its container is being created
  starting  running; its readiness check has not passed yet
  started   running and ready
  unready   running, but its readiness check keeps failing
  crashed   exits and is restarted (with the last exit code)
  error     cannot start (ImagePullBackOff, CreateContainerConfigError, ...)
  stopping  being terminated
  stopped   exited and will not restart

One-off runs ('tug run', --detach or not) are listed after the units, as
process "run" (-p run lists them alone); 'tug unit kill APP NAME' stops one.`,
		Example: `  tug unit list shop
  tug unit list shop -p worker -o wide
  tug unit list shop -p run
  tug unit list --all -o json`,
		Args: cli.Args("[APP]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runUnitList(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Only units of this process type (run: the one-off runs)")
	cmd.Flags().BoolVar(&o.All, "all", false, "Units of every app in the namespace")
	cmd.Flags().VarP(&o.format, "output", "o", "Output format: table, wide, json, yaml, name, jsonpath=TEMPLATE or go-template=TEMPLATE")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(
		[]cobra.Completion{"table", "wide", "json", "yaml", "name", "jsonpath=", "go-template="}, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace))
	cmd.Flags().BoolVar(&o.noHeaders, "no-headers", false, "Omit the header row of tables")
	return cmd
}

// validate checks the command line before anything is asked of the cluster.
func (o *unitListOptions) validate(args []string) error {
	switch {
	case o.All && len(args) == 1:
		return inputerr.Errorf("give an APP or --all, not both")
	case !o.All && len(args) == 0:
		return inputerr.Errorf("which app? give APP, or --all for every app in the namespace")
	case o.All && o.Process != "":
		return inputerr.Errorf("-p needs an APP; it cannot be used with --all")
	}
	if o.All {
		return nil
	}
	proc := o.Process
	if proc == app.RunProcess {
		proc = "" // not a process type: the one-off runs
	}
	o.App = args[0]
	return app.ValidateAppProcess(o.App, proc, false)
}

// runUnitList lists the units o selects, as o.format says.
func runUnitList(ctx context.Context, o *unitListOptions) error {
	o.Runs = true
	s, err := o.Store()
	if err != nil {
		return err
	}
	usage, stopUsage := startUnitUsage(ctx, s, o) // alongside the reads below: the aggregated API answers slower
	defer stopUsage()
	if !o.All {
		a, err := s.GetApp(ctx, o.App)
		if err != nil {
			return err
		}
		if o.Process != "" && o.Process != app.RunProcess {
			if _, err := a.Process(o.Process); err != nil {
				return err
			}
		}
	}
	units, err := app.ListUnits(ctx, s.Client, s.Namespace, o.ListUnitsOptions)
	if err != nil {
		return err
	}
	missing := usage(units)
	out := cli.OutputOptions{Format: cli.OutputFormat(o.format), NoHeaders: o.noHeaders, NameKind: "unit"}
	if o.format == "wide" {
		out.Format = cli.OutputTable
	}
	return out.Print(o.IO, units, func() error {
		if len(units) == 0 {
			fmt.Fprintln(o.IO.ErrOut, "no units")
			return nil
		}
		if err := unitTable(units, o.format == "wide", o.All).Render(o.IO, o.noHeaders); err != nil {
			return err
		}
		usageHint(o.IO, missing)
		return nil
	})
}

func unitTable(units []app.Unit, wide, withApp bool) *cli.Table {
	cols := []string{"unit", "process", "release", "status", "ready", "restarts", "age", "cpu", "memory"}
	if withApp {
		cols = append([]string{"app"}, cols...)
	}
	if wide {
		cols = append(cols, "node", "ip", "address", "image")
	}
	t := cli.NewTable(cols...)
	if wide {
		t.FullDigests()
	}
	for _, u := range units {
		status := u.Status
		if u.Reason != "" {
			status += " (" + u.Reason + ")"
		}
		ready := "no"
		if u.Ready {
			ready = "yes"
		}
		row := []string{u.Name, u.Process, releaseCell(u.Release), status, ready, strconv.Itoa(int(u.Restarts)), text.Age(u.CreatedAt),
			metrics.CPUCell(u.UnitUsage), metrics.MemoryCell(u.UnitUsage)}
		if withApp {
			row = append([]string{u.App}, row...)
		}
		if wide {
			row = append(row, dash(u.Node), dash(u.IP), dash(u.Address), u.Image)
		}
		t.AddRow(row...)
	}
	return t
}
