package metrics

import (
	"context"
	"fmt"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// Selector is the label selector of the pods o lists, for PodMetrics: the
// app's (or every app's) pods; a process's alone with o.Process. PodMetrics
// are matched to units by name, so a wider selector only costs bytes.
func Selector(o app.ListUnitsOptions) string {
	switch {
	case o.All:
		return kube.LabelManagedBy + "=" + kube.ManagedBy
	case o.Process != "" && o.Process != app.RunProcess:
		return kube.ProcessSelector(o.App, o.Process)
	}
	return kube.AppSelector(o.App)
}

// Fetch starts one LIST of PodMetrics now and returns a function that waits
// for it and records the usage on units: run it alongside the LIST of pods,
// so a listing costs one more request but no more time. The function
// returns why the usage is unknown (nil when it is known), never failing
// the listing. stop cancels the LIST and waits for it: a caller that
// returns early (no such app) defers it, so no request outlives the call.
func Fetch(ctx context.Context, src Source, namespace, selector string) (use func(units []app.Unit) *Unavailable, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var usage map[string]Usage
	var err error
	go func() {
		defer close(done)
		usage, err = src.PodUsage(ctx, namespace, selector)
	}()
	stop = func() { cancel(); <-done }
	return func(units []app.Unit) *Unavailable {
		<-done
		if err != nil {
			if u, ok := AsUnavailable(err); ok {
				return u
			}
			return &Unavailable{Reason: Failed, Detail: err.Error()}
		}
		Attach(units, usage)
		return nil
	}, stop
}

// Attach records usage on the units it names. A unit the metrics API does
// not know yet (just started: metrics-server scrapes every 15 s) keeps an
// unknown usage.
func Attach(units []app.Unit, usage map[string]Usage) {
	for i := range units {
		if u, ok := usage[units[i].Name]; ok {
			units[i].SetUsage(u.CPU, u.Memory)
		}
	}
}

// CPUCell is a unit's CPU for a table: "12m", with the share of its limit
// where one is set ("12m (5%)"), "-" when unknown.
func CPUCell(u app.UnitUsage) string {
	if u.CPU == nil {
		return "-"
	}
	return withShare(fmt.Sprintf("%dm", *u.CPU), *u.CPU, u.CPULimit)
}

// MemoryCell is a unit's memory for a table: "34Mi", with the share of its
// limit where one is set ("34Mi (27%)"), "-" when unknown.
func MemoryCell(u app.UnitUsage) string {
	if u.Memory == nil {
		return "-"
	}
	return withShare(MemoryString(*u.Memory), *u.Memory, u.MemoryLimit)
}

// MemoryString is a byte count as kubectl top writes it: whole Mi (Ki
// below one Mi).
func MemoryString(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%dKi", b>>10)
	}
	return fmt.Sprintf("%dMi", b>>20)
}

func withShare(s string, used, limit int64) string {
	if limit <= 0 {
		return s
	}
	return fmt.Sprintf("%s (%d%%)", s, used*100/limit)
}
