package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/route"
)

// TestMissingNamespace: a namespace that does not exist is said once,
// with what to do, not listed as empty (with a hint to create an app there,
// which would fail).
func TestMissingNamespace(t *testing.T) {
	p := newPrinterFixture(t)
	r := p.run(t, false, "app", "list", "-n", "missing")
	want := "error: namespace \"missing\" does not exist; create it with 'kubectl create namespace missing', or pick another with -n\n"
	if r.code != 1 || r.stdout != "" || r.stderr != want {
		t.Errorf("app list -n missing: exit %d, stdout %q, stderr %q; want 1 and %q", r.code, r.stdout, r.stderr, want)
	}
	// The namespace of the kubeconfig's context exists: an empty list.
	r = p.run(t, false, "app", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "no apps in namespace \"dev\"") {
		t.Errorf("app list: exit %d, stderr %q", r.code, r.stderr)
	}
}

// failedFirstFixture is an app whose first deploy failed: the record has
// the process counts it asked for, v1 is failed, and no Deployment exists
// (the failed release's units were removed).
func failedFirstFixture(t *testing.T) *printerFixture {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "crashy", CreatedAt: p.ago("app-created", 2*time.Minute+30*time.Second),
		LastRelease: 1, Processes: map[string]app.Process{"web": {Replicas: 1}}})
	p.mustCreateRelease(t, &app.Release{App: "crashy", Version: 1, Image: "registry.example/crashy:1", Kind: app.KindDeploy,
		Status: app.StatusFailed, FailReason: "web crashed with exit code 3 (Error)", Author: "alice",
		CreatedAt: p.ago("v1-created", time.Minute+30*time.Second), Processes: map[string]string{"web": ""}}, app.ConfigMap{})
	return p
}

// TestFailedFirstDeployGolden: no unit is shown as pending or wanted; what
// is shown is that none runs and why.
func TestFailedFirstDeployGolden(t *testing.T) {
	p := failedFirstFixture(t)
	p.golden(t, "app-list-failed-first", []string{"tty", "json"}, "app", "list")
	p.golden(t, "app-info-failed-first", []string{"tty", "json"}, "app", "info", "crashy")
	r := p.run(t, true, "app", "list")
	if strings.Contains(r.stdout, "web 0/1") {
		t.Errorf("app list shows a unit that does not exist:\n%s", r.stdout)
	}
}

// digestFixture is an app deployed from source: its image is a digest.
func digestFixture(t *testing.T) (*printerFixture, string) {
	p := newPrinterFixture(t)
	image := "registry.example/shop@sha256:3f2c1e9a0b4d" + strings.Repeat("7", 52)
	p.mustCreateApp(t, &app.App{Name: "shop", CreatedAt: p.ago("app-created", 26*time.Hour+30*time.Minute),
		Release: 12, LastRelease: 12, Image: image,
		Processes: map[string]app.Process{"web": {Replicas: 3}, "worker": {Replicas: 2}}})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 12, Image: image, Kind: app.KindDeploy, Status: app.StatusDeployed,
		Author: "alice", CreatedAt: p.ago("v12-created", 3*time.Hour+30*time.Minute),
		Processes: map[string]string{"web": "", "worker": "shop work"}}, app.ConfigMap{})
	p.add(t, deploymentOf("shop", "web", 3), deploymentOf("shop", "worker", 2))
	return p, image
}

