package main

import (
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
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
