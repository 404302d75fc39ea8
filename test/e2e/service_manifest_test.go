package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceBoundFromTugYAML: a tug.yaml's services section binds a
// service with the deploy, app export --manifest writes it back, and a file
// that leaves it out unbinds it.
func TestServiceBoundFromTugYAML(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	const name = "yamlshop"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"bound.yaml":   "services:\n  db: {}\n",
		"unbound.yaml": "services: {}\n",
		"missing.yaml": "services:\n  nosuch: {}\n",
	})
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"], "--manifest", filepath.Join(dir, "bound.yaml"))
	h.routerBody(r, url, "db ok rows=", "")
	if exported := h.mustTug("app", "export", name, "--manifest").Stdout; !strings.Contains(exported, "services:\n  db:\n    as: DATABASE") {
		t.Errorf("export --manifest does not bind db:\n%s", exported)
	}
	before := h.releaseCount(name)
	if res := h.Tug("app", "deploy", name, "--image", imgs["dbapp"], "--manifest", filepath.Join(dir, "missing.yaml")); res.Code != 2 || h.releaseCount(name) != before {
		t.Errorf("a tug.yaml binding a missing service: want exit 2, no release:\n%s", res)
	}
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"], "--manifest", filepath.Join(dir, "unbound.yaml"))
	if env := h.webEnvNames(name); contains(env, "DATABASE_URL") {
		t.Errorf("a tug.yaml without db still binds it: %v", env)
	}
}
