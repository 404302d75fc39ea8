package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeployFromSourceBuildsChangesAndRollsBack(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	src := copyDir(t, filepath.Join(repoRoot(), "examples", "static-site"))
	h.mustTug("app", "create", "site")
	deploy := func(extra ...string) Result {
		return h.TugRun(Run{Args: append([]string{"app", "deploy", "site", "--timeout", "2m"}, extra...), Dir: src})
	}
	r := deploy("--builder", reg+"/tug/builder-static:v1", "--repository", reg+"/e2e/"+h.NS+"/site")
	if r.Code != 0 {
		t.Fatalf("first deploy from source: %s", r)
	}
	if !strings.Contains(r.Stderr, "wrote public/index.html") {
		t.Errorf("the build's log was not shown:\n%s", r.Stderr)
	}
	svc, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), "site", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	serves := func(want string) {
		t.Helper()
		h.Eventually(60*time.Second, "the site serves "+want, func() (bool, error) {
			body, err := tryGet(fmt.Sprintf("http://%s/", svc.Spec.ClusterIP))
			return strings.Contains(body, want), err
		})
	}
	serves("Hello from a build")
	info := h.Tug("app", "info", "site")
	if !strings.Contains(info.Stdout, "builder "+reg+"/tug/builder-static:v1") {
		t.Errorf("app info does not show the builder:\n%s", info)
	}

	// a changed file: the remembered builder and repository build it
	if err := os.WriteFile(filepath.Join(src, "message.txt"), []byte("Second edition\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := deploy(); r.Code != 0 {
		t.Fatalf("second deploy from source: %s", r)
	}
	serves("Second edition")

	// a rollback runs the first build again, by digest
	if r := h.Tug("release", "rollback", "site"); r.Code != 0 {
		t.Fatalf("rollback: %s", r)
	}
	serves("Hello from a build")
	assertNoBuildPods(t, h)
}

// A build step that fails: its exit code, its last lines, a failed release
// in the history, and the release that ran before still running.
func TestDeployFromSourceBuildFailure(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, false)
	h.deployShop("shop", 1)
	before, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(src, "build.sh"), []byte("echo compiling\necho 'error: broken' >&2\nexit 3\n"), 0o644))
	must(os.WriteFile(filepath.Join(src, "Procfile"), []byte("web: httpd -f -p $PORT -h /app\n"), 0o644))
	r := h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--builder", "localhost/tug/builder-static:v1", "--repository", reg + "/e2e/" + h.NS + "/shop"}, Dir: src})
	if r.Code != 16 {
		t.Fatalf("a failing build: want exit 16, got %s", r)
	}
	if !strings.Contains(r.Stderr, "error: broken") || !strings.Contains(r.Stderr, "exit 3") {
		t.Errorf("the failing log lines are not shown:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, "release v2 failed") {
		t.Errorf("the failed release is not named:\n%s", r.Stderr)
	}
	after, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation || after.Spec.Template.Spec.Containers[0].Image != sampleV1 {
		t.Errorf("a failed build changed the Deployment: generation %d -> %d, image %s", before.Generation, after.Generation, after.Spec.Template.Spec.Containers[0].Image)
	}
	var rels []struct {
		Version    int    `json:"version"`
		Status     string `json:"status"`
		FailReason string `json:"failReason"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("release", "list", "shop", "-o", "json").Stdout), &rels); err != nil {
		t.Fatal(err)
	}
	if len(rels) != 2 || rels[0].Version != 2 || rels[0].Status != "failed" || !strings.Contains(rels[0].FailReason, "build") ||
		rels[1].Version != 1 || rels[1].Status != "deployed" {
		t.Errorf("release list after a failed build = %+v", rels)
	}
	info := h.mustTug("app", "info", "shop")
	if !strings.Contains(info.Stdout, "v1") {
		t.Errorf("app info does not say v1 still runs:\n%s", info.Stdout)
	}
	assertNoBuildPods(t, h)
}

// Ctrl-C (and SIGTERM) at any point of a build leaves no build pod and
// changes nothing that runs.
func TestDeployFromSourceInterruptedLeavesNoPods(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, false)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "build.sh"), []byte("echo building-slowly\nsleep 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "Procfile"), []byte("web: httpd -f -p $PORT -h /app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustTug("app", "create", "slow")
	const rounds = 20
	for i := 0; i < rounds; i++ {
		// Alternate: while the build step runs, and as soon as the source
		// is packed (the pod may not exist yet).
		wait := "building-slowly"
		if i%2 == 1 {
			wait = "source:"
		}
		sig := os.Interrupt
		if i == rounds-1 {
			sig = syscall.SIGTERM
		}
		h.interrupt(i, Interrupt{Args: []string{"app", "deploy", "slow", "--builder", "localhost/tug/builder-static:v1", "--repository", reg + "/e2e/" + h.NS + "/slow"},
			Dir: src, WaitFor: wait, Timeout: 90 * time.Second, Signal: sig,
			// said as such, not as client-go's raw "E1207 ... UnhandledError" lines
			Then: "interrupted: build cancelled; nothing was deployed", Not: "UnhandledError"})
	}
	h.WaitPods("tug.dev/kind=build", 90*time.Second, "no build pods left", func(pods []corev1.Pod) bool { return len(pods) == 0 })
	deps, err := h.Client.AppsV1().Deployments(h.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 0 {
		t.Errorf("an interrupted build deployed something: %d Deployments", len(deps.Items))
	}
}
