package app

import (
	"maps"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/inputerr"
)

func shopApp() *App {
	return &App{Name: "shop", Processes: map[string]Process{
		"web":    {Replicas: 2},
		"worker": {Replicas: 1, Autoscale: &Autoscale{Min: 1, Max: 4, CPUPercent: 80}},
	}}
}

// wantErr checks err against a substring ("" for none) and, when asked,
// that it is an input error (exit 2).
func wantErr(t *testing.T, err error, want string, isUsage bool) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error %v, want none", err)
	case want == "":
		return
	case err == nil:
		t.Fatalf("no error, want %q", want)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("error %q, want it to contain %q", err, want)
	case inputerr.Is(err) != isUsage:
		t.Fatalf("inputerr.Is(%v) = %v, want %v", err, inputerr.Is(err), isUsage)
	}
}

func TestSetLimitsOptions(t *testing.T) {
	tests := []struct {
		name     string
		opts     SetLimitsOptions
		base     map[string]Limits
		want     Limits
		validErr string // from Validate, an input error
		applyErr string
		usageErr bool // applyErr is an input error
	}{
		{name: "new", opts: SetLimitsOptions{Process: "web", Limits: Limits{CPU: "500m"}}, want: Limits{CPU: "500m"}},
		{name: "merges", opts: SetLimitsOptions{Process: "web", Limits: Limits{Memory: "256Mi"}},
			base: map[string]Limits{"web": {CPU: "1", MemoryRequest: "128Mi"}}, want: Limits{CPU: "1", Memory: "256Mi", MemoryRequest: "128Mi"}},
		{name: "replaces", opts: SetLimitsOptions{Process: "web", Limits: Limits{CPU: "2"}},
			base: map[string]Limits{"web": {CPU: "1"}}, want: Limits{CPU: "2"}},
		{name: "merged request above limit", opts: SetLimitsOptions{Process: "web", Limits: Limits{Memory: "64Mi"}},
			base: map[string]Limits{"web": {MemoryRequest: "128Mi"}}, applyErr: "--memory-request 128Mi is more than --memory 64Mi", usageErr: true},
		{name: "unknown process", opts: SetLimitsOptions{Process: "cron", Limits: Limits{CPU: "1"}}, applyErr: `app "shop" has no process "cron"`, usageErr: true},
		{name: "nothing", opts: SetLimitsOptions{Process: "web"}, validErr: "nothing to set"},
		{name: "no process", opts: SetLimitsOptions{Limits: Limits{CPU: "1"}}, validErr: "which process? give -p PROCESS"},
		{name: "bad process", opts: SetLimitsOptions{Process: "Web", Limits: Limits{CPU: "1"}}, validErr: `invalid process name "Web"`},
		{name: "bad app", opts: SetLimitsOptions{App: "Shop", Process: "web", Limits: Limits{CPU: "1"}}, validErr: `invalid app name "Shop"`},
		{name: "bad quantity", opts: SetLimitsOptions{Process: "web", Limits: Limits{CPU: "lots"}}, validErr: `invalid --cpu "lots"`},
		{name: "request above limit", opts: SetLimitsOptions{Process: "web", Limits: Limits{CPU: "1", CPURequest: "2"}}, validErr: "--cpu-request 2 is more than --cpu 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.App == "" {
				tt.opts.App = "shop"
			}
			err := tt.opts.Validate()
			wantErr(t, err, tt.validErr, true)
			if err != nil {
				return
			}
			base := maps.Clone(tt.base)
			r := &Release{Limits: base}
			err = tt.opts.Apply(shopApp(), r)
			wantErr(t, err, tt.applyErr, tt.usageErr)
			if err != nil {
				return
			}
			if got := r.Limits[tt.opts.Process]; got != tt.want {
				t.Errorf("limits = %+v, want %+v", got, tt.want)
			}
			if !maps.Equal(base, tt.base) {
				t.Errorf("the base release's limits changed: %v", base)
			}
		})
	}
}

