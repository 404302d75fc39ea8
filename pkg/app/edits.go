package app

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// The edits below are what the process settings commands change: each
// Options type checks its input without a cluster (Validate, input errors
// only) and then edits the release or app record it is given (Apply), which
// pkg/deploy rolls out.

// SetLimitsOptions is `tug app limit set`: limits merged into a process's.
type SetLimitsOptions struct {
	App, Process string
	Limits       Limits // what is empty keeps its current value
}

// Validate checks the app, the process and that some valid limit is given.
func (o SetLimitsOptions) Validate() error {
	if err := ValidateAppProcess(o.App, o.Process, true); err != nil {
		return err
	}
	if o.Limits.IsZero() {
		return inputerr.Errorf("nothing to set: give --cpu, --memory, --cpu-request or --memory-request")
	}
	return o.Limits.Validate()
}

// Apply merges the limits into the process's in r, refusing a request
// that the merged result puts above its limit.
func (o SetLimitsOptions) Apply(a *App, r *Release) error {
	if _, err := a.Process(o.Process); err != nil {
		return err
	}
	cur := r.Limits[o.Process]
	for _, p := range []struct {
		dst *string
		v   string
	}{{&cur.CPU, o.Limits.CPU}, {&cur.Memory, o.Limits.Memory}, {&cur.CPURequest, o.Limits.CPURequest}, {&cur.MemoryRequest, o.Limits.MemoryRequest}} {
		if p.v != "" {
			*p.dst = p.v
		}
	}
	if err := cur.Validate(); err != nil {
		return err
	}
	r.Limits = maps.Clone(r.Limits)
	if r.Limits == nil {
		r.Limits = map[string]Limits{}
	}
	r.Limits[o.Process] = cur
	return nil
}

// UnsetLimitsOptions is `tug app limit unset`: CPU, memory, or (neither
// given) both, each with its request.
type UnsetLimitsOptions struct {
	App, Process string
	CPU, Memory  bool
}

// Validate checks the app and the process.
func (o UnsetLimitsOptions) Validate() error {
	return ValidateAppProcess(o.App, o.Process, true)
}

// Apply removes the limits from the process's in r.
func (o UnsetLimitsOptions) Apply(a *App, r *Release) error {
	if _, err := a.Process(o.Process); err != nil {
		return err
	}
	all := !o.CPU && !o.Memory
	cur := r.Limits[o.Process]
	if all || o.CPU {
		cur.CPU, cur.CPURequest = "", ""
	}
	if all || o.Memory {
		cur.Memory, cur.MemoryRequest = "", ""
	}
	r.Limits = maps.Clone(r.Limits)
	if cur.IsZero() {
		delete(r.Limits, o.Process)
	} else {
		if r.Limits == nil {
			r.Limits = map[string]Limits{}
		}
		r.Limits[o.Process] = cur
	}
	return nil
}

// SetHealthcheckOptions is `tug app healthcheck set`: it replaces a
// process's checks.
type SetHealthcheckOptions struct {
	App, Process string
	Healthcheck  Healthcheck
}

// Validate checks the app, the process and the checks.
func (o SetHealthcheckOptions) Validate() error {
	if err := ValidateAppProcess(o.App, o.Process, true); err != nil {
		return err
	}
	return o.Healthcheck.Validate()
}

// Apply sets the process's checks in r.
func (o SetHealthcheckOptions) Apply(a *App, r *Release) error {
	if _, err := a.Process(o.Process); err != nil {
		return err
	}
	r.Healthchecks = maps.Clone(r.Healthchecks)
	if r.Healthchecks == nil {
		r.Healthchecks = map[string]Healthcheck{}
	}
	r.Healthchecks[o.Process] = o.Healthcheck
	return nil
}

// UnsetHealthcheckOptions is `tug app healthcheck unset`.
type UnsetHealthcheckOptions struct {
	App, Process string
}

// Validate checks the app and the process.
func (o UnsetHealthcheckOptions) Validate() error {
	return ValidateAppProcess(o.App, o.Process, true)
}

// Apply removes the process's checks from r; a process without any is an error.
func (o UnsetHealthcheckOptions) Apply(a *App, r *Release) error {
	if _, err := a.Process(o.Process); err != nil {
		return err
	}
	if _, ok := r.Healthchecks[o.Process]; !ok {
		return fmt.Errorf("process %q of app %q has no healthcheck", o.Process, a.Name)
	}
	r.Healthchecks = maps.Clone(r.Healthchecks)
	delete(r.Healthchecks, o.Process)
	return nil
}

// Kubernetes' probe timings, for the fields a healthcheck or probe leaves at 0.
const (
	DefaultProbePeriod           int32 = 10
	DefaultProbeTimeout          int32 = 1
	DefaultProbeFailureThreshold int32 = 3
)

// The readiness check tug gives every web unit (a TCP connection to its
// port): every WebProbePeriod seconds, failed after WebProbeFailures
// misses. Before 2026-12-08 it was every 2 s and 3 misses
// (FormerWebProbePeriod, FormerWebProbeFailures); units of releases
// rolled out then still carry it.
const (
	WebProbePeriod         = 1
	WebProbeFailures       = 6
	FormerWebProbePeriod   = 2
	FormerWebProbeFailures = 3
)

// ProbeTiming returns a probe's period and failure threshold, with
// Kubernetes' defaults for those left at 0.
func ProbeTiming(period, failureThreshold int32) (int32, int32) {
	return orDefault(period, DefaultProbePeriod), orDefault(failureThreshold, DefaultProbeFailureThreshold)
}

