package e2e

// Harness: the local registry for builds and the build contexts the build
// tests write.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// registryForBuilds is the local cluster's registry (cluster.sh registry),
// or skips the test when the nodes cannot pull from it yet: a cluster
// started before the registry existed needs a restart (down, up).
func registryForBuilds(t *testing.T, nodesPull bool) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("TUG_E2E_REQUIRED") == "1" {
		skip = t.Fatalf // make test and CI start the registry with the cluster
	}
	reg := os.Getenv("TUG_E2E_REGISTRY")
	if reg == "" {
		out, err := exec.Command(filepath.Join(repoRoot(), "test", "cluster", "cluster.sh"), "registry").Output()
		if err != nil {
			skip("no local registry: %v", err)
		}
		reg = strings.TrimSpace(string(out))
	}
	if _, err := tryGet("http://" + reg + "/v2/"); err != nil {
		skip("the local registry %s does not answer (%v); run test/cluster/cluster.sh up", reg, err)
	}
	dir := os.Getenv("TUG_CLUSTER_DIR")
	if dir == "" {
		dir = "/var/lib/tug-cluster"
	}
	if b, err := os.ReadFile(filepath.Join(dir, "node1", "containerd.toml")); nodesPull && err == nil && !strings.Contains(string(b), "config_path") {
		skip("the nodes' containerd predates the local registry: restart the cluster (make cluster-down cluster-up)")
	}
	return reg
}

func assertNoBuildPods(t *testing.T, h *H) {
	t.Helper()
	pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/kind=build"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("build pod %s left behind", p.Name)
		}
	}
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	if out, err := exec.Command("cp", "-a", from+"/.", to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return to
}

// dockerfileEnv points tug at the BuildKit image test/images builds (tugEnv
// adds a build agent under test, when TUG_BUILD_AGENT_IMAGE says so).
func dockerfileEnv(reg string) []string {
	return []string{"TUG_BUILDKIT_IMAGE=" + reg + "/tug/buildkit:v1"}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// secretWord is a password no output could contain by chance.
func secretWord(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "pw-" + hex.EncodeToString(b)
}
