package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// A namespace that does not exist: one line saying so and what to do,
// exit 1, from a command that creates there and from one that lists.
func TestMissingNamespace(t *testing.T) {
	h := New(t)
	missing := h.NS + "-missing" // never created
	want := "error: namespace \"" + missing + "\" does not exist; create it with 'kubectl create namespace " + missing + "', or pick another with -n\n"
	for _, args := range [][]string{
		{"app", "create", "shop", "-n", missing},
		{"app", "list", "-n", missing},
	} {
		r := h.Tug(args...)
		if r.Code != 1 || r.Stderr != want || r.Stdout != "" {
			t.Errorf("tug %s: %s; want exit 1 and %q", strings.Join(args, " "), r, want)
		}
	}
}

// A first deploy that failed leaves no units, and app list and app info
// say so: no process waiting for units, the failed release named.
func TestFailedFirstDeployShowsNoUnits(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "crashy")
	if r := h.Tug("app", "deploy", "crashy", "--image", "localhost/tug/sample:crash"); r.Code != 11 {
		t.Fatalf("a crashing first deploy: want exit 11, got %s", r)
	}
	var list []struct {
		Name      string            `json:"name"`
		Processes []json.RawMessage `json:"processes"`
		Failed    *struct {
			Version int    `json:"version"`
			Status  string `json:"status"`
		} `json:"failed"`
	}
	r := h.mustTug("app", "list", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("app list -o json: %v\n%s", err, r.Stdout)
	}
	if len(list) != 1 || len(list[0].Processes) != 0 || list[0].Failed == nil || list[0].Failed.Version != 1 || list[0].Failed.Status != "failed" {
		t.Errorf("app list -o json after a failed first deploy: %s", r.Stdout)
	}
	if r := h.mustTug("app", "list"); !strings.Contains(r.Stdout, "none (v1 failed)") || strings.Contains(r.Stdout, "web 0/1") {
		t.Errorf("app list after a failed first deploy:\n%s", r.Stdout)
	}
	if r := h.mustTug("app", "info", "crashy"); !strings.Contains(r.Stdout, "No units: no release is deployed (v1 failed).") || strings.Contains(r.Stdout, "PROCESS") {
		t.Errorf("app info after a failed first deploy:\n%s", r.Stdout)
	}
}

// A unit that never becomes ready is reported once its readiness probe has
// failed its failure threshold of times, with the probe's own output, as
// exit 14.
func TestNeverReadyDeployNamesTheProbeFailures(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "deaf")
	r := h.Tug("app", "deploy", "deaf", "--image", "localhost/tug/sample:unready", "--no-rollback", "-o", "json")
	if r.Code != 14 {
		t.Fatalf("want exit 14: %s", r)
	}
	var res struct {
		Failure struct {
			Class   string `json:"class"`
			Process string `json:"process"`
			Message string `json:"message"`
		} `json:"failure"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r)
	}
	f := res.Failure
	if f.Class != "unready" || f.Process != "web" || !strings.Contains(f.Message, "its readiness check") || !strings.Contains(f.Message, "Readiness probe failed") {
		t.Fatalf("failure = %+v; want the probe's failures and its output", f)
	}
}