// WithDefaults returns h with Kubernetes' defaults for the timings it leaves at 0.
func (h Healthcheck) WithDefaults() Healthcheck {
	h.Period, h.FailureThreshold = ProbeTiming(h.Period, h.FailureThreshold)
	h.Timeout = orDefault(h.Timeout, DefaultProbeTimeout)
	return h
}

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

// SetAutoscaleOptions is `tug app autoscale set`.
type SetAutoscaleOptions struct {
	App, Process string
	Min, Max     int32
	CPU          string // a percentage such as 70%
}

// Autoscale parses and checks the options into an autoscale range.
func (o SetAutoscaleOptions) Autoscale() (Autoscale, error) {
	if err := ValidateAppProcess(o.App, o.Process, true); err != nil {
		return Autoscale{}, err
	}
	// 32 bits, so that a number beyond int32 is refused, not wrapped
	n, err := strconv.ParseInt(strings.TrimSuffix(o.CPU, "%"), 10, 32)
	if errors.Is(err, strconv.ErrRange) {
		return Autoscale{}, inputerr.Errorf("--cpu must be a percentage from 1%% to 1000%%, not %s", o.CPU)
	}
	if err != nil {
		return Autoscale{}, inputerr.Errorf("invalid --cpu %q: want a percentage such as 70%%", o.CPU)
	}
	as := Autoscale{Min: o.Min, Max: o.Max, CPUPercent: int32(n)}
	if err := as.Validate(); err != nil {
		return Autoscale{}, err
	}
	return as, nil
}

// Validate checks the app, the process and the range.
func (o SetAutoscaleOptions) Validate() error {
	_, err := o.Autoscale()
	return err
}

// Apply makes the process autoscale, raising its units to the minimum.
func (o SetAutoscaleOptions) Apply(a *App) error {
	as, err := o.Autoscale()
	if err != nil {
		return err
	}
	p, err := a.Process(o.Process)
	if err != nil {
		return err
	}
	p.Autoscale = &as
	if p.Replicas < as.Min {
		p.Replicas = as.Min
	}
	a.Processes[o.Process] = p
	return nil
}

// UnsetAutoscale stops a process autoscaling. It keeps the units the
// autoscaler reached when current is not nil.
func (a *App) UnsetAutoscale(proc string, current *int32) error {
	p, err := a.Process(proc)
	if err != nil {
		return err
	}
	if p.Autoscale == nil {
		return fmt.Errorf("process %q of app %q does not autoscale", proc, a.Name)
	}
	if current != nil {
		p.Replicas = *current
	}
	p.Autoscale = nil
	a.Processes[proc] = p
	return nil
}

// ParseTags reads `tug app tag set` arguments, KEY=VALUE node labels. The
// pool is not a tag. Every error is an input error.
func ParseTags(args []string) (map[string]string, error) {
	tags := map[string]string{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, inputerr.Errorf("%q is not KEY=VALUE", kv)
		}
		if err := kube.ValidateLabelKey(k); err != nil {
			return nil, inputerr.Wrap(err)
		}
		if err := kube.ValidateLabelValue("tag value", v); err != nil {
			return nil, inputerr.Wrap(err)
		}
		if k == kube.LabelPool {
			return nil, inputerr.Errorf("set the pool with 'tug app pool set', not a tag")
		}
		tags[k] = v
	}
	return tags, nil
}

// ValidateTagKeys checks `tug app tag unset` arguments: keys only, each a
// valid label key. Every error is an input error.
func ValidateTagKeys(keys []string) error {
	for _, k := range keys {
		if strings.Contains(k, "=") {
			return inputerr.Errorf("%q: unset takes keys only, not KEY=VALUE", k)
		}
		if err := kube.ValidateLabelKey(k); err != nil {
			return inputerr.Wrap(err)
		}
	}
	return nil
}

// SetTags adds tags to r's, replacing the values of keys it has.
func (r *Release) SetTags(tags map[string]string) {
	r.Tags = maps.Clone(r.Tags)
	if r.Tags == nil {
		r.Tags = map[string]string{}
	}
	maps.Copy(r.Tags, tags)
}

// UnsetTags removes tags from r; a key r does not have is an error and
// changes nothing.
func (r *Release) UnsetTags(appName string, keys []string) error {
	next := maps.Clone(r.Tags)
	for _, k := range keys {
		if _, ok := next[k]; !ok {
			return fmt.Errorf("app %q has no tag %q", appName, k)
		}
		delete(next, k)
	}
	r.Tags = next
	return nil
}

// Restart marks the units of proc (or, with proc "", of every process) to
// be replaced, rolling: at is when, stored in the pod template.
func (a *App) Restart(proc string, at time.Time) error {
	stamp := at.UTC().Format(time.RFC3339Nano)
	return a.eachProcess(proc, func(p *Process) { p.RestartedAt = stamp })
}

// Stop scales proc (or every process) to 0, remembering its count.
func (a *App) Stop(proc string) error {
	return a.eachProcess(proc, func(p *Process) { p.Stopped = true })
}

// Start runs stopped units of proc (or every process) again.
func (a *App) Start(proc string) error {
	return a.eachProcess(proc, func(p *Process) { p.Stopped = false })
}

// eachProcess applies edit to the named process, or to every process.
func (a *App) eachProcess(proc string, edit func(p *Process)) error {
	names := a.ProcessNames()
	if proc != "" {
		if _, err := a.Process(proc); err != nil {
			return err
		}
		names = []string{proc}
	}
	if len(names) == 0 {
		return inputerr.Wrap(&UnknownProcessError{App: a.Name})
	}
	for _, n := range names {
		p := a.Processes[n]
		edit(&p)
		a.Processes[n] = p
	}
	return nil
}
