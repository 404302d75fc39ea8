package e2e

import (
	"strings"
	"testing"
)

// -v 6 shows each request (method, path, status, latency) and never a
// config value: those travel in request bodies, which are not logged.
func TestVerboseLogsRequestsNotSecrets(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	const secret = "s3cr3t-value-never-logged"
	r := h.Tug("-v", "6", "env", "set", "shop", "API_TOKEN="+secret, "--no-restart")
	if r.Code != 0 {
		t.Fatalf("env set: %s", r)
	}
	var requests int
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(l, "trace: ") {
			requests++
			if f := strings.Fields(l); len(f) < 6 {
				t.Errorf("trace line without method, path, status and latency: %q", l)
			}
		}
	}
	if requests == 0 || !strings.Contains(r.Stderr, "/api/v1/namespaces/"+h.NS+"/secrets") {
		t.Errorf("-v 6 logged no requests:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stderr+r.Stdout, secret) {
		t.Errorf("the config value was printed:\n%s", r.Stderr)
	}
	if q := h.Tug("env", "get", "shop"); strings.Contains(q.Stderr, "trace: ") {
		t.Errorf("without -v requests are logged:\n%s", q.Stderr)
	}
}
