package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A deploy that names one process type keeps the others (before, an
// --image deploy with --process worker removed web and its Service, and the
// next plain deploy removed worker); one that would remove a type with
// units refuses when piped without --yes, changing nothing, and with --yes
// says what it removed.
func TestDeployKeepsProcessesItDoesNotName(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "keep")
	h.mustTug("app", "deploy", "keep", "--image", sampleV1)
	r := h.mustTug("app", "deploy", "keep", "--image", sampleV1, "--process", "worker=sleep 3600")
	if !strings.Contains(r.Stderr, "processes from --process: worker") {
		t.Errorf("the deploy does not say where its processes come from:\n%s", r)
	}
	h.waitUnits("keep", "web", 1, sampleV1)
	h.waitUnits("keep", "worker", 1, sampleV1)
	if _, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), "keep", metav1.GetOptions{}); err != nil {
		t.Fatalf("web's Service is gone: %v", err)
	}
	// a plain --image deploy keeps both
	h.mustTug("app", "deploy", "keep", "--image", sampleV2)
	h.waitUnits("keep", "web", 1, sampleV2)
	h.waitUnits("keep", "worker", 1, sampleV2)

	// a Procfile that omits worker: refused when piped without --yes
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte("web: /sample\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := h.dryRunState("keep")
	r = h.TugRun(Run{Args: []string{"app", "deploy", "keep", "--image", sampleV1}, Dir: dir})
	if r.Code != 2 || !strings.Contains(r.Stderr, "--yes") || !strings.Contains(r.Stderr, "worker (1 unit)") || !strings.Contains(r.Stderr, "processes from Procfile ./Procfile: web") {
		t.Fatalf("a Procfile removing worker, piped, without --yes: %s", r)
	}
	h.assertUnchanged("a refused removal", before, h.dryRunState("keep"))

	// --remove-process with --yes removes it and says so
	r = h.mustTug("app", "deploy", "keep", "--image", sampleV1, "--remove-process", "worker", "--yes", "-o", "json")
	var res struct {
		Removed   []string `json:"removedProcesses"`
		Processes []struct {
			Name string `json:"name"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r)
	}
	if len(res.Removed) != 1 || res.Removed[0] != "worker" || len(res.Processes) != 1 || res.Processes[0].Name != "web" {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(r.Stderr, "removed worker") {
		t.Errorf("the done line does not name the removed process:\n%s", r.Stderr)
	}
	h.WaitPods("tug.dev/app=keep,tug.dev/process=worker", 90*time.Second, "no worker unit", func(pods []corev1.Pod) bool { return len(pods) == 0 })
}

// --wait-lock: a scale started while a slow deploy holds the lock waits
// for it, says for whom, and succeeds after it; without it the refusal is
// at once.
func TestWaitLockQueuesBehindASlowDeploy(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "queue")
	h.mustTug("app", "deploy", "queue", "--image", sampleV1)
	// a deploy that fails after its timeout (its units never get ready)
	wait, _, _ := h.startTugCmd("app", "deploy", "queue", "--image", "localhost/tug/sample:unready", "--timeout", "15s")
	h.Eventually(30*time.Second, "the deploy holds the lock", func() (bool, error) {
		_, err := h.Client.CoordinationV1().Leases(h.NS).Get(context.Background(), "tug-lock-queue", metav1.GetOptions{})
		return err == nil, nil
	})
	if r := h.Tug("app", "scale", "queue", "web=2"); r.Code == 0 || !strings.Contains(r.Stderr, "is being changed by") {
		t.Fatalf("scale without --wait-lock during a deploy: %s", r)
	}
	r := h.Tug("app", "scale", "queue", "web=2", "--wait-lock", "2m")
	if r.Code != 0 || !strings.Contains(r.Stderr, "waiting for ") {
		t.Fatalf("scale --wait-lock 2m: %s", r)
	}
	if d := wait(); d.Code == 0 {
		t.Fatalf("the unready deploy succeeded: %s", d)
	}
	h.waitUnits("queue", "web", 2, sampleV1)
}

// A SIGINT'd deploy ends with one line: what runs now, and the command
// that finishes or undoes the release; its exit code is 130.
func TestInterruptedDeploySaysTheNextStep(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "intr")
	h.mustTug("app", "deploy", "intr", "--image", sampleV1)
	wait, stderr, cmd := h.startTugCmd("app", "deploy", "intr", "--image", "localhost/tug/sample:unready")
	stderr.WaitFor(t, "new unit", 60*time.Second)
	_ = cmd.Process.Signal(syscall.SIGINT)
	r := wait()
	if r.Code != 130 {
		t.Fatalf("exit %d after SIGINT: %s", r.Code, r)
	}
	want := `interrupted: the rollout of v2 of app "intr" stopped before it finished: v1 runs 1 unit`
	if !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "'tug release rollback intr v2' finishes it, 'tug release rollback intr v1' goes back") {
		t.Fatalf("no next step after SIGINT:\n%s", r.Stderr)
	}
	if rows := h.releases("intr"); len(rows) < 2 || rows[0].Status != "interrupted" {
		t.Errorf("releases after SIGINT: %+v", rows)
	}
}

// The "goes back" command a SIGINT'd deploy prints, run as printed, puts
// back the release that ran before it (v2 on sample:v1), not the one before
// that (v1 on sample:v2).
func TestInterruptedDeployGoesBackAsPrinted(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "back")
	h.mustTug("app", "deploy", "back", "--image", sampleV2)
	h.mustTug("app", "deploy", "back", "--image", sampleV1)
	wait, stderr, cmd := h.startTugCmd("app", "deploy", "back", "--image", "localhost/tug/sample:unready")
	stderr.WaitFor(t, "new unit", 60*time.Second)
	_ = cmd.Process.Signal(syscall.SIGINT)
	r := wait()
	if r.Code != 130 {
		t.Fatalf("exit %d after SIGINT: %s", r.Code, r)
	}
	m := regexp.MustCompile(`'tug ([^']+)' goes back`).FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("no command that goes back after SIGINT:\n%s", r.Stderr)
	}
	back := h.Tug(strings.Fields(m[1])...)
	if back.Code != 0 {
		t.Fatalf("the printed 'tug %s': %s", m[1], back)
	}
	h.waitUnits("back", "web", 1, sampleV1)
	if rows := h.releases("back"); len(rows) == 0 || rows[0].Status != "deployed" || rows[0].Image != sampleV1 && !strings.HasPrefix(rows[0].Image, sampleV1+"@") {
		t.Errorf("releases after going back: %+v", rows)
	}
}
