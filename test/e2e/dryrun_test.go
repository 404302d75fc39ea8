package e2e

import (
	"strings"
	"testing"
)

// env set|unset and release rollback with --dry-run say what would change,
// exit 0 and change nothing: no release, no lock, no unit replaced. A dry
// run the API server refuses fails and changes nothing either.
func TestEnvAndRollbackDryRunChangeNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "dry")
	h.mustTug("app", "deploy", "dry", "--image", sampleV1) // v1
	h.mustTug("env", "set", "dry", "COLOR=red-s3cret")     // v2
	h.mustTug("app", "deploy", "dry", "--image", sampleV2) // v3
	h.waitUnits("dry", "web", 1, sampleV2)
	before := h.dryRunState("dry")

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"env", "set", "dry", "COLOR=blue-s3cret", "TOKEN=tok-s3cret", "--dry-run"},
			[]string{"dry run: release v4 of dry would change:", "  web: 1 unit restart", "  env: ~COLOR, +TOKEN (values hidden)"}},
		{[]string{"env", "unset", "dry", "COLOR", "--dry-run"},
			[]string{"  web: 1 unit restart", "  env: -COLOR (values hidden)"}},
		{[]string{"env", "set", "dry", "TOKEN=tok-s3cret", "--no-restart", "--dry-run"},
			[]string{"  release v4 would be stored; it applies at the next deploy (--no-restart: no unit restarts)", "  env: +TOKEN (values hidden)"}},
		{[]string{"release", "rollback", "dry", "--dry-run"},
			[]string{"  web: image " + sampleV2 + " -> " + sampleV1 + ", 1 unit restart"}},
		{[]string{"release", "rollback", "dry", "v1", "--dry-run"},
			[]string{"  web: image " + sampleV2 + " -> " + sampleV1 + ", 1 unit restart", "  env: -COLOR (values hidden)"}},
		{[]string{"release", "rollback", "dry", "v1", "--dry-run", "-o", "json"},
			[]string{`"status": "dry-run"`, `"env: -COLOR (values hidden)"`}},
	} {
		r := h.Tug(c.args...)
		what := "tug " + strings.Join(c.args, " ")
		if r.Code != 0 {
			t.Errorf("%s: %s", what, r)
			continue
		}
		for _, line := range c.want {
			if !strings.Contains(r.Stdout, line) {
				t.Errorf("%s: stdout lacks %q:\n%s", what, line, r.Stdout)
			}
		}
		if !strings.Contains(r.Stderr, "passed server-side validation; nothing changed") {
			t.Errorf("%s: stderr:\n%s", what, r.Stderr)
		}
		if out := r.Stdout + r.Stderr; strings.Contains(out, "s3cret") {
			t.Errorf("%s shows a config value:\n%s", what, out)
		}
		h.assertUnchanged(what, before, h.dryRunState("dry"))
	}

	// The server refuses what tug lets through: each value is within
	// tug's limit, but with COLOR the config no longer fits in the
	// release's Secret (1 MiB). A dry run fails there, as the change would.
	// (An env var name the API refuses cannot be tried: tug's own rule,
	// letters, digits and '_', is stricter than the API's.)
	big := strings.Repeat("x", 1<<20-len("BIG"))
	r := h.TugRun(Run{Args: []string{"env", "set", "dry", "BIG=@-", "--dry-run"}, Stdin: big})
	if r.Code == 0 || r.Code == 2 || !strings.Contains(r.Stderr, "error: ") || strings.Contains(r.Stdout, "would change") {
		t.Errorf("a dry run the server refuses: %s", r)
	}
	t.Logf("refused dry run: exit %d: %s", r.Code, strings.TrimSpace(r.Stderr))
	h.assertUnchanged("a refused dry run", before, h.dryRunState("dry"))
}
