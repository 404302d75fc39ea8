package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// In a folder whose tug.yaml names the app, 'tug app info' needs no name
// (it said "missing APP"), and stderr says where the app came from.
func TestAppInfoInTheAppsFolderNeedsNoName(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "here")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tug.yaml"), []byte("app: here\nnamespace: "+h.NS+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.TugRun(Run{Args: []string{"app", "info", "-o", "json"}, Dir: sub})
	if r.Code != 0 || !strings.Contains(r.Stderr, "app here in namespace "+h.NS+" from ../tug.yaml") {
		t.Fatalf("app info in the app's folder: %s", r)
	}
	var info struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil || info.Name != "here" || info.Namespace != h.NS {
		t.Fatalf("app info: %+v (%v)", info, err)
	}
}

// A held lock: its own exit code (19) and, with -o json, an error object;
// a --no-wait deploy says "applied", not "deployed".
func TestHeldLockAndNoWaitSayWhatIsTrue(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "busy")
	r := h.mustTug("app", "deploy", "busy", "--image", sampleV1, "--no-wait", "-o", "json")
	var res struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res.Status != "applied" {
		t.Fatalf("deploy --no-wait -o json: status %q (%v): %s", res.Status, err, r)
	}
	h.waitUnits("busy", "web", 1, sampleV1)
	// a deploy that holds the lock until its units fail
	wait, _, _ := h.startTugCmd("app", "deploy", "busy", "--image", "localhost/tug/sample:unready", "--timeout", "15s")
	h.Eventually(30*time.Second, "the deploy holds the lock", func() (bool, error) {
		_, err := h.Client.CoordinationV1().Leases(h.NS).Get(context.Background(), "tug-lock-busy", metav1.GetOptions{})
		return err == nil, nil
	})
	r = h.Tug("app", "scale", "busy", "web=2", "-o", "json")
	var obj struct {
		Error struct {
			Class    string `json:"class"`
			ExitCode int    `json:"exitCode"`
			App      string `json:"app"`
		} `json:"error"`
	}
	if r.Code != 19 || json.Unmarshal([]byte(r.Stdout), &obj) != nil || obj.Error.Class != "locked" || obj.Error.ExitCode != 19 || obj.Error.App != "busy" {
		t.Errorf("scale while a deploy holds the lock: %s", r)
	}
	wait()
}

// Config staged with --no-restart is marked in env get, and app restart
// says it did not apply it.
func TestStagedConfigIsMarked(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "later")
	h.mustTug("app", "deploy", "later", "--image", sampleV1)
	h.mustTug("env", "set", "later", "K=V", "--no-restart")
	r := h.mustTug("env", "get", "later", "-o", "json")
	var vars []struct {
		Name   string `json:"name"`
		Staged string `json:"staged"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &vars); err != nil || len(vars) != 1 || vars[0].Name != "K" || vars[0].Staged != "set" {
		t.Fatalf("env get after a staged set: %+v (%v) %s", vars, err, r)
	}
	r = h.mustTug("app", "restart", "later")
	if !strings.Contains(r.Stderr, "did not apply config staged in v2 with --no-restart (+K)") {
		t.Errorf("app restart with staged config: %s", r)
	}
}

// While a blue-green release takes the requests, release list and app info
// say which release serves and which is kept, and that the processes other
// than web run the kept one until promote (app info said "Release: v1"
// alone while v1 got no request).
func TestBlueGreenSaysWhichReleaseServes(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "bg")
	h.mustTug("app", "deploy", "bg", "--image", sampleV1)
	h.mustTug("app", "deploy", "bg", "--image", sampleV2, "--strategy", "blue-green")
	var rels []struct {
		Version int    `json:"version"`
		Status  string `json:"status"`
		Role    string `json:"role"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("release", "list", "bg", "-o", "json").Stdout), &rels); err != nil {
		t.Fatal(err)
	}
	roles := map[int]string{}
	for _, r := range rels {
		roles[r.Version] = r.Status + "/" + r.Role
	}
	if roles[2] != "canary/serving" || roles[1] != "deployed/kept" {
		t.Errorf("release list roles: %v", roles)
	}
	var info struct {
		Release int `json:"release"`
		Canary  struct {
			Serving        int `json:"serving"`
			OtherProcesses int `json:"otherProcesses"`
		} `json:"canary"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", "bg", "-o", "json").Stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info.Release != 1 || info.Canary.Serving != 2 || info.Canary.OtherProcesses != 1 {
		t.Errorf("app info: %+v", info)
	}
	if r := h.mustTug("app", "info", "bg"); !strings.Contains(r.Stdout, "v1 (kept: no requests, v2 takes them; its processes other than web run it until promote)") {
		t.Errorf("app info's Release line: %s", r.Stdout)
	}
}

// A job change restarts no unit (it restarted every unit of the app), and
// a run by hand is not the CronJob's to delete (its history limit deleted
// such runs within minutes on a frequent schedule).
func TestJobAddRestartsNothingAndHandRunsStay(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "sched")
	h.mustTug("app", "deploy", "sched", "--image", sampleV1, "--process", "web=sample", "--process", "worker=sample worker")
	h.waitUnits("sched", "worker", 1, sampleV1)
	units := func() string {
		t.Helper()
		pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=sched,tug.dev/process,!tug.dev/kind"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	before := units()
	r := h.mustTug("job", "add", "sched", "tick", "--schedule", "*/1 * * * *", "--", "echo", "tick")
	if !strings.Contains(r.Stderr, "units not restarted") {
		t.Errorf("job add's line: %s", r)
	}
	if img := h.cronJobImage("sched", "tick"); img != sampleV1 {
		t.Fatalf("tick's CronJob runs %q", img)
	}
	if after := units(); after != before {
		t.Fatalf("job add restarted units: %v, then %v", before, after)
	}
	h.mustTug("job", "run", "sched", "tick")
	jobs, err := h.Client.BatchV1().Jobs(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=sched"})
	if err != nil || len(jobs.Items) == 0 {
		t.Fatalf("the run's Job: %v %v", jobs, err)
	}
	for _, j := range jobs.Items {
		if c := metav1.GetControllerOf(&j); c != nil && j.Annotations["cronjob.kubernetes.io/instantiate"] == "manual" {
			t.Errorf("run %s is controlled by %s %s, whose history limit deletes it", j.Name, c.Kind, c.Name)
		}
	}
	h.mustTug("job", "remove", "sched", "tick", "--yes")
	if after := units(); after != before {
		t.Fatalf("job remove restarted units: %v, then %v", before, after)
	}
}
