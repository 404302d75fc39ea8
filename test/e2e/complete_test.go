package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestCompletionFromTheCluster(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "create", "blog")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1)
	pods := h.waitUnits("shop", "web", 1, sampleV1)

	apps, directive := h.completions("app", "info", "")
	if strings.Join(apps, " ") != "blog shop" || directive != ":4" {
		t.Errorf("app names: %q %s, want blog shop and no file completion", apps, directive)
	}
	units, _ := h.completions("unit", "kill", "shop", "")
	if len(units) != 1 || units[0] != pods[0].Name {
		t.Errorf("units of shop: %q, want %s", units, pods[0].Name)
	}
	procs, _ := h.completions("app", "restart", "shop", "-p", "")
	if strings.Join(procs, " ") != "web" {
		t.Errorf("processes: %q", procs)
	}
	rels, _ := h.completions("release", "rollback", "shop", "")
	if strings.Join(rels, " ") != "v1" {
		t.Errorf("releases: %q", rels)
	}

	raw, err := clientcmd.LoadFromFile(h.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var contexts []string
	for name := range raw.Contexts {
		contexts = append(contexts, name)
	}
	sort.Strings(contexts)
	got, _ := h.completions("--context", "")
	if strings.Join(got, " ") != strings.Join(contexts, " ") {
		t.Errorf("--context: %q, want %q", got, contexts)
	}
	// With --context (and -n) given, completion asks that context.
	apps, _ = h.completions("--context", raw.CurrentContext, "-n", h.NS, "app", "info", "sh")
	if strings.Join(apps, " ") != "shop" {
		t.Errorf("apps with --context: %q", apps)
	}
	namespaces, _ := h.completions("-n", "")
	found := false
	for _, n := range namespaces {
		found = found || n == h.NS
	}
	if !found {
		t.Errorf("-n does not offer the test's namespace %s: %q", h.NS, namespaces)
	}

	// A context that is not there: nothing offered, nothing on stdout but
	// the directive, exit 0.
	r := h.Tug("__complete", "--context", "nope", "app", "info", "")
	if r.Code != 0 || r.Stdout != ":4\n" {
		t.Errorf("a broken context: %s", r)
	}
}

// TestKubectlPluginCompletion: kubectl runs kubectl_complete-tug, which
// asks kubectl-tug.
func TestKubectlPluginCompletion(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	dir := t.TempDir()
	if err := os.Symlink(env.tug, filepath.Join(dir, "kubectl-tug")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repoRoot(), "plugins", "kubectl_complete-tug"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-tug"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "kubectl_complete-tug"), "app", "info", "")
	cmd.Env = h.tugEnv(nil)
	out, err := cmd.Output()
	if err != nil || string(out) != "shop\n:4\n" {
		t.Errorf("kubectl_complete-tug app info '': %q, %v", out, err)
	}
}
