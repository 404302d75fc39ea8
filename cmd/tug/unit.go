package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/metrics"
	"tug.dev/tug/pkg/text"
)

func newUnitCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "unit",
		Short:   "List, add, remove and kill an app's units",
		Long:    "A unit is one running instance of a process type: a pod of the app.",
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newUnitListCmd(f), newUnitTopCmd(f), newUnitAddCmd(f, true), newUnitAddCmd(f, false), newUnitKillCmd(f))
	return cmd
}

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
	app.ListUnitsOptions
	format    unitFormat
	noHeaders bool
}

func newUnitListCmd(f *cli.Factory) *cobra.Command {
	o := &unitListOptions{format: unitFormat("table")}
	cmd := &cobra.Command{
		Use:         "list [APP]",
		Annotations: argsAre(argApp),
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
			return runUnitList(cmd.Context(), f, o)
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
func runUnitList(ctx context.Context, f *cli.Factory, o *unitListOptions) error {
	o.Runs = true
	s, err := appStore(f)
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
	return out.Print(f.IOStreams, units, func() error {
		if len(units) == 0 {
			fmt.Fprintln(f.IOStreams.ErrOut, "no units")
			return nil
		}
		if err := unitTable(units, o.format == "wide", o.All).Render(f.IOStreams, o.noHeaders); err != nil {
			return err
		}
		usageHint(f.IOStreams, missing)
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

// newUnitAddCmd is `unit add` (add true) or `unit remove`, tsuru's syntax
// for scaling one process by N.
func newUnitAddCmd(f *cli.Factory, add bool) *cobra.Command {
	var proc string
	r := &rolloutFlags{}
	use, short, op := "add APP N", "Add N units to a process", byte('+')
	verb, aliases := "add", []string(nil)
	if !add {
		verb, use, short, op = "remove", "remove APP N", "Remove N units from a process", '-'
		aliases = []string{"rm", "delete"}
	}
	annotations := argsAre(argApp, argCount)
	if !add {
		annotations = deleting(argApp, argCount)
	}
	cmd := &cobra.Command{
		Use:         use,
		Annotations: annotations,
		Aliases:     aliases,
		Short:       short,
		Example:     "  tug unit " + verb + " shop 2 -p worker",
		Args:        cli.ExactArgs("APP", "N"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := app.ValidateName(name); err != nil {
				return err
			}
			n, err := app.ParseUnitCount(args[1])
			if err != nil {
				return err
			}
			if proc != "" {
				if err := app.ValidateProcessName(proc); err != nil {
					return err
				}
			}
			if err := r.validate(); err != nil {
				return err
			}
			return reshape(cmd.Context(), changerFor(cmd, f), name, r, func(a *app.App) error {
				p := proc
				if p == "" {
					var err error
					if p, err = a.DefaultProcess(); err != nil {
						return err
					}
				}
				return a.ApplyScale([]app.ScaleOp{{Process: p, Op: op, N: n}})
			})
		},
	}
	cmd.Flags().StringVarP(&proc, "process", "p", "", "Process type (default: the only one, or web)")
	r.add(cmd, false)
	return cmd
}

func newUnitKillCmd(f *cli.Factory) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:         "kill APP UNIT",
		Annotations: deleting(argApp, argUnit),
		Short:       "Kill a unit; its process starts a replacement (a one-off run just stops)",
		Long: `Kill a unit: its process starts a replacement. A one-off run's pod (process
"run" in 'tug unit list', such as one left by 'tug run --detach') is stopped
and removed for good, with the Secret of its --env.`,
		Example: `  tug unit kill shop shop-web-7d9f-b2
  tug unit kill shop shop-run-x7k2q`,
		Args: cli.ExactArgs("APP", "UNIT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			if err := app.ValidateUnitName(args[1]); err != nil {
				return err
			}
			s, _, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			u, err := app.KillUnit(cmd.Context(), s.Client, s.Namespace, args[0], args[1], force)
			if err != nil {
				return err
			}
			if u.Process == app.RunProcess {
				fmt.Fprintf(f.IOStreams.ErrOut, "run %s stopped and removed\n", args[1])
				return nil
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "unit %s killed; a replacement is starting\n", args[1])
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "Kill at once, without the grace period")
	return cmd
}
