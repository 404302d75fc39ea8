package main

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/usage"
)

// Process-level commands: scale, restart, stop, start (formation, no
// release) and limits, healthchecks, autoscale, pool, tags (settings).

func newAppScaleCmd(f *cli.Factory) *cobra.Command {
	r := &rolloutFlags{}
	cmd := &cobra.Command{
		Use:   "scale APP PROCESS=N|PROCESS+N|PROCESS-N...",
		Short: "Set how many units each process runs",
		Example: `  tug app scale shop web=3 worker=1
  tug app scale shop web+1`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			ops, err := app.ParseScale(args[1:])
			if err != nil {
				return usage.Wrap(err)
			}
			if err := r.validate(); err != nil {
				return err
			}
			return reshape(cmd, f, args[0], r, func(a *app.App) error { return a.ApplyScale(ops) })
		},
	}
	r.add(cmd, false)
	return cmd
}

// forProcesses applies edit to the process named by -p, or to every process.
func forProcesses(a *app.App, proc string, edit func(name string, p *app.Process) error) error {
	names := a.ProcessNames()
	if proc != "" {
		if _, err := a.Process(proc); err != nil {
			return err
		}
		names = []string{proc}
	}
	if len(names) == 0 {
		return usage.Wrap(&app.UnknownProcessError{App: a.Name})
	}
	for _, n := range names {
		p := a.Processes[n]
		if err := edit(n, &p); err != nil {
			return err
		}
		a.Processes[n] = p
	}
	return nil
}

func newAppLifecycleCmd(f *cli.Factory, verb string) *cobra.Command {
	var proc string
	r := &rolloutFlags{}
	short := map[string]string{
		"restart": "Restart units, rolling, one batch at a time",
		"stop":    "Stop a process's units (scale to 0, remembering the count)",
		"start":   "Start stopped units again with their remembered count",
	}[verb]
	cmd := &cobra.Command{
		Use:   verb + " APP",
		Short: short,
		Args:  cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			if proc != "" {
				if err := app.ValidateProcessName(proc); err != nil {
					return usage.Wrap(err)
				}
			}
			if err := r.validate(); err != nil {
				return err
			}
			stamp := time.Now().UTC().Format(time.RFC3339Nano)
			return reshape(cmd, f, args[0], r, func(a *app.App) error {
				return forProcesses(a, proc, func(name string, p *app.Process) error {
					switch verb {
					case "restart":
						p.RestartedAt = stamp
					case "stop":
						p.Stopped = true
					case "start":
						p.Stopped = false
					}
					return nil
				})
			})
		},
	}
	cmd.Flags().StringVarP(&proc, "process", "p", "", "Only this process type (default: all)")
	r.add(cmd, false)
	return cmd
}

// settingsRoll rolls out a settings change as a new release.
func settingsRoll(cmd *cobra.Command, f *cli.Factory, appName, kind, message string, r *rolloutFlags, edit func(a *app.App, rel *app.Release) error) error {
	return roll(cmd, f, appName, deploy.SettingsChange(kind, message, edit), r.options(), r.Output, kind+" changed")
}

// ---------------------------------------------------------------- limits

func newLimitCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "limit", Short: "Set, unset and list a process's CPU and memory", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	var (
		proc string
		l    app.Limits
		r    = &rolloutFlags{}
	)
	set := &cobra.Command{
		Use:     "set APP -p PROCESS [--cpu Q] [--memory Q] [--cpu-request Q] [--memory-request Q]",
		Short:   "Set limits and requests: a new release, rolled out",
		Example: `  tug app limit set shop -p web --cpu 500m --memory 256Mi --memory-request 128Mi`,
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAppProc(args[0], proc); err != nil {
				return err
			}
			if l.IsZero() {
				return usage.Errorf("nothing to set: give --cpu, --memory, --cpu-request or --memory-request")
			}
			if err := l.Validate(); err != nil {
				return usage.Wrap(err)
			}
			return settingsRoll(cmd, f, args[0], app.KindLimits, "limits of "+proc, r, func(a *app.App, rel *app.Release) error {
				if _, err := a.Process(proc); err != nil {
					return err
				}
				cur := rel.Limits[proc]
				for _, p := range []struct {
					dst *string
					v   string
				}{{&cur.CPU, l.CPU}, {&cur.Memory, l.Memory}, {&cur.CPURequest, l.CPURequest}, {&cur.MemoryRequest, l.MemoryRequest}} {
					if p.v != "" {
						*p.dst = p.v
					}
				}
				if err := cur.Validate(); err != nil {
					return usage.Wrap(err)
				}
				if rel.Limits == nil {
					rel.Limits = map[string]app.Limits{}
				}
				rel.Limits[proc] = cur
				return nil
			})
		},
	}
	set.Flags().StringVarP(&proc, "process", "p", "", "Process type (required)")
	set.Flags().StringVar(&l.CPU, "cpu", "", "CPU limit, e.g. 500m or 1")
	set.Flags().StringVar(&l.Memory, "memory", "", "Memory limit, e.g. 256Mi")
	set.Flags().StringVar(&l.CPURequest, "cpu-request", "", "CPU the scheduler reserves")
	set.Flags().StringVar(&l.MemoryRequest, "memory-request", "", "Memory the scheduler reserves")
	r.add(set, true)

	var unsetCPU, unsetMem bool
	ru := &rolloutFlags{}
	unset := &cobra.Command{
		Use:   "unset APP -p PROCESS [--cpu] [--memory]",
		Short: "Remove limits (and their requests): a new release, rolled out",
		Args:  cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAppProc(args[0], proc); err != nil {
				return err
			}
			all := !unsetCPU && !unsetMem
			return settingsRoll(cmd, f, args[0], app.KindLimits, "limits of "+proc+" removed", ru, func(a *app.App, rel *app.Release) error {
				if _, err := a.Process(proc); err != nil {
					return err
				}
				cur := rel.Limits[proc]
				if all || unsetCPU {
					cur.CPU, cur.CPURequest = "", ""
				}
				if all || unsetMem {
					cur.Memory, cur.MemoryRequest = "", ""
				}
				rel.Limits = maps.Clone(rel.Limits)
				if cur.IsZero() {
					delete(rel.Limits, proc)
				} else {
					rel.Limits[proc] = cur
				}
				return nil
			})
		},
	}
	unset.Flags().StringVarP(&proc, "process", "p", "", "Process type (required)")
	unset.Flags().BoolVar(&unsetCPU, "cpu", false, "Remove the CPU limit and request")
	unset.Flags().BoolVar(&unsetMem, "memory", false, "Remove the memory limit and request")
	ru.add(unset, true)

	cmd.AddCommand(set, unset, newSettingsListCmd(f, "list APP", "List each process's limits and requests", func(a *app.App, rel *app.Release) any {
		out := map[string]app.Limits{}
		for _, p := range a.ProcessNames() {
			out[p] = rel.Limits[p]
		}
		return out
	}, func(a *app.App, rel *app.Release) *cli.Table {
		t := cli.NewTable("process", "cpu", "memory", "cpu-request", "memory-request")
		for _, p := range a.ProcessNames() {
			l := rel.Limits[p]
			t.AddRow(p, dash(l.CPU), dash(l.Memory), dash(l.CPURequest), dash(l.MemoryRequest))
		}
		return t
	}))
	return cmd
}

func checkAppProc(appName, proc string) error {
	if err := app.ValidateName(appName); err != nil {
		return usage.Wrap(err)
	}
	if proc == "" {
		return usage.Errorf("which process? give -p PROCESS")
	}
	if err := app.ValidateProcessName(proc); err != nil {
		return usage.Wrap(err)
	}
	return nil
}

