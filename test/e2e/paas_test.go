package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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
	// A unit asks for half of the CPU the freest node has left (the nodes
	// may run the demo's apps and other tests' units): two fit there (the
	// deploy at the end surges one beside the running one), at most two per
	// node do, so 50 never fit.
	free := h.freeCapacity()
	most := int64(0)
	for _, n := range free {
		most = max(most, n.CPU.MilliValue())
	}
	per := most / 2 / 10 * 10
	fit := int64(0)
	for _, n := range free {
		fit += n.CPU.MilliValue() / max(per, 1)
	}
	if per < 100 || fit >= 50 {
		t.Fatalf("the nodes have too little CPU free for this test (a unit of %dm, %d fit): %v", per, fit, free)
	}
	t.Logf("free: %v; a unit asks for %dm, %d fit", free, per, fit)
	h.mustTug("app", "limit", "set", "shop", "-p", "web", "--cpu-request", fmt.Sprintf("%dm", per))
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

// manifestTypes are what the local registry may hold for a test image.
var manifestTypes = strings.Join([]string{
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
}, ", ")

// registryManifest is the manifest reg/repo:ref, its media type and digest.
func registryManifest(t *testing.T, reg, repo, ref string) (body []byte, mediaType, digest string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/v2/%s/manifests/%s", reg, repo, ref), nil)
	req.Header.Set("Accept", manifestTypes)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET manifest %s/%s:%s: %s %v\n%s", reg, repo, ref, resp.Status, err, body)
	}
	sum := sha256.Sum256(body)
	return body, resp.Header.Get("Content-Type"), "sha256:" + hex.EncodeToString(sum[:])
}

// tagManifest points reg/repo:tag at a manifest of the same repository
// (its blobs are there already).
func tagManifest(t *testing.T, reg, repo, tag string, body []byte, mediaType string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/v2/%s/manifests/%s", reg, repo, tag), bytes.NewReader(body))
	req.Header.Set("Content-Type", mediaType)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT manifest %s/%s:%s: %s\n%s", reg, repo, tag, resp.Status, msg)
	}
}

// forgetImage removes image references from every node's containerd, so
// the next unit that names one pulls it again.
func forgetImage(t *testing.T, refs ...string) {
	t.Helper()
	dir := os.Getenv("TUG_CLUSTER_DIR")
	if dir == "" {
		dir = "/var/lib/tug-cluster"
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "node*", "containerd.sock"))
	if len(socks) == 0 {
		t.Fatalf("no node containerd socket under %s", dir)
	}
	for _, sock := range socks {
		// a reference the node never pulled is not an error: rm says so and exits 0
		out, err := exec.Command("ctr", append([]string{"-a", sock, "-n", "k8s.io", "images", "rm"}, refs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr -a %s images rm %v: %v\n%s", sock, refs, err, out)
		}
	}
}

