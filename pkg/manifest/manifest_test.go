package manifest

import (
	"reflect"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
)

const full = `processes:
  web:
    command: sample --port $PORT
    units: 2
    limits: {cpu: 500m, memory: 256Mi}
    healthcheck:
      readiness: http:8080/health
      period: 5
  worker:
    command: ./work
    units: 3
release: ./migrate
settings:
  max-surge: 50%
  history: 4
  deploy-timeout: 5m
jobs:
  report:
    command: ./report --all
    schedule: "0 6 * * *"
    time-zone: Europe/Paris
    concurrency: forbid
    timeout: 10m
    retries: 2
`

func TestParseReadsEverySection(t *testing.T) {
	m, err := Parse("tug.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if got := *m.Processes["web"].Command; got != "sample --port $PORT" {
		t.Errorf("web command %q", got)
	}
	if *m.Processes["worker"].Units != 3 || m.Processes["web"].Limits.CPU != "500m" || m.Processes["web"].Healthcheck.Period != 5 {
		t.Errorf("processes: %+v", m.Processes)
	}
	if *m.Release != "./migrate" || m.Settings.MaxSurge != "50%" || m.Settings.History != 4 || m.Settings.DeployTimeout != 300 {
		t.Errorf("release %q settings %+v", *m.Release, m.Settings)
	}
	want := app.Job{Command: "./report --all", Schedule: "0 6 * * *", TimeZone: "Europe/Paris", Concurrency: "forbid", TimeoutSeconds: 600, Retries: 2}
	if !reflect.DeepEqual(m.Jobs["report"], want) {
		t.Errorf("job %+v, want %+v", m.Jobs["report"], want)
	}
}

// Every bad key or value is an input error (exit 2) naming the file, the
// line and the key.
func TestParseErrorsNameKeyAndLine(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"proceses:\n  web: {}\n", "tug.yaml:1: proceses: unknown key"},
		{"processes:\n  web:\n    comand: x\n", "tug.yaml:3: processes.web.comand: unknown key"},
		{"processes:\n  web:\n    units: many\n", "tug.yaml:3: processes.web.units: want a whole number"},
		{"processes:\n  web:\n    units: 50000\n", "tug.yaml:3: processes.web.units: must be from 0 to"},
		{"processes:\n  web:\n    limits:\n      cpu: lots\n", "tug.yaml:4: processes.web.limits: invalid --cpu"},
		{"processes:\n  web:\n    limits:\n      gpu: 1\n", "tug.yaml:4: processes.web.limits.gpu: unknown key"},
		{"processes:\n  Web-1: {}\n", "tug.yaml:2: processes.Web-1: invalid process name"},
		{"processes:\n  web:\n    healthcheck:\n      readiness: ftp:21\n", "tug.yaml:4: processes.web.healthcheck.readiness:"},
		{"settings:\n  max-surge: 300%\n", "tug.yaml:2: settings.max-surge:"},
		{"settings:\n  speed: 3\n", "tug.yaml:2: settings.speed: unknown key"},
		{"jobs:\n  report:\n    command: x\n    schedule: '61 * * * *'\n", "tug.yaml:4: jobs.report.schedule: invalid schedule"},
		{"jobs:\n  report:\n    command: x\n    schedule: '@daily'\n    time-zone: Mars/Base\n", "tug.yaml:5: jobs.report.time-zone: unknown time zone"},
		{"jobs:\n  report:\n    command: x\n", "tug.yaml:2: jobs.report: schedule is required"},
		{"jobs:\n  report:\n    command: x\n    schedule: '@daily'\n    every: 1h\n", "tug.yaml:5: jobs.report.every: unknown key"},
		{"jobs:\n  report:\n    command: x\n    schedule: '@daily'\n    timeout: 1.5s\n", "tug.yaml:5: jobs.report.timeout:"},
		{"processes:\n  web: {}\nprocesses:\n  worker: {}\n", "tug.yaml:3: processes: given twice"},
		{"- web\n", "tug.yaml:1: the file must be a mapping"},
		{"processes: [web]\n", "tug.yaml:1: processes must be a mapping"},
		{"release: {a: b}\n", "tug.yaml:1: release: want a single value"},
	} {
		_, err := Parse("tug.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.doc, err, c.want)
			continue
		}
		if !inputerr.Is(err) {
			t.Errorf("%q: %v is not an input error (exit 2)", c.doc, err)
		}
	}
}