// newSettingsListCmd lists a setting of the deployed release.
func newSettingsListCmd(f *cli.Factory, use, short string, data func(*app.App, *app.Release) any, table func(*app.App, *app.Release) *cli.Table) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			a, err := s.GetApp(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rel, _, err := deploy.BaseRelease(cmd.Context(), s, a)
			if err != nil {
				return err
			}
			if rel == nil {
				rel = app.Next(a, nil, "", "")
			}
			return o.Print(f.IOStreams, data(a, rel), func() error { return table(a, rel).Render(f.IOStreams, o.NoHeaders) })
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

// ---------------------------------------------------------------- healthchecks

func newHealthcheckCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "healthcheck", Short: "Set, unset and list a process's readiness, liveness and startup checks", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	var (
		proc string
		h    app.Healthcheck
		r    = &rolloutFlags{}
	)
	set := &cobra.Command{
		Use:   "set APP -p PROCESS [--readiness SPEC] [--liveness SPEC] [--startup SPEC]",
		Short: "Set checks (http:PORT/PATH, tcp:PORT, exec:COMMAND): a new release, rolled out",
		Long: `Set a process's checks. Each SPEC is http:PORT/PATH (an HTTP GET that must
answer 2xx or 3xx), tcp:PORT (a connection must open) or exec:COMMAND (must exit
0). A readiness check replaces the web process's default (a TCP check on $PORT).`,
		Example: `  tug app healthcheck set shop -p web --readiness http:8080/healthz --period 5
  tug app healthcheck set shop -p worker --liveness exec:'test -f /tmp/alive'`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAppProc(args[0], proc); err != nil {
				return err
			}
			if err := h.Validate(); err != nil {
				return usage.Wrap(err)
			}
			return settingsRoll(cmd, f, args[0], app.KindHealthcheck, "healthcheck of "+proc, r, func(a *app.App, rel *app.Release) error {
				if _, err := a.Process(proc); err != nil {
					return err
				}
				rel.Healthchecks = maps.Clone(rel.Healthchecks)
				if rel.Healthchecks == nil {
					rel.Healthchecks = map[string]app.Healthcheck{}
				}
				rel.Healthchecks[proc] = h
				return nil
			})
		},
	}
	set.Flags().StringVarP(&proc, "process", "p", "", "Process type (required)")
	set.Flags().StringVar(&h.Readiness, "readiness", "", "When a unit may receive traffic")
	set.Flags().StringVar(&h.Liveness, "liveness", "", "When a unit must be restarted")
	set.Flags().StringVar(&h.Startup, "startup", "", "When a slow unit has started (holds the other checks until it passes)")
	set.Flags().Int32Var(&h.InitialDelay, "initial-delay", 0, "Seconds before the first check")
	set.Flags().Int32Var(&h.Period, "period", 0, "Seconds between checks (default 10)")
	set.Flags().Int32Var(&h.Timeout, "timeout-seconds", 0, "Seconds a check may take (default 1)")
	set.Flags().Int32Var(&h.FailureThreshold, "failure-threshold", 0, "Failures in a row that count (default 3)")
	r.add(set, true)

	ru := &rolloutFlags{}
	unset := &cobra.Command{
		Use:   "unset APP -p PROCESS",
		Short: "Remove a process's checks: a new release, rolled out",
		Args:  cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAppProc(args[0], proc); err != nil {
				return err
			}
			return settingsRoll(cmd, f, args[0], app.KindHealthcheck, "healthcheck of "+proc+" removed", ru, func(a *app.App, rel *app.Release) error {
				if _, err := a.Process(proc); err != nil {
					return err
				}
				if _, ok := rel.Healthchecks[proc]; !ok {
					return fmt.Errorf("process %q of app %q has no healthcheck", proc, a.Name)
				}
				rel.Healthchecks = maps.Clone(rel.Healthchecks)
				delete(rel.Healthchecks, proc)
				return nil
			})
		},
	}
	unset.Flags().StringVarP(&proc, "process", "p", "", "Process type (required)")
	ru.add(unset, true)

	cmd.AddCommand(set, unset, newSettingsListCmd(f, "list APP", "List each process's checks", func(a *app.App, rel *app.Release) any {
		out := map[string]app.Healthcheck{}
		for _, p := range a.ProcessNames() {
			out[p] = rel.Healthchecks[p]
		}
		return out
	}, func(a *app.App, rel *app.Release) *cli.Table {
		t := cli.NewTable("process", "readiness", "liveness", "startup", "timing")
		for _, p := range a.ProcessNames() {
			h, ok := rel.Healthchecks[p]
			ready := dash(h.Readiness)
			if !ok && p == app.WebProcess {
				ready = "tcp:$PORT (default)"
			}
			timing := ""
			if ok {
				timing = fmt.Sprintf("delay %ds, every %ds, timeout %ds, %d failures", h.InitialDelay, orDefault(h.Period, 10), orDefault(h.Timeout, 1), orDefault(h.FailureThreshold, 3))
			}
			t.AddRow(p, ready, dash(h.Liveness), dash(h.Startup), dash(timing))
		}
		return t
	}))
	return cmd
}

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