// A release deployed by a tag that has moved since rolls back to the bytes
// its units ran (the registry digest recorded once it rolled out), not to
// what the tag names now.
func TestRollbackRunsRecordedDigest(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	if _, err := exec.LookPath("ctr"); err != nil {
		t.Skip("no ctr to clear the nodes' image cache")
	}
	// A repository of the test's own: the nodes forget only its
	// references (repo@digest), never tug/sample's, which other tests'
	// units run at that moment (the local registry keeps blobs by digest,
	// whatever the repository).
	repo := "tug/sample-" + h.NS
	tag := "moving"
	moving := reg + "/" + repo + ":" + tag
	v1, v1Type, v1Digest := registryManifest(t, reg, "tug/sample", "v1")
	v2, v2Type, v2Digest := registryManifest(t, reg, "tug/sample", "v2")
	if v1Digest == v2Digest {
		t.Fatalf("v1 and v2 have the same manifest %s", v1Digest)
	}
	pinned := reg + "/" + repo + "@" + v2Digest
	// the nodes keep no reference of ours: a unit naming the local images
	// in another test reports their own IDs again
	t.Cleanup(func() {
		forgetImage(t, moving, reg+"/"+repo+"@"+v1Digest, pinned)
	})

	// the tag names v2; the release deployed by it records v2's digest
	tagManifest(t, reg, repo, tag, v2, v2Type)
	forgetImage(t, moving)
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", moving, "--process", "web=sample")
	pods := h.waitUnits("shop", "web", 1, moving)
	if got := strings.TrimSpace(httpGet(t, fmt.Sprintf("http://%s:8080/version", pods[0].Status.PodIP))); got != "v2" {
		t.Fatalf("the unit of %s (on v2) answers %q", moving, got)
	}
	var info struct {
		Image       string `json:"image"`
		ImageDigest string `json:"imageDigest"`
		RunImage    string `json:"runImage"`
	}
	releaseInfo := func(v string) {
		t.Helper()
		r := h.mustTug("release", "info", "shop", v, "-o", "json")
		info.Image, info.ImageDigest, info.RunImage = "", "", ""
		if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil {
			t.Fatalf("release info %s: %v\n%s", v, err, r.Stdout)
		}
	}
	releaseInfo("v1")
	if info.Image != moving || info.ImageDigest != v2Digest || info.RunImage != pinned {
		t.Fatalf("release v1: image %q, digest %q, run image %q; want %s, %s, %s", info.Image, info.ImageDigest, info.RunImage, moving, v2Digest, pinned)
	}

	// the tag moves to v1 and no node holds it any more: deploying it again
	// (roll forward) pulls v1
	tagManifest(t, reg, repo, tag, v1, v1Type)
	forgetImage(t, moving, pinned)
	h.mustTug("app", "deploy", "shop", "--image", moving, "--process", "web=sample")
	pods = h.waitUnits("shop", "web", 1, moving)
	if got := strings.TrimSpace(httpGet(t, fmt.Sprintf("http://%s:8080/version", pods[0].Status.PodIP))); got != "v1" {
		t.Fatalf("after the tag moved to v1, a deploy of it answers %q", got)
	}
	releaseInfo("v2")
	if info.ImageDigest != v1Digest {
		t.Fatalf("release v2 (the moved tag) records digest %q, want v1's %s", info.ImageDigest, v1Digest)
	}

	// the rollback runs what v1 ran, by digest: v2, pulled again
	h.mustTug("release", "rollback", "shop", "v1")
	pods = h.waitUnits("shop", "web", 1, pinned)
	if id := pods[0].Status.ContainerStatuses[0].ImageID; !strings.HasSuffix(id, "@"+v2Digest) {
		t.Errorf("the rolled-back unit runs image ID %q, want v2's digest %s", id, v2Digest)
	}
	if got := strings.TrimSpace(httpGet(t, fmt.Sprintf("http://%s:8080/version", pods[0].Status.PodIP))); got != "v2" {
		t.Errorf("the rolled-back unit answers %q, want v2", got)
	}
	releaseInfo("v3")
	if info.Image != moving || info.ImageDigest != v2Digest {
		t.Errorf("release v3 (the rollback): image %q, digest %q; want the tag and v2's digest", info.Image, info.ImageDigest)
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

// A config change runs the release phase of the code it keeps, with the new
// config, while the units still run the old one; a failing one leaves the
// units on the old config. A rollback runs the restored release's own
// command. Each run is audited; a dry run says what would run.
func TestReleasePhaseOnConfigChangeAndRollback(t *testing.T) {
	h := New(t)
	dir := t.TempDir()
	procfile := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.mustTug("app", "create", "shop")
	h.mustTug("env", "set", "shop", "COLOR=red") // staged: v1
	// phase A prints its own COLOR and the COLOR a web unit at $WEB_IP
	// answers with, and exits 4 when FAIL_PHASE is set
	procfile(`web: sample
release: sh -c 'echo "phase-A COLOR=$COLOR units=$(printf "GET /env?show=COLOR HTTP/1.0\r\n\r\n" | nc -w 5 $WEB_IP 8080 | grep ^COLOR= | tr -d "\r")"; [ -z "$FAIL_PHASE" ] || exit 4'
`)
	r := h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV1}, Dir: dir})
	if r.Code != 0 || !strings.Contains(r.Stderr, "phase-A COLOR=red") {
		t.Fatalf("deploy v2 with phase A: %s", r)
	}
	web := h.waitUnits("shop", "web", 1, sampleV1)

	// env set: the phase sees the new value while the unit still has the old
	r = h.Tug("env", "set", "shop", "COLOR=blue", "WEB_IP="+web[0].Status.PodIP)
	if r.Code != 0 {
		t.Fatalf("env set with a release phase: %s", r)
	}
	marker := "phase-A COLOR=blue units=COLOR=red"
	ran, done := strings.Index(r.Stderr, marker), strings.LastIndex(r.Stderr, "config set")
	if ran < 0 || done < 0 || ran > done {
		t.Fatalf("want %q (the new value in the phase, the old one in the unit) before the config set line:\n%s", marker, r.Stderr)
	}
	old := web[0].Name
	web = h.waitUnits("shop", "web", 1, sampleV1)
	if web[0].Name == old || podEnv(t, web[0], "COLOR") != "blue" {
		t.Fatalf("after env set: unit %s (was %s) has COLOR=%q, want a new unit with blue", web[0].Name, old, podEnv(t, web[0], "COLOR"))
	}

	// a failing phase: exit 17, a JSON result saying why, the units untouched
	r = h.Tug("env", "set", "shop", "COLOR=green", "FAIL_PHASE=1", "-o", "json")
	if r.Code != 17 || !strings.Contains(r.Stderr, "phase-A COLOR=green") {
		t.Fatalf("env set with a failing release phase: want exit 17 after the phase ran, got %s", r)
	}
	var res struct {
		Release      int    `json:"release"`
		Status       string `json:"status"`
		Failure      struct{ Class, Message string }
		ReleasePhase struct {
			Status   string `json:"status"`
			ExitCode *int   `json:"exitCode"`
		} `json:"releasePhase"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("stdout of the failed env set is not a JSON result: %v\n%s", err, r.Stdout)
	}
	if res.Release != 4 || res.Status != "failed" || res.Failure.Class != "release-phase" || res.Failure.Message != "release phase exited with code 4" ||
		res.ReleasePhase.Status != "failed" || res.ReleasePhase.ExitCode == nil || *res.ReleasePhase.ExitCode != 4 {
		t.Errorf("result of the failed env set:\n%s", r.Stdout)
	}
	now := h.waitUnits("shop", "web", 1, sampleV1)
	if now[0].Name != web[0].Name || podEnv(t, now[0], "COLOR") != "blue" {
		t.Errorf("after the failed phase: unit %s with COLOR=%q, want %s with blue", now[0].Name, podEnv(t, now[0], "COLOR"), web[0].Name)
	}
	if r := h.mustTug("run", "shop", "--", "sh", "-c", "echo run-COLOR=$COLOR"); !strings.Contains(r.Stdout, "run-COLOR=blue") {
		t.Errorf("tug run after the failed phase: %s", r)
	}
	statuses := map[int]string{}
	for _, row := range h.releases("shop") {
		statuses[row.Version] = row.Status
	}
	if statuses[4] != "failed" || statuses[3] != "deployed" {
		t.Errorf("release list: %v, want v4 failed and v3 deployed", statuses)
	}

	// phase B comes with v5's code; a rollback to v3 runs v3's (phase A)
	procfile("web: sample\nrelease: sh -c 'echo phase-B'\n")
	r = h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV2, "--dry-run"}, Dir: dir})
	if r.Code != 0 || !strings.Contains(r.Stdout, `release phase: "sh -c 'echo phase-B'" would run`) || strings.Contains(r.Stderr, "phase-B\n") {
		t.Errorf("dry run: want the release phase planned, not run: %s", r)
	}
	r = h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV2}, Dir: dir})
	if r.Code != 0 || !strings.Contains(r.Stderr, "phase-B") {
		t.Fatalf("deploy v5 with phase B: %s", r)
	}
	h.waitUnits("shop", "web", 1, sampleV2)
	// WEB_IP restored with v3's config names a unit that is gone: nc
	// finds nothing, and the phase still prints its COLOR
	r = h.Tug("release", "rollback", "shop", "v3")
	if r.Code != 0 || !strings.Contains(r.Stderr, "phase-A COLOR=blue") || strings.Contains(r.Stderr, "phase-B") {
		t.Fatalf("rollback to v3: want phase A with v3's config, not phase B: %s", r)
	}
	h.waitUnits("shop", "web", 1, sampleV1)
	r = h.Tug("release", "rollback", "shop", "v5", "--skip-release-phase")
	if r.Code != 0 || strings.Contains(r.Stderr, "phase-B") {
		t.Fatalf("rollback --skip-release-phase: %s", r)
	}
	h.waitUnits("shop", "web", 1, sampleV2)

	// audit: started and how it ended, with the exit code; no output, no values
	byPhase := map[string][]string{}
	for _, e := range h.events("TugReleasePhase") {
		if strings.Contains(e.Message, "phase-") || strings.Contains(e.Message, "blue") || strings.Contains(e.Message, "green") ||
			strings.Contains(e.Annotations["tug.dev/command"], "echo") {
			t.Errorf("audit event records output, config or arguments: %q %v", e.Message, e.Annotations)
		}
		byPhase[e.Annotations["tug.dev/release-phase"]] = append(byPhase[e.Annotations["tug.dev/release-phase"]],
			e.Annotations["tug.dev/release"]+"/"+e.Annotations["tug.dev/exit-code"]+"/"+e.Type)
	}
	// v2 deploy, v3 env, v4 failed env, v5 deploy, v6 rollback
	if len(byPhase["started"]) != 5 || len(byPhase["succeeded"]) != 4 || fmt.Sprint(byPhase["failed"]) != "[4/4/Warning]" {
		t.Errorf("release phase audit events: %v", byPhase)
	}
}