func TestMergeProcessesWithFlagsAndProcfile(t *testing.T) {
	m, err := Parse("tug.yaml", []byte("processes:\n  web:\n    command: serve\n  worker: {}\n  clock:\n    command: tick\n"))
	if err != nil {
		t.Fatal(err)
	}
	// a Procfile gives what tug.yaml leaves out and adds its own types
	pc, _, err := m.MergeProcesses(app.ProcessChange{Set: map[string]string{"worker": "work", "extra": "x"}, Complete: true, From: "Procfile ./Procfile"}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"web": "serve", "worker": "work", "clock": "tick", "extra": "x"}
	if !reflect.DeepEqual(pc.Set, want) || !pc.Complete {
		t.Errorf("with a Procfile: %+v, want %v", pc, want)
	}
	// both giving a type different commands is refused
	if _, _, err := m.MergeProcesses(app.ProcessChange{Set: map[string]string{"web": "other"}, Complete: true, From: "Procfile ./Procfile"}, ""); err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "tug.yaml:3: processes.web.command") {
		t.Errorf("conflicting Procfile: %v", err)
	}
	// flags win, and --remove-process drops a type the file lists
	pc, _, err = m.MergeProcesses(app.ProcessChange{Set: map[string]string{"web": "flagged"}, Remove: []string{"clock"}, From: "--process"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"web": "flagged", "worker": ""}; !reflect.DeepEqual(pc.Set, want) || len(pc.Remove) != 0 {
		t.Errorf("with flags: %+v, want %v", pc, want)
	}
}

