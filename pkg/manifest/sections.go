package manifest

import (
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/service"
)

func (p parser) processes(m *Manifest, n *yaml.Node) error {
	m.Processes = map[string]Process{}
	return p.each(n, "processes", func(name string, k, v *yaml.Node) error {
		where := "processes." + name
		if err := app.ValidateProcessName(name); err != nil {
			return p.errAt(k, where, "%v", err)
		}
		var proc Process
		err := p.each(v, where, func(key string, k, v *yaml.Node) error {
			at := where + "." + key
			switch key {
			case "command":
				s, err := p.str(at, v)
				proc.Command = &s
				m.lines[name] = v.Line
				return err
			case "units":
				n, err := p.integer(at, v, 0, app.MaxUnits)
				proc.Units = new(int32(n))
				return err
			case "limits":
				l, err := p.limits(at, v)
				proc.Limits = l
				return err
			case "healthcheck":
				h, err := p.healthcheck(at, v)
				proc.Healthcheck = h
				return err
			}
			return p.unknown(k, where, "command, units, limits, healthcheck")
		})
		m.Processes[name] = proc
		return err
	})
}

// limits reads cpu, memory, cpu-request, memory-request, as the limit
// flags name them.
func (p parser) limits(where string, n *yaml.Node) (app.Limits, error) {
	var l app.Limits
	fields := map[string]*string{"cpu": &l.CPU, "memory": &l.Memory, "cpu-request": &l.CPURequest, "memory-request": &l.MemoryRequest}
	err := p.each(n, where, func(key string, k, v *yaml.Node) error {
		f, ok := fields[key]
		if !ok {
			return p.unknown(k, where, "cpu, memory, cpu-request, memory-request")
		}
		s, err := p.str(where+"."+key, v)
		*f = s
		return err
	})
	if err != nil {
		return l, err
	}
	if err := l.Validate(); err != nil {
		return l, p.errAt(n, where, "%v", err)
	}
	return l, nil
}

// healthcheck reads a process's probes and timings, named as the
// healthcheck flags name them.
func (p parser) healthcheck(where string, n *yaml.Node) (*app.Healthcheck, error) {
	h := &app.Healthcheck{}
	probes := map[string]*string{"readiness": &h.Readiness, "liveness": &h.Liveness, "startup": &h.Startup}
	timings := map[string]*int32{"initial-delay": &h.InitialDelay, "period": &h.Period, "timeout-seconds": &h.Timeout, "failure-threshold": &h.FailureThreshold}
	err := p.each(n, where, func(key string, k, v *yaml.Node) error {
		at := where + "." + key
		if f, ok := probes[key]; ok {
			s, err := p.str(at, v)
			if err == nil && s != "" {
				if _, perr := app.ParseProbe(s); perr != nil {
					return p.errAt(v, at, "%v", perr)
				}
			}
			*f = s
			return err
		}
		if f, ok := timings[key]; ok {
			n, err := p.integer(at, v, 0, 3600)
			*f = int32(n)
			return err
		}
		return p.unknown(k, where, "readiness, liveness, startup, initial-delay, period, timeout-seconds, failure-threshold")
	})
	if err != nil {
		return nil, err
	}
	if err := h.Validate(); err != nil {
		return nil, p.errAt(n, where, "%v", err)
	}
	return h, nil
}

// settingSetters set one rollout setting, by the name 'tug app settings
// set' gives it.
var settingSetters = map[string]func(*app.SetRolloutOptions, string){
	"max-surge":       func(o *app.SetRolloutOptions, s string) { o.MaxSurge = s },
	"max-unavailable": func(o *app.SetRolloutOptions, s string) { o.MaxUnavailable = s },
	"grace-period":    func(o *app.SetRolloutOptions, s string) { o.GracePeriod = s },
	"history":         func(o *app.SetRolloutOptions, s string) { o.History = s },
	"deploy-timeout":  func(o *app.SetRolloutOptions, s string) { o.DeployTimeout = s },
}