// TestDigestsFit100Columns: on a terminal, tables and app info shorten
// digests to 12 hex digits, so an app deployed from source fits a
// 100-column terminal; piped and -o json keep them whole.
func TestDigestsFit100Columns(t *testing.T) {
	p, image := digestFixture(t)
	p.golden(t, "app-list-digest", []string{"tty"}, "app", "list")
	p.golden(t, "release-list-digest", []string{"tty"}, "release", "list", "shop")
	for _, args := range [][]string{{"app", "list"}, {"app", "info", "shop"}, {"release", "list", "shop"}} {
		r := p.run(t, true, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if n := len([]rune(l)); n > 100 {
				t.Errorf("tug %s: a line of %d columns:\n%s", strings.Join(args, " "), n, l)
			}
		}
		if !strings.Contains(r.stdout, "shop@sha256:3f2c1e9a0b4d") || strings.Contains(r.stdout, image) {
			t.Errorf("tug %s on a terminal: want the digest shortened:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	for _, args := range [][]string{{"app", "list"}, {"app", "list", "-o", "json"}, {"app", "info", "shop"}, {"app", "info", "shop", "-o", "json"}} {
		if r := p.run(t, false, args...); !strings.Contains(r.stdout, image) {
			t.Errorf("tug %s piped: want the whole digest:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	// -o wide is for all there is: whole digests on a terminal too.
	pod := running(unitPod("shop", "web", "shop-web-7d9f-a1", 12, p.ago("unit", time.Hour+30*time.Minute)), true, 0)
	pod.Spec.Containers[0].Image = image
	p.add(t, pod)
	if r := p.run(t, true, "unit", "list", "shop", "-o", "wide"); !strings.Contains(r.stdout, image) {
		t.Errorf("unit list -o wide on a terminal: want the whole digest:\n%s", r.stdout)
	}
}

// TestFailureReportLogLines: "last log line" for one, "last 3 log lines"
// for three (was "last 1 log lines").
func TestFailureReportLogLines(t *testing.T) {
	for n, want := range map[int]string{1: "  last log line:\n    | boom\n", 3: "  last 3 log lines:\n    | boom\n    | boom\n    | boom\n"} {
		ios, _, _, errOut := cli.TestIOStreams()
		logs := make([]string, n)
		for i := range logs {
			logs[i] = "boom"
		}
		printFailure(ios, &deploy.Result{Release: 1, Status: app.StatusFailed,
			Failure: &rollout.Failure{Class: rollout.ClassCrash, Message: "web crashed", Logs: logs}})
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("%d lines: report %q, want %q", n, errOut.String(), want)
		}
	}
}

// TestCacheMissNote: BuildKit's first-build cache miss, printed as an
// ERROR, is followed by a line saying it is expected; other lines pass.
func TestCacheMissNote(t *testing.T) {
	var out strings.Builder
	w := cacheMissNote{&out}
	for _, l := range []string{
		"#4 importing cache manifest from 10.200.0.1:15000/tug/shop:buildcache\n",
		"#4 ERROR: failed to configure registry cache importer: 10.200.0.1:15000/tug/shop:buildcache: not found\n",
		"#5 [1/2] FROM 10.200.0.1:15000/tug/busybox:v1\n",
	} {
		if n, err := io.WriteString(w, l); err != nil || n != len(l) {
			t.Fatalf("write = %d, %v", n, err)
		}
	}
	want := "#4 importing cache manifest from 10.200.0.1:15000/tug/shop:buildcache\n" +
		"#4 ERROR: failed to configure registry cache importer: 10.200.0.1:15000/tug/shop:buildcache: not found\n" +
		"-----> that cache ERROR is expected on a first build: there is no build cache yet, and this build makes one\n" +
		"#5 [1/2] FROM 10.200.0.1:15000/tug/busybox:v1\n"
	if out.String() != want {
		t.Errorf("log =\n%s\nwant\n%s", out.String(), want)
	}
}

// TestEnvGetOneKeySaysHowToShowIt: asking for one variable without
// --show-values says how to print its value; with it, the value alone.
func TestEnvGetOneKeySaysHowToShowIt(t *testing.T) {
	p := shopFixture(t)
	for _, tty := range []bool{true, false} {
		r := p.run(t, tty, "env", "get", "shop", "DATABASE_URL")
		want := "DATABASE_URL is set; its value is hidden: print it with 'tug env get shop DATABASE_URL --show-values'\n"
		if r.code != 0 || r.stderr != want || strings.Contains(r.stdout, "postgres://") || !strings.Contains(r.stdout, "DATABASE_URL") {
			t.Errorf("tty %v: exit %d, stdout %q, stderr %q; want the hint %q", tty, r.code, r.stdout, r.stderr, want)
		}
	}
	if r := p.run(t, false, "env", "get", "shop", "DATABASE_URL", "--show-values"); r.stdout != "postgres://secret\n" || r.stderr != "" {
		t.Errorf("--show-values: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	if r := p.run(t, false, "env", "get", "shop"); r.stderr != "" {
		t.Errorf("every name: no hint wanted, stderr %q", r.stderr)
	}
}

// TestBadDomainSaysWhatIsWrong: the host as typed, and why in words, not
// lower-cased with a regular expression.
func TestBadDomainSaysWhatIsWrong(t *testing.T) {
	p := shopFixture(t)
	r := p.run(t, false, "domain", "add", "shop", "Shop_X.Example.com")
	want := "error: invalid host \"Shop_X.Example.com\": '_' is not allowed: a host has letters, digits, '-' and '.'\nrun 'tug domain add --help' for usage\n"
	if r.code != 2 || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, want)
	}
}

// A traffic change the router has not confirmed says so, never that it is
// served; a staged one says when it applies.
func TestTrafficChangeDoneLine(t *testing.T) {
	for _, tt := range []struct {
		res  deploy.Result
		want string
	}{
		{deploy.Result{Status: app.StatusDeployed, Routing: route.RoutingServed}, "domain added"},
		{deploy.Result{Status: app.StatusDeployed, Routing: route.RoutingAccepted}, "domain added"},
		{deploy.Result{Status: app.StatusDeployed, Routing: route.RoutingPending}, "domain added; applied, not yet confirmed by the router"},
		{deploy.Result{Status: app.StatusStaged}, "domain added; it applies at the first deploy"},
	} {
		if got := changeDone("domain added", &tt.res); got != tt.want {
			t.Errorf("routing %q, status %s: %q, want %q", tt.res.Routing, tt.res.Status, got, tt.want)
		}
	}
}