func TestUnsetLimitsOptions(t *testing.T) {
	full := Limits{CPU: "1", CPURequest: "500m", Memory: "256Mi", MemoryRequest: "128Mi"}
	tests := []struct {
		name        string
		cpu, memory bool
		proc        string
		want        Limits
		gone        bool // the process has no limits entry left
		err         string
	}{
		{name: "both by default", gone: true},
		{name: "cpu", cpu: true, want: Limits{Memory: "256Mi", MemoryRequest: "128Mi"}},
		{name: "memory", memory: true, want: Limits{CPU: "1", CPURequest: "500m"}},
		{name: "both", cpu: true, memory: true, gone: true},
		{name: "unknown process", proc: "cron", err: `has no process "cron"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proc := tt.proc
			if proc == "" {
				proc = "web"
			}
			o := UnsetLimitsOptions{App: "shop", Process: proc, CPU: tt.cpu, Memory: tt.memory}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			base := map[string]Limits{"web": full, "worker": {CPU: "2"}}
			r := &Release{Limits: maps.Clone(base)}
			err := o.Apply(shopApp(), r)
			wantErr(t, err, tt.err, true)
			if err != nil {
				return
			}
			got, ok := r.Limits["web"]
			if ok == tt.gone || got != tt.want {
				t.Errorf("limits = %+v (present %v), want %+v (present %v)", got, ok, tt.want, !tt.gone)
			}
			if r.Limits["worker"] != (Limits{CPU: "2"}) {
				t.Errorf("another process's limits changed: %+v", r.Limits["worker"])
			}
		})
	}
	wantErr(t, UnsetLimitsOptions{App: "shop"}.Validate(), "which process?", true)
}

func TestHealthcheckOptions(t *testing.T) {
	h := Healthcheck{Readiness: "http:8080/healthz", Period: 5}
	set := SetHealthcheckOptions{App: "shop", Process: "worker", Healthcheck: h}
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	base := map[string]Healthcheck{"web": {Liveness: "tcp:8080"}}
	r := &Release{Healthchecks: maps.Clone(base)}
	if err := set.Apply(shopApp(), r); err != nil {
		t.Fatal(err)
	}
	if r.Healthchecks["worker"] != h || r.Healthchecks["web"] != base["web"] {
		t.Errorf("healthchecks = %+v", r.Healthchecks)
	}

	for _, tt := range []struct {
		name string
		opts SetHealthcheckOptions
		err  string
	}{
		{"no probe", SetHealthcheckOptions{App: "shop", Process: "web", Healthcheck: Healthcheck{Period: 5}}, "no probe given"},
		{"bad probe", SetHealthcheckOptions{App: "shop", Process: "web", Healthcheck: Healthcheck{Liveness: "udp:53"}}, `unknown kind "udp"`},
		{"negative", SetHealthcheckOptions{App: "shop", Process: "web", Healthcheck: Healthcheck{Liveness: "tcp:80", Period: -1}}, "--period must not be negative"},
		{"no process", SetHealthcheckOptions{App: "shop", Healthcheck: h}, "which process?"},
	} {
		t.Run(tt.name, func(t *testing.T) { wantErr(t, tt.opts.Validate(), tt.err, true) })
	}
	wantErr(t, SetHealthcheckOptions{App: "shop", Process: "cron", Healthcheck: h}.Apply(shopApp(), &Release{}), `has no process "cron"`, true)

	unset := UnsetHealthcheckOptions{App: "shop", Process: "web"}
	if err := unset.Validate(); err != nil {
		t.Fatal(err)
	}
	r = &Release{Healthchecks: maps.Clone(base)}
	if err := unset.Apply(shopApp(), r); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Healthchecks["web"]; ok || len(base) != 1 {
		t.Errorf("after unset: %+v (base %+v)", r.Healthchecks, base)
	}
	// a process without checks is not an input error: the app's state says so
	wantErr(t, unset.Apply(shopApp(), r), `process "web" of app "shop" has no healthcheck`, false)
}

func TestProbeDefaults(t *testing.T) {
	tests := []struct {
		in, want Healthcheck
	}{
		{Healthcheck{}, Healthcheck{Period: 10, Timeout: 1, FailureThreshold: 3}},
		{Healthcheck{InitialDelay: 4, Period: 5, Timeout: 2, FailureThreshold: 1}, Healthcheck{InitialDelay: 4, Period: 5, Timeout: 2, FailureThreshold: 1}},
		{Healthcheck{Liveness: "tcp:80", Period: 7}, Healthcheck{Liveness: "tcp:80", Period: 7, Timeout: 1, FailureThreshold: 3}},
	}
	for _, tt := range tests {
		if got := tt.in.WithDefaults(); got != tt.want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	if p, n := ProbeTiming(0, 0); p != 10 || n != 3 {
		t.Errorf("ProbeTiming(0, 0) = %d, %d; want 10, 3", p, n)
	}
	if p, n := ProbeTiming(2, 5); p != 2 || n != 5 {
		t.Errorf("ProbeTiming(2, 5) = %d, %d; want 2, 5", p, n)
	}
}

func TestSetAutoscaleOptions(t *testing.T) {
	tests := []struct {
		name     string
		opts     SetAutoscaleOptions
		want     Autoscale
		replicas int32
		err      string
		usageErr bool
	}{
		{name: "raises to min", opts: SetAutoscaleOptions{Process: "web", Min: 3, Max: 6, CPU: "70%"}, want: Autoscale{Min: 3, Max: 6, CPUPercent: 70}, replicas: 3},
		{name: "keeps more than min", opts: SetAutoscaleOptions{Process: "web", Min: 1, Max: 6, CPU: "50"}, want: Autoscale{Min: 1, Max: 6, CPUPercent: 50}, replicas: 2},
		{name: "bad cpu", opts: SetAutoscaleOptions{Process: "web", Min: 1, Max: 2, CPU: "lots"}, err: `invalid --cpu "lots": want a percentage such as 70%`, usageErr: true},
		{name: "max below min", opts: SetAutoscaleOptions{Process: "web", Min: 3, Max: 2, CPU: "80%"}, err: "--max 2 is less than --min 3", usageErr: true},
		{name: "min zero", opts: SetAutoscaleOptions{Process: "web", Min: 0, Max: 2, CPU: "80%"}, err: "--min must be at least 1", usageErr: true},
		{name: "cpu too high", opts: SetAutoscaleOptions{Process: "web", Min: 1, Max: 2, CPU: "2000%"}, err: "from 1% to 1000%", usageErr: true},
		{name: "no process", opts: SetAutoscaleOptions{Min: 1, Max: 2, CPU: "80%"}, err: "which process?", usageErr: true},
		{name: "unknown process", opts: SetAutoscaleOptions{Process: "cron", Min: 1, Max: 2, CPU: "80%"}, err: `has no process "cron"`, usageErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.App = "shop"
			a := shopApp()
			err := tt.opts.Apply(a)
			wantErr(t, err, tt.err, tt.usageErr)
			if err != nil {
				if a.Processes["web"].Autoscale != nil {
					t.Errorf("a refused change was made: %+v", a.Processes["web"])
				}
				return
			}
			if err := tt.opts.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			p := a.Processes[tt.opts.Process]
			if p.Autoscale == nil || *p.Autoscale != tt.want || p.Replicas != tt.replicas {
				t.Errorf("process = %+v (autoscale %+v), want %+v and %d units", p, p.Autoscale, tt.want, tt.replicas)
			}
		})
	}
}

func TestUnsetAutoscale(t *testing.T) {
	a := shopApp()
	three := int32(3)
	if err := a.UnsetAutoscale("worker", &three); err != nil {
		t.Fatal(err)
	}
	if p := a.Processes["worker"]; p.Autoscale != nil || p.Replicas != 3 {
		t.Errorf("worker = %+v", p)
	}
	a = shopApp()
	if err := a.UnsetAutoscale("worker", nil); err != nil || a.Processes["worker"].Replicas != 1 {
		t.Errorf("without a live count: err %v, worker %+v", err, a.Processes["worker"])
	}
	wantErr(t, a.UnsetAutoscale("web", nil), `process "web" of app "shop" does not autoscale`, false)
	wantErr(t, a.UnsetAutoscale("cron", nil), `has no process "cron"`, true)
}

func TestParseTags(t *testing.T) {
	tests := []struct {
		args []string
		want map[string]string
		err  string
	}{
		{args: []string{"disk=ssd"}, want: map[string]string{"disk": "ssd"}},
		{args: []string{"disk=ssd", "example.com/zone=a"}, want: map[string]string{"disk": "ssd", "example.com/zone": "a"}},
		{args: []string{"gpu="}, err: `invalid tag value ""`},
		{args: []string{"disk=ssd", "disk=hdd"}, want: map[string]string{"disk": "hdd"}},
		{args: []string{"disk"}, err: `"disk" is not KEY=VALUE`},
		{args: []string{"bad key=x"}, err: "bad key"},
		{args: []string{"disk=not ok"}, err: "not ok"},
		{args: []string{"tug.dev/pool=gpu"}, err: "set the pool with 'tug app pool set', not a tag"},
	}
	for _, tt := range tests {
		got, err := ParseTags(tt.args)
		wantErr(t, err, tt.err, true)
		if err == nil && !maps.Equal(got, tt.want) {
			t.Errorf("ParseTags(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestSetAndUnsetTags(t *testing.T) {
	base := map[string]string{"disk": "ssd", "zone": "a"}
	r := &Release{Tags: maps.Clone(base)}
	r.SetTags(map[string]string{"zone": "b", "gpu": "yes"})
	if want := map[string]string{"disk": "ssd", "zone": "b", "gpu": "yes"}; !maps.Equal(r.Tags, want) {
		t.Errorf("after set: %v, want %v", r.Tags, want)
	}
	empty := &Release{}
	empty.SetTags(map[string]string{"disk": "ssd"})
	if empty.Tags["disk"] != "ssd" {
		t.Errorf("set on a release without tags: %v", empty.Tags)
	}

	r = &Release{Tags: maps.Clone(base)}
	if err := r.UnsetTags("shop", []string{"zone"}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"disk": "ssd"}; !maps.Equal(r.Tags, want) {
		t.Errorf("after unset: %v, want %v", r.Tags, want)
	}
	// one missing key refuses the whole change
	r = &Release{Tags: maps.Clone(base)}
	wantErr(t, r.UnsetTags("shop", []string{"disk", "color"}), `app "shop" has no tag "color"`, false)
	if !maps.Equal(r.Tags, base) {
		t.Errorf("a refused unset changed the tags: %v", r.Tags)
	}
}

func TestLifecycle(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	a := shopApp()
	if err := a.Stop(""); err != nil {
		t.Fatal(err)
	}
	if !a.Processes["web"].Stopped || !a.Processes["worker"].Stopped {
		t.Errorf("stop all: %+v", a.Processes)
	}
	if err := a.Start("web"); err != nil {
		t.Fatal(err)
	}
	if a.Processes["web"].Stopped || !a.Processes["worker"].Stopped || a.Processes["web"].Replicas != 2 {
		t.Errorf("start web: %+v", a.Processes)
	}
	if err := a.Restart("worker", at); err != nil {
		t.Fatal(err)
	}
	if got := a.Processes["worker"].RestartedAt; got != "2026-01-02T02:04:05.000000006Z" || a.Processes["web"].RestartedAt != "" {
		t.Errorf("restart worker: %+v", a.Processes)
	}
	wantErr(t, a.Stop("cron"), `has no process "cron"`, true)
	wantErr(t, (&App{Name: "empty"}).Restart("", at), `app "empty" has no processes yet`, true)
}

func TestValidateAppProcess(t *testing.T) {
	tests := []struct {
		app, proc string
		required  bool
		err       string
	}{
		{"shop", "web", true, ""},
		{"shop", "", false, ""},
		{"shop", "", true, "which process? give -p PROCESS"},
		{"Shop", "web", true, `invalid app name "Shop"`},
		{"shop", "my-web", false, `invalid process name "my-web"`},
		{"shop", "run", true, `process name "run" is reserved`},
	}
	for _, tt := range tests {
		wantErr(t, ValidateAppProcess(tt.app, tt.proc, tt.required), tt.err, true)
	}
}

func TestPlatformVariablesCannotBeConfigured(t *testing.T) {
	for _, name := range []string{"TUG_APP", "TUG_PROCESS", "TUG_RELEASE"} {
		err := ValidateEnvName(name)
		if !inputerr.Is(err) || !strings.Contains(err.Error(), "set by tug in every unit") {
			t.Errorf("ValidateEnvName(%s) = %v, want an input error", name, err)
		}
	}
	if err := ValidateEnvName("TUG_OTHER"); err != nil {
		t.Errorf("ValidateEnvName(TUG_OTHER) = %v", err)
	}
}