// ---------------------------------------------------------------- autoscale

func newAutoscaleCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "autoscale", Short: "Let a HorizontalPodAutoscaler set a process's units", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	var (
		proc string
		as   app.Autoscale
		cpu  string
		r    = &rolloutFlags{}
	)
	set := &cobra.Command{
		Use:   "set APP -p PROCESS --min N --max N --cpu P%",
		Short: "Autoscale a process on CPU use",
		Long: `Autoscale a process between --min and --max units, aiming at --cpu percent of
its CPU request (set one with 'tug app limit set --cpu-request'). While a
process autoscales, 'tug app scale' refuses it and deploys keep its count.`,
		Example: `  tug app autoscale set shop -p web --min 2 --max 10 --cpu 70%`,
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAppProc(args[0], proc); err != nil {
				return err
			}
			n, err := strconv.Atoi(strings.TrimSuffix(cpu, "%"))
			if err != nil {
				return usage.Errorf("invalid --cpu %q: want a percentage such as 70%%", cpu)
			}
			as.CPUPercent = int32(n)
			if err := as.Validate(); err != nil {
				return usage.Wrap(err)
			}
			return reshape(cmd, f, args[0], r, func(a *app.App) error {
				p, err := a.Process(proc)
				if err != nil {
					return err
				}
				v := as
				p.Autoscale = &v
				if p.Replicas < as.Min {
					p.Replicas = as.Min
				}
				a.Processes[proc] = p
				return nil
			})
		},
	}
	set.Flags().StringVarP(&proc, "process", "p", "", "Process type (required)")
	set.Flags().Int32Var(&as.Min, "min", 1, "Fewest units")
	set.Flags().Int32Var(&as.Max, "max", 0, "Most units (required)")
	set.Flags().StringVar(&cpu, "cpu", "80%", "Target CPU use, as a percentage of the request")
	r.add(set, false)

	ru := &rolloutFlags{}
	unset := &cobra.Command{
		Use:   "unset APP -p PROCESS",
		Short: "Stop autoscaling a process; it keeps its current units",
		Args:  cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAppProc(args[0], proc); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			return reshape(cmd, f, args[0], ru, func(a *app.App) error {
				p, err := a.Process(proc)
				if err != nil {
					return err
				}
				if p.Autoscale == nil {
					return fmt.Errorf("process %q of app %q does not autoscale", proc, a.Name)
				}
				// keep the count the autoscaler reached
				if d, err := s.Client.AppsV1().Deployments(s.Namespace).Get(cmd.Context(), deploy.DeploymentName(a.Name, proc), metaGet); err == nil && d.Spec.Replicas != nil {
					p.Replicas = *d.Spec.Replicas
				}
				p.Autoscale = nil
				a.Processes[proc] = p
				return nil
			})
		},
	}
	unset.Flags().StringVarP(&proc, "process", "p", "", "Process type (required)")
	ru.add(unset, false)

	cmd.AddCommand(set, unset, newSettingsListCmd(f, "list APP", "List autoscaled processes", func(a *app.App, _ *app.Release) any {
		out := map[string]*app.Autoscale{}
		for _, p := range a.ProcessNames() {
			out[p] = a.Processes[p].Autoscale
		}
		return out
	}, func(a *app.App, _ *app.Release) *cli.Table {
		t := cli.NewTable("process", "min", "max", "cpu", "units")
		for _, p := range a.ProcessNames() {
			if as := a.Processes[p].Autoscale; as != nil {
				t.AddRow(p, fmt.Sprint(as.Min), fmt.Sprint(as.Max), fmt.Sprintf("%d%%", as.CPUPercent), fmt.Sprint(a.Processes[p].Replicas))
			} else {
				t.AddRow(p, "-", "-", "-", fmt.Sprintf("%d (fixed)", a.Processes[p].Units()))
			}
		}
		return t
	}))
	return cmd
}

