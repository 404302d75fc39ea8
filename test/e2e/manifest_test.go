package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const shopManifest = `# two processes, their units and a job, in one deploy
processes:
  web:
    command: sample
    units: 2
    limits:
      memory: 96Mi
  worker:
    command: sleep 3600
    units: 1
jobs:
  report:
    command: echo report
    schedule: "30 4 * * *"
    time-zone: Europe/Paris
    concurrency: forbid
settings:
  history: 5
`

// tug.yaml with two processes, their units and a job is applied by one
// deploy; a bad key exits 2 naming its line and changes nothing; the file
// 'app export --manifest' writes, deployed again, changes nothing.
func TestManifestDeployAndExportRoundTrip(t *testing.T) {
	h := New(t)
	dir := t.TempDir()
	h.mustTug("app", "create", "shop")

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(shopManifest, "    units: 1", "    unit: 1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.Tug("app", "deploy", "shop", "--image", sampleV1, "--manifest", bad)
	if r.Code != 2 || !strings.Contains(r.Stderr, "bad.yaml:10: processes.worker.unit: unknown key") {
		t.Fatalf("a tug.yaml with a bad key: %s", r)
	}
	if n := h.releaseCount("shop"); n != 0 {
		t.Fatalf("a bad tug.yaml made %d releases", n)
	}

	if err := os.WriteFile(filepath.Join(dir, "tug.yaml"), []byte(shopManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV1}, Dir: dir})
	if r.Code != 0 || !strings.Contains(r.Stderr, "read ./tug.yaml") {
		t.Fatalf("deploy with ./tug.yaml: %s", r)
	}
	if n := h.releaseCount("shop"); n != 1 {
		t.Fatalf("the deploy made %d releases, want 1", n)
	}
	h.waitUnits("shop", "web", 2, sampleV1)
	h.waitUnits("shop", "worker", 1, sampleV1)
	ctx := context.Background()
	web, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil || web.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String() != "96Mi" {
		t.Fatalf("web's limits: %v %+v", err, web.Spec.Template.Spec.Containers[0].Resources)
	}
	cj, err := h.Client.BatchV1().CronJobs(h.NS).Get(ctx, "shop-job-report", metav1.GetOptions{})
	if err != nil || cj.Spec.Schedule != "30 4 * * *" || cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Europe/Paris" || cj.Spec.ConcurrencyPolicy != "Forbid" {
		t.Fatalf("the job's CronJob: %v %+v", err, cj)
	}

	exported := h.mustTug("app", "export", "shop", "--manifest").Stdout
	file := filepath.Join(dir, "exported.yaml")
	if err := os.WriteFile(file, []byte(exported), 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.Tug("app", "deploy", "shop", "--image", sampleV1, "--manifest", file, "--dry-run")
	// nothing but the restart every release makes (its pod template)
	for _, line := range []string{"web: 2 units restart\n", "worker: 1 unit restart\n"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, line) {
			t.Fatalf("a dry run of the exported tug.yaml should change nothing (%q): %s", line, r)
		}
	}
	h.mustTug("app", "deploy", "shop", "--image", sampleV1, "--manifest", file)
	again := h.mustTug("app", "export", "shop", "--manifest").Stdout
	if strip := func(s string) string { return s[strings.Index(s, "\n")+1:] }; strip(again) != strip(exported) {
		t.Fatalf("deploying the exported tug.yaml changed the app:\nbefore:\n%s\nafter:\n%s", exported, again)
	}
	web2, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil || *web2.Spec.Replicas != 2 || web2.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String() != "96Mi" {
		t.Fatalf("web after the round trip: %v", err)
	}

	// all or nothing: a deploy of the file that fails rolls back its units
	// and jobs with its release
	changed := strings.NewReplacer("    units: 2", "    units: 3", `"30 4 * * *"`, "'@hourly'").Replace(shopManifest)
	if err := os.WriteFile(filepath.Join(dir, "changed.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := h.Tug("app", "deploy", "shop", "--image", "localhost/tug/sample:crash", "--manifest", filepath.Join(dir, "changed.yaml"), "--timeout", "60s"); r.Code == 0 {
		t.Fatalf("a deploy of a crashing image succeeded: %s", r)
	}
	if after := h.mustTug("app", "export", "shop", "--manifest").Stdout; after[strings.Index(after, "\n")+1:] != again[strings.Index(again, "\n")+1:] {
		t.Fatalf("a failed deploy of a tug.yaml left its changes:\nbefore:\n%s\nafter:\n%s", again, after)
	}
	if cj, err := h.Client.BatchV1().CronJobs(h.NS).Get(ctx, "shop-job-report", metav1.GetOptions{}); err != nil || cj.Spec.Schedule != "30 4 * * *" {
		t.Fatalf("the failed deploy left the job's new schedule: %v %+v", err, cj.Spec)
	}
	h.waitUnits("shop", "web", 2, sampleV1)
}

// --dry-run of a deploy whose tug.yaml changes units, a limit and the
// history lists those changes (it said "web: unchanged") and changes
// nothing.
func TestManifestDryRunListsItsChanges(t *testing.T) {
	h := New(t)
	dir := t.TempDir()
	h.mustTug("app", "create", "plan")
	h.mustTug("app", "deploy", "plan", "--image", sampleV1, "--process", "web=sample")
	manifest := "processes:\n  web:\n    command: sample\n    units: 2\n    limits:\n      cpu: 300m\nsettings:\n  history: 7\n"
	if err := os.WriteFile(filepath.Join(dir, "tug.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	before := h.dryRunState("plan")
	r := h.TugRun(Run{Args: []string{"app", "deploy", "plan", "--image", sampleV1, "--dry-run", "-o", "json"}, Dir: dir})
	if r.Code != 0 {
		t.Fatalf("dry run: %s", r)
	}
	var res struct {
		Plan []string `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r)
	}
	all := strings.Join(res.Plan, "\n")
	for _, want := range []string{"web: ", "units 1 -> 2", "limits (none) -> cpu=300m", "settings: history 10 (default) -> 7"} {
		if !strings.Contains(all, want) {
			t.Errorf("plan %q does not say %q", res.Plan, want)
		}
	}
	h.assertUnchanged("a dry run", before, h.dryRunState("plan"))
}