// settings reads the rollout settings; each value is checked on its own
// (the error names its line), then all together.
func (p parser) settings(m *Manifest, n *yaml.Node) error {
	var all app.SetRolloutOptions
	err := p.each(n, "settings", func(key string, k, v *yaml.Node) error {
		set, ok := settingSetters[key]
		if !ok {
			return p.unknown(k, "settings", strings.Join(app.RolloutSettingNames, ", "))
		}
		s, err := p.str("settings."+key, v)
		if err != nil {
			return err
		}
		var one app.SetRolloutOptions
		set(&one, s)
		if _, err := one.Settings(); err != nil {
			return p.errAt(v, "settings."+key, "%v", err)
		}
		set(&all, s)
		return nil
	})
	if err != nil {
		return err
	}
	r, _ := all.Settings()
	if err := r.Validate(); err != nil {
		return p.errAt(n, "settings", "%v", err)
	}
	m.Settings = &r
	return nil
}

// jobs reads the jobs, each as 'tug job add' takes it.
func (p parser) jobs(m *Manifest, n *yaml.Node) error {
	m.Jobs = map[string]app.Job{}
	return p.each(n, "jobs", func(name string, k, v *yaml.Node) error {
		where := "jobs." + name
		if err := app.ValidateJobName(name); err != nil {
			return p.errAt(k, where, "%v", err)
		}
		var j app.Job
		err := p.each(v, where, func(key string, k, v *yaml.Node) error {
			return p.jobField(&j, where+"."+key, key, k, v)
		})
		if err != nil {
			return err
		}
		for _, need := range []struct{ key, val string }{{"command", j.Command}, {"schedule", j.Schedule}} {
			if strings.TrimSpace(need.val) == "" {
				return p.errAt(k, where, "%s is required", need.key)
			}
		}
		if err := j.Validate(); err != nil {
			return p.errAt(k, where, "%v", err)
		}
		m.Jobs[name] = j
		return nil
	})
}

func (p parser) jobField(j *app.Job, at, key string, k, v *yaml.Node) error {
	text := func(dst *string, check func(string) error) error {
		s, err := p.str(at, v)
		if err == nil && check != nil && s != "" {
			if cerr := check(s); cerr != nil {
				return p.errAt(v, at, "%v", cerr)
			}
		}
		*dst = s
		return err
	}
	switch key {
	case "command":
		return text(&j.Command, nil)
	case "schedule":
		return text(&j.Schedule, app.ValidateSchedule)
	case "time-zone":
		return text(&j.TimeZone, app.ValidateTimeZone)
	case "concurrency":
		err := text(&j.Concurrency, func(s string) error { return app.Job{Command: "x", Schedule: "@daily", Concurrency: s}.Validate() })
		if j.Concurrency == app.ConcurrencyAllow {
			j.Concurrency = ""
		}
		return err
	case "timeout":
		s, err := p.str(at, v)
		if err != nil {
			return err
		}
		d, perr := time.ParseDuration(s)
		if perr != nil || d <= 0 || d%time.Second != 0 {
			return p.errAt(v, at, "want a positive number of seconds as a duration, such as 10m or 1h30m, not %q", s)
		}
		j.TimeoutSeconds = int64(d / time.Second)
		return nil
	case "retries":
		n, err := p.integer(at, v, 0, app.MaxJobRetries)
		j.Retries = int32(n)
		return err
	case "limits":
		l, err := p.limits(at, v)
		j.Limits = l
		return err
	}
	return p.unknown(k, strings.TrimSuffix(at, "."+key), "command, schedule, time-zone, concurrency, timeout, retries, limits")
}

// services reads the bound services: NAME: {} (the plan's variables) or
// NAME: {as: PREFIX}.
func (p parser) services(m *Manifest, n *yaml.Node) error {
	m.Services = map[string]string{}
	return p.each(n, "services", func(name string, k, v *yaml.Node) error {
		where := "services." + name
		if err := service.ValidateName(name); err != nil {
			return p.errAt(k, where, "%v", err)
		}
		prefix := ""
		err := p.each(v, where, func(key string, k, v *yaml.Node) error {
			if key != "as" {
				return p.unknown(k, where, "as")
			}
			s, err := p.str(where+".as", v)
			if err == nil {
				if verr := service.ValidatePrefix(s); verr != nil {
					return p.errAt(v, where+".as", "%v", verr)
				}
			}
			prefix = s
			return err
		})
		m.Services[name] = prefix
		return err
	})
}