// ---------------------------------------------------------------- pool and tags

func newPoolSetCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Choose the pool of nodes an app runs on", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	r := &rolloutFlags{}
	set := &cobra.Command{
		Use:   "set APP POOL",
		Short: "Move an app's units to the nodes of a pool: a new release, rolled out",
		Long:  "Pools are the node label tug.dev/pool (see 'tug node update --pool').",
		Args:  cli.ExactArgs("APP", "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			if err := kube.ValidateLabelValue("pool", args[1]); err != nil {
				return usage.Wrap(err)
			}
			if err := checkPoolContext(f, args[1]); err != nil {
				return err
			}
			return settingsRoll(cmd, f, args[0], app.KindPool, "pool "+args[1], r, func(_ *app.App, rel *app.Release) error {
				rel.Pool = args[1]
				return nil
			})
		},
	}
	r.add(set, true)
	cmd.AddCommand(set)
	return cmd
}

func newTagCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "tag", Short: "Place an app's units on nodes with given labels", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	r := &rolloutFlags{}
	set := &cobra.Command{
		Use:   "set APP KEY=VALUE...",
		Short: "Require node labels for the app's units: a new release, rolled out",
		Args:  usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			tags := map[string]string{}
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return usage.Errorf("%q is not KEY=VALUE", kv)
				}
				if err := kube.ValidateLabelKey(k); err != nil {
					return usage.Wrap(err)
				}
				if err := kube.ValidateLabelValue("tag value", v); err != nil {
					return usage.Wrap(err)
				}
				if k == kube.LabelPool {
					return usage.Errorf("set the pool with 'tug app pool set', not a tag")
				}
				tags[k] = v
			}
			return settingsRoll(cmd, f, args[0], app.KindTags, "tags", r, func(_ *app.App, rel *app.Release) error {
				rel.Tags = maps.Clone(rel.Tags)
				if rel.Tags == nil {
					rel.Tags = map[string]string{}
				}
				maps.Copy(rel.Tags, tags)
				return nil
			})
		},
	}
	r.add(set, true)
	ru := &rolloutFlags{}
	unset := &cobra.Command{
		Use:   "unset APP KEY...",
		Short: "Drop node label requirements: a new release, rolled out",
		Args:  usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return usage.Wrap(err)
			}
			return settingsRoll(cmd, f, args[0], app.KindTags, "tags removed", ru, func(a *app.App, rel *app.Release) error {
				rel.Tags = maps.Clone(rel.Tags)
				for _, k := range args[1:] {
					if _, ok := rel.Tags[k]; !ok {
						return fmt.Errorf("app %q has no tag %q", a.Name, k)
					}
					delete(rel.Tags, k)
				}
				return nil
			})
		},
	}
	ru.add(unset, true)
	cmd.AddCommand(set, unset)
	return cmd
}

var metaGet = metav1.GetOptions{}
