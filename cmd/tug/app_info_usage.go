package main

import (
	"context"
	"fmt"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/metrics"
)

// processUsage is what a process's units use together, against the sum of
// their limits (0: a unit has none).
type processUsage struct {
	Units       int   `json:"units"` // the units the metrics API knows
	CPU         int64 `json:"cpu"`   // millicores
	Memory      int64 `json:"memory"`
	CPULimit    int64 `json:"cpuLimit,omitempty"`
	MemoryLimit int64 `json:"memoryLimit,omitempty"`
}

// infoWithUsage is app info's result: the app, and its processes' usage
// (absent when the metrics API does not answer).
type infoWithUsage struct {
	*app.Info
	Usage map[string]*processUsage `json:"usage,omitempty"`
}

// appUsage is the units' LIST and the PodMetrics' LIST that app info
// makes alongside reading the app.
type appUsage struct {
	units func() ([]app.Unit, error)
	// stop cancels both LISTs and waits for them: no request of the
	// command's outlives it (an app that is not there returns early).
	stop    func()
	missing *metrics.Unavailable
	usage   map[string]*processUsage
}

// startAppUsage starts both LISTs now; with and print wait for them.
func startAppUsage(ctx context.Context, s *app.Store, name string) *appUsage {
	ctx, cancel := context.WithCancel(ctx)
	o := app.ListUnitsOptions{App: name}
	use, stopUse := metrics.Fetch(ctx, metrics.FromClient(s.Client), s.Namespace, metrics.Selector(o))
	done := make(chan struct{})
	var units []app.Unit
	var err error
	go func() {
		defer close(done)
		units, err = app.ListUnits(ctx, s.Client, s.Namespace, o)
	}()
	return &appUsage{stop: func() { cancel(); <-done; stopUse() }, units: func() ([]app.Unit, error) {
		<-done
		if err == nil {
			// the metrics' wait, once: a later call finds units with usage
			if miss := use(units); miss != nil {
				return units, miss
			}
		}
		return units, err
	}}
}

// with is info and its processes' usage, for -o json and the table.
func (u *appUsage) with(info *app.Info) *infoWithUsage {
	if u.usage == nil && u.missing == nil {
		units, err := u.units()
		if m, ok := metrics.AsUnavailable(err); ok {
			u.missing = m
		} else if err != nil {
			u.missing = &metrics.Unavailable{Reason: metrics.Failed, Detail: err.Error()}
		} else {
			u.usage = sumByProcess(units)
		}
	}
	return &infoWithUsage{Info: info, Usage: u.usage}
}

func sumByProcess(units []app.Unit) map[string]*processUsage {
	out := map[string]*processUsage{}
	for _, un := range units {
		if un.CPU == nil || un.Memory == nil {
			continue
		}
		p := out[un.Process]
		if p == nil {
			p = &processUsage{}
			out[un.Process] = p
		}
		// a unit without a limit makes the process's total unbounded
		if p.Units > 0 && p.CPULimit == 0 || un.CPULimit == 0 {
			p.CPULimit, un.CPULimit = 0, 0
		}
		if p.Units > 0 && p.MemoryLimit == 0 || un.MemoryLimit == 0 {
			p.MemoryLimit, un.MemoryLimit = 0, 0
		}
		p.Units++
		p.CPU += *un.CPU
		p.Memory += *un.Memory
		p.CPULimit += un.CPULimit
		p.MemoryLimit += un.MemoryLimit
	}
	return out
}

// print writes app info's human form, then the processes' usage when the
// metrics API answers.
func (u *appUsage) print(ios *cli.IOStreams, info *app.Info, base func(*cli.IOStreams, *app.Info) error) error {
	if err := base(ios, info); err != nil || len(info.Processes) == 0 {
		return err
	}
	w := u.with(info)
	if u.missing != nil {
		// no hint here: app info is about the app, and unit list says why
		return nil
	}
	fmt.Fprintln(ios.Out)
	t := cli.NewTable("process", "cpu", "memory")
	for _, p := range info.Processes {
		pu := w.Usage[p.Name]
		if pu == nil {
			t.AddRow(p.Name, "-", "-")
			continue
		}
		t.AddRow(p.Name, ofLimit(fmt.Sprintf("%dm", pu.CPU), fmt.Sprintf("%dm", pu.CPULimit), pu.CPU, pu.CPULimit),
			ofLimit(metrics.MemoryString(pu.Memory), metrics.MemoryString(pu.MemoryLimit), pu.Memory, pu.MemoryLimit))
	}
	return t.Render(ios, false)
}

// ofLimit is "24m of 400m (6%)", or the use alone without a limit.
func ofLimit(used, limit string, u, l int64) string {
	if l <= 0 {
		return used
	}
	return fmt.Sprintf("%s of %s (%d%%)", used, limit, u*100/l)
}
