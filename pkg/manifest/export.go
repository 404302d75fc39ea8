package manifest

import (
	"bytes"
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"tug.dev/tug/pkg/app"
)

// The file's shape as written by Export (and described by
// docs/manifest.schema.json); Parse reads the same keys.
type fileDoc struct {
	Processes map[string]processDoc `yaml:"processes"`
	Release   *string               `yaml:"release,omitempty"`
	Settings  *settingsDoc          `yaml:"settings,omitempty"`
	Jobs      map[string]jobDoc     `yaml:"jobs,omitempty"`
	Services  map[string]serviceDoc `yaml:"services,omitempty"`
}

type processDoc struct {
	Command     string     `yaml:"command"`
	Units       *int32     `yaml:"units,omitempty"`
	Limits      *limitsDoc `yaml:"limits,omitempty"`
	Healthcheck *hcDoc     `yaml:"healthcheck,omitempty"`
}

type limitsDoc struct {
	CPU           string `yaml:"cpu,omitempty"`
	Memory        string `yaml:"memory,omitempty"`
	CPURequest    string `yaml:"cpu-request,omitempty"`
	MemoryRequest string `yaml:"memory-request,omitempty"`
}

type hcDoc struct {
	Readiness        string `yaml:"readiness,omitempty"`
	Liveness         string `yaml:"liveness,omitempty"`
	Startup          string `yaml:"startup,omitempty"`
	InitialDelay     int32  `yaml:"initial-delay,omitempty"`
	Period           int32  `yaml:"period,omitempty"`
	Timeout          int32  `yaml:"timeout-seconds,omitempty"`
	FailureThreshold int32  `yaml:"failure-threshold,omitempty"`
}

type settingsDoc struct {
	MaxSurge       string `yaml:"max-surge,omitempty"`
	MaxUnavailable string `yaml:"max-unavailable,omitempty"`
	GracePeriod    string `yaml:"grace-period,omitempty"`
	History        int    `yaml:"history,omitempty"`
	DeployTimeout  string `yaml:"deploy-timeout,omitempty"`
}

type serviceDoc struct {
	As string `yaml:"as,omitempty"`
}

type jobDoc struct {
	Command     string     `yaml:"command"`
	Schedule    string     `yaml:"schedule"`
	TimeZone    string     `yaml:"time-zone,omitempty"`
	Concurrency string     `yaml:"concurrency,omitempty"`
	Timeout     string     `yaml:"timeout,omitempty"`
	Retries     int32      `yaml:"retries,omitempty"`
	Limits      *limitsDoc `yaml:"limits,omitempty"`
}

// Export writes app a's deployed release r as a tug.yaml: every process
// with its command, units (not for an autoscaled one, whose count is its
// autoscaler's), limits and healthcheck; the release-phase command and the
// rollout settings that are set; every job. A deploy of the same image
// with that file changes none of it.
func Export(a *app.App, r *app.Release) ([]byte, error) {
	doc := fileDoc{Processes: map[string]processDoc{}}
	for name, cmd := range r.Processes {
		p := processDoc{Command: cmd, Limits: limitsOf(r.Limits[name])}
		if proc, ok := a.Processes[name]; ok && proc.Autoscale == nil {
			p.Units = new(proc.Replicas)
		}
		if h, ok := r.Healthchecks[name]; ok {
			p.Healthcheck = &hcDoc{h.Readiness, h.Liveness, h.Startup, h.InitialDelay, h.Period, h.Timeout, h.FailureThreshold}
		}
		doc.Processes[name] = p
	}
	if r.ReleaseCommand != "" {
		doc.Release = new(r.ReleaseCommand)
	}
	if s := r.Rollout; !s.IsZero() {
		doc.Settings = &settingsDoc{MaxSurge: s.MaxSurge, MaxUnavailable: s.MaxUnavailable, History: s.History,
			GracePeriod: app.FormatJobTimeout(s.GracePeriod), DeployTimeout: app.FormatJobTimeout(s.DeployTimeout)}
	}
	if len(r.Jobs) > 0 {
		doc.Jobs = map[string]jobDoc{}
		for name, j := range r.Jobs {
			doc.Jobs[name] = jobDoc{Command: j.Command, Schedule: j.Schedule, TimeZone: j.TimeZone, Concurrency: j.Concurrency,
				Timeout: app.FormatJobTimeout(j.TimeoutSeconds), Retries: j.Retries, Limits: limitsOf(j.Limits)}
		}
	}
	if len(r.Services) > 0 {
		doc.Services = map[string]serviceDoc{}
		for _, sb := range r.Services {
			doc.Services[sb.Service] = serviceDoc{As: sb.Prefix}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# tug.yaml of app %s, from release v%d (tug app export %s --manifest); see docs/manifest.md\n", a.Name, r.Version, a.Name)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func limitsOf(l app.Limits) *limitsDoc {
	if l.IsZero() {
		return nil
	}
	return &limitsDoc{l.CPU, l.Memory, l.CPURequest, l.MemoryRequest}
}
