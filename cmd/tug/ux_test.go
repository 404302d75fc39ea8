package main

import (
	"strings"
	"testing"
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