// An exported manifest, read back and applied to a deploy of the same
// image, makes a release with the same settings and the same units.
func TestExportRoundTripChangesNothing(t *testing.T) {
	m, err := Parse("tug.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	a := &app.App{Name: "shop", Processes: map[string]app.Process{"web": {Replicas: 1}}}
	pc, release, err := m.MergeProcesses(app.ProcessChange{}, "")
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := m.Change(deploy.WithReleaseCommand(deploy.DeployProcesses("shop:1", pc, nil, true, ""), release))(a, nil, app.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	first.Version = 1
	out, err := Export(a, first)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("exported", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	units := map[string]app.Process{}
	for k, v := range a.Processes {
		units[k] = v
	}
	pc, release, err = again.MergeProcesses(app.ProcessChange{}, "")
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := again.Change(deploy.WithReleaseCommand(deploy.DeployProcesses("shop:1", pc, nil, true, ""), release))(a, first, app.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	second.Version = 1
	for _, f := range []struct {
		name       string
		got, wantV any
	}{
		{"processes", second.Processes, first.Processes}, {"limits", second.Limits, first.Limits},
		{"healthchecks", second.Healthchecks, first.Healthchecks}, {"rollout", second.Rollout, first.Rollout},
		{"jobs", second.Jobs, first.Jobs}, {"release", second.ReleaseCommand, first.ReleaseCommand}, {"units", a.Processes, units},
	} {
		if !reflect.DeepEqual(f.got, f.wantV) {
			t.Errorf("round trip changed %s: %+v, was %+v\n%s", f.name, f.got, f.wantV, out)
		}
	}
	if out2, _ := Export(a, second); string(out2) != string(out) {
		t.Errorf("a second export differs:\n%s\nfirst:\n%s", out2, out)
	}
}

func TestServicesSectionBindsKeepsAndUnbinds(t *testing.T) {
	m, err := Parse("tug.yaml", []byte("services:\n  db: {}\n  orders:\n    as: ORDERS\n"))
	if err != nil {
		t.Fatal(err)
	}
	var resolved []string
	m.ResolveService = func(name, prefix string) (app.ServiceBinding, error) {
		resolved = append(resolved, name+"/"+prefix)
		return app.ServiceBinding{Service: name, Prefix: prefix, Type: "postgresql", Keys: []string{"uri"}}, nil
	}
	cur := []app.ServiceBinding{{Service: "db", Prefix: "DATABASE", Keys: []string{"uri"}}, {Service: "old", Prefix: "OLD"}}
	got, err := m.bindings(cur)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Service != "db" || got[0].Prefix != "DATABASE" || got[1].Service != "orders" || got[1].Prefix != "ORDERS" {
		t.Errorf("bindings: %+v", got)
	}
	if len(resolved) != 1 || resolved[0] != "orders/ORDERS" {
		t.Errorf("resolved from the cluster: %v (only the new one)", resolved)
	}
	for _, bad := range []string{"services:\n  Bad_Name: {}\n", "services:\n  db:\n    as: lower\n", "services:\n  db:\n    prefix: X\n"} {
		if _, err := Parse("tug.yaml", []byte(bad)); !inputerr.Is(err) {
			t.Errorf("%q: %v, want an input error", bad, err)
		}
	}
	m2, _ := Parse("tug.yaml", []byte("services:\n  a: {as: X}\n  b: {as: X}\n"))
	m2.ResolveService = m.ResolveService
	if _, err := m2.bindings(nil); !inputerr.Is(err) {
		t.Errorf("two services under one prefix: %v", err)
	}
}

// A binding the file adds, or gives another prefix, is refused when the
// app's config sets one of its variables, as 'tug service bind' refuses
// it; a binding the release has already is not checked again.
func TestServicesSectionRefusesABindingTheConfigClashesWith(t *testing.T) {
	resolve := func(name, prefix string) (app.ServiceBinding, error) {
		if prefix == "" {
			prefix = "DATABASE"
		}
		return app.ServiceBinding{Service: name, Prefix: prefix, Type: "postgresql", Keys: []string{"host", "type", "uri"}}, nil
	}
	inner := func(base *app.Release) deploy.Change {
		return func(a *app.App, _ *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
			r := *base
			return &r, config, nil
		}
	}
	bound := &app.Release{Services: []app.ServiceBinding{{Service: "db", Prefix: "DATABASE", Keys: []string{"host", "uri"}}}}
	cases := []struct {
		name, file string
		base       *app.Release
		config     app.ConfigMap
		clash      string // the variable named in the refusal; "" none
	}{
		{"new binding, config sets its URL", "services:\n  db: {}\n", &app.Release{}, app.ConfigMap{"DATABASE_URL": "x"}, "DATABASE_URL"},
		{"new binding, config sets a key's variable", "services:\n  db: {as: ORDERS}\n", &app.Release{}, app.ConfigMap{"ORDERS_HOST": "x"}, "ORDERS_HOST"},
		{"new binding, config sets the bindings' root", "services:\n  db: {}\n", &app.Release{}, app.ConfigMap{"SERVICE_BINDING_ROOT": "/x"}, "SERVICE_BINDING_ROOT"},
		{"new binding, no clash", "services:\n  db: {}\n", &app.Release{}, app.ConfigMap{"OTHER": "x", "TYPE": "y"}, ""},
		{"prefix changed onto a config variable", "services:\n  db: {as: ORDERS}\n", bound, app.ConfigMap{"ORDERS_URL": "x"}, "ORDERS_URL"},
		{"binding kept as it was", "services:\n  db: {}\n", bound, app.ConfigMap{"DATABASE_URL": "x"}, ""},
	}
	for _, c := range cases {
		m, err := Parse("tug.yaml", []byte(c.file))
		if err != nil {
			t.Fatal(err)
		}
		m.ResolveService = resolve
		r, _, err := m.Change(inner(c.base))(&app.App{Name: "shop"}, nil, c.config)
		switch {
		case c.clash == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.name, err)
		case c.clash != "" && (!inputerr.Is(err) || !strings.Contains(err.Error(), c.clash) || r != nil):
			t.Errorf("%s: %v (release %v), want an input error naming %s and no release", c.name, err, r, c.clash)
		}
	}
}
