package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A scale the nodes cannot hold fails with exit code 13 and puts the
// previous count back, in the Deployment and the app's record.
func TestScaleIsAllOrNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	h.waitUnits("shop", "web", 1, sampleV1)
	// two nodes of 2 CPUs each hold one unit of 1500m, never 50; the
	// 500m left on each keeps room for other tests running beside this one
	h.mustTug("app", "limit", "set", "shop", "-p", "web", "--cpu-request", "1500m")
	h.waitUnits("shop", "web", 1, sampleV1)

	r := h.Tug("app", "scale", "shop", "web=50")
	if r.Code != 13 {
		t.Fatalf("app scale web=50: want exit 13 (unschedulable), got %s", r)
	}
	if !strings.Contains(r.Stderr, "restored the previous units (web=1)") {
		t.Errorf("the error does not say the count was put back:\n%s", r.Stderr)
	}
	if got := h.deploymentReplicas("shop-web"); got != 1 {
		t.Errorf("Deployment replicas = %d after the failed scale, want 1", got)
	}
	var info struct {
		Processes []struct {
			Name    string `json:"name"`
			Desired int32  `json:"desired"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", "shop", "-o", "json").Stdout), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Processes) != 1 || info.Processes[0].Desired != 1 {
		t.Errorf("app info after the failed scale: %+v", info.Processes)
	}
	h.waitUnits("shop", "web", 1, sampleV1)
	// a later deploy keeps the restored count
	h.mustTug("app", "deploy", "shop", "--image", sampleV2, "--process", "web=sample")
	if got := h.deploymentReplicas("shop-web"); got != 1 {
		t.Errorf("replicas after the next deploy = %d, want 1", got)
	}
}

// A Procfile's release: command runs once per deploy in a one-off unit of
// the new release, before anything rolls out, its output on stderr; when it
// exits non-zero the deploy exits 17, nothing rolls out and the release is
// marked failed.
func TestReleasePhase(t *testing.T) {
	h := New(t)
	dir := t.TempDir()
	procfile := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.mustTug("app", "create", "shop")
	procfile("web: sample\nrelease: sh -c 'echo release-phase-ran-$TUG_RELEASE'\n")
	r := h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV1}, Dir: dir})
	if r.Code != 0 {
		t.Fatalf("deploy with a release phase: %s", r)
	}
	ran, done := strings.Index(r.Stderr, "release-phase-ran-1"), strings.LastIndex(r.Stderr, "deployed")
	if ran < 0 || done < 0 || ran > done {
		t.Errorf("stderr does not show the release phase's output before the rollout's deployed line:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stdout, "release-phase-ran") {
		t.Errorf("the release phase's output went to stdout:\n%s", r.Stdout)
	}
	h.waitUnits("shop", "web", 1, sampleV1)

	procfile("web: sample\nrelease: sh -c 'exit 4'\n")
	r = h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV2}, Dir: dir})
	if r.Code != 17 {
		t.Fatalf("deploy with a failing release phase: want exit 17, got %s", r)
	}
	if !strings.Contains(r.Stderr, "release phase exited with code 4") {
		t.Errorf("stderr does not give the phase's exit code:\n%s", r.Stderr)
	}
	dep, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != sampleV1 {
		t.Errorf("web Deployment image = %s after the failed phase, want %s", img, sampleV1)
	}
	rows := h.releases("shop")
	var v2 *releaseRow
	for i := range rows {
		if rows[i].Version == 2 {
			v2 = &rows[i]
		}
	}
	if v2 == nil || v2.Status != "failed" {
		t.Errorf("release list: v2 = %+v, want failed (all: %+v)", v2, rows)
	}
	h.waitNoRunPods(30 * time.Second)
	h.waitUnits("shop", "web", 1, sampleV1)

	// --skip-release-phase deploys without running it
	r = h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV2, "--skip-release-phase"}, Dir: dir})
	if r.Code != 0 {
		t.Fatalf("deploy --skip-release-phase: %s", r)
	}
	h.waitUnits("shop", "web", 1, sampleV2)
}
