package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Canary deploys through the local router: the split is the router's
// (weighted backendRefs), promote and abort move every request, and a
// canary whose units crash is aborted by tug while the deployed release
// keeps every request.

func TestCanaryThroughTheRouter(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	const name = "cany"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)
	h.mustTug("app", "scale", name, "web=3")

	res := h.mustTug("app", "deploy", name, "--image", sampleV2, "--canary", "25%", "-o", "json")
	var out struct {
		Status  string `json:"status"`
		Routing string `json:"routing"`
		Canary  struct {
			Release, Stable, Weight int
			Units                   int32
			Exact                   bool
		} `json:"canary"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("deploy --canary -o json: %v\n%s", err, res.Stdout)
	}
	if c := out.Canary; out.Status != "canary" || c.Release != 2 || c.Stable != 1 || c.Weight != 25 || c.Units != 1 || !c.Exact {
		t.Fatalf("deploy --canary 25%% of 3 units: %+v\n%s", out, res)
	}
	// the split is confirmed by tug's probe, and a client sees none of it
	if out.Routing != "served" {
		t.Errorf("deploy --canary: routing %q, want served (the probe saw the split)", out.Routing)
	}
	for range 20 {
		resp, err := r.client(nil).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for k := range resp.Header {
			if strings.HasPrefix(k, "Tug-") {
				t.Fatalf("a client got tug's header %s: %q during the canary", k, resp.Header.Values(k))
			}
		}
	}
	got := versions(t, r, url, 400)
	t.Logf("25%% canary: %v of 400", got)
	if got["failed"]+got["other"] > 0 || got["v2"] < 60 || got["v2"] > 140 {
		t.Fatalf("a 25%% canary should get 15-35%% of 400 requests, got %v", got)
	}
	rels := h.releasesByVersion(name)
	if rels[2].Status != "canary" || rels[2].Traffic == nil || *rels[2].Traffic != 25 || rels[1].Traffic == nil || *rels[1].Traffic != 75 {
		t.Fatalf("release list during the canary: %+v", rels)
	}
	info := h.mustTug("app", "info", name)
	if !strings.Contains(info.Stdout, "Canary:") || !strings.Contains(info.Stdout, "25% of requests") {
		t.Fatalf("app info should show the canary:\n%s", info.Stdout)
	}
	// changes of what runs are refused with the way out, and change nothing
	for _, args := range [][]string{{"app", "scale", name, "web=2"}, {"app", "deploy", name, "--image", sampleV1}, {"env", "set", name, "A=1"}} {
		if rr := h.Tug(args...); rr.Code != 1 || !strings.Contains(rr.Stderr, "tug release promote "+name) || !strings.Contains(rr.Stderr, "tug release abort "+name) {
			t.Fatalf("tug %s during a canary: want exit 1 and the way out, got %s", strings.Join(args, " "), rr)
		}
	}
	if n := len(h.releasesByVersion(name)); n != 2 {
		t.Fatalf("a refused change made a release: %d releases", n)
	}

	h.mustTug("release", "promote", name)
	if got := versions(t, r, url, 100); got["v2"] != 100 {
		t.Fatalf("after promote every request should reach v2: %v", got)
	}
	h.noCanaryLeft(name)
	h.waitUnits(name, "web", 3, sampleV2)
	if rels := h.releasesByVersion(name); rels[2].Status != "deployed" || rels[1].Status != "superseded" || rels[2].Traffic != nil {
		t.Fatalf("release list after promote: %+v", rels)
	}
}

// A promote never sends a unit more than twice its share of requests
// (issue 40, item 1): web=4 with a 25% canary (one unit) is promoted under
// load, and every answer is counted by the unit that gave it. Before, the
// one canary unit answered every request while the other four were
// replaced.
func TestCanaryPromoteOverloadsNoUnit(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	const name = "fair"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)
	h.mustTug("app", "scale", name, "web=4")
	h.mustTug("app", "deploy", name, "--image", sampleV2, "--canary", "25%")
	l := startLoad(r, "gateway", url, false)
	defer l.halt()
	h.Eventually(time.Minute, "requests answered before the promote", func() (bool, error) {
		c := l.counted("start")
		return c.ok >= 50, fmt.Errorf("%s", c)
	})
	l.enter("promote")
	h.mustTug("release", "promote", name)
	l.enter("after")
	c := l.counted("promote")
	t.Logf("during the promote: %s, by unit %v", c, c.units)
	if c.failures() > 0 || c.ok < 40 {
		t.Fatalf("promote under load: %s", c)
	}
	for unit, n := range c.units {
		if n*4 > 2*c.ok {
			t.Errorf("unit %s answered %d of %d requests during the promote: more than twice its share (1/4)", unit, n, c.ok)
		}
	}
	h.noCanaryLeft(name)
	h.waitUnits(name, "web", 4, sampleV2)
}

func TestCanaryAbortedByItselfAndByHand(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	const name = "canab"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)

	// a canary whose units crash: tug aborts it, with a failed deploy's
	// diagnosis and exit code, and v1 keeps every request
	crash := h.Tug("app", "deploy", name, "--image", "localhost/tug/sample:crash", "--canary", "50%")
	if crash.Code != 11 || !strings.Contains(crash.Stderr, "the canary was aborted: v1 keeps every request") || !strings.Contains(crash.Stderr, "configured to crash at start") {
		t.Fatalf("a crashing canary: want exit 11 and the abort, got %s", crash)
	}
	if got := versions(t, r, url, 100); got["v1"] != 100 {
		t.Fatalf("after a crashing canary every request should reach v1: %v", got)
	}
	h.noCanaryLeft(name)
	if rels := h.releasesByVersion(name); rels[2].Status != "failed" || !strings.Contains(rels[2].FailReason, "canary aborted") || rels[1].Status != "deployed" {
		t.Fatalf("release list after the crashing canary: %+v", rels)
	}

	// a healthy canary aborted by hand
	h.mustTug("app", "deploy", name, "--image", sampleV2, "--canary", "50%")
	if got := versions(t, r, url, 100); got["v2"] == 0 || got["v1"] == 0 || got["failed"] > 0 {
		t.Fatalf("a 50%% canary should share the requests: %v", got)
	}
	ab := h.mustTug("release", "abort", name)
	if got := versions(t, r, url, 100); got["v1"] != 100 {
		t.Fatalf("after abort every request should reach v1: %v (%s)", got, ab)
	}
	h.noCanaryLeft(name)
	if rels := h.releasesByVersion(name); rels[3].Status != "aborted" || rels[1].Status != "deployed" {
		t.Fatalf("release list after abort: %+v", rels)
	}
	if rr := h.Tug("release", "abort", name); rr.Code != 1 || !strings.Contains(rr.Stderr, "nothing to abort") {
		t.Fatalf("abort with no canary: %s", rr)
	}
}

// Blue-green through the router: the new release at full size, every
// request switched to it once its units are ready with none lost, the
// previous release's units kept, and a rollback that switches back to
// them without starting a unit.
func TestBlueGreenSwitchAndInstantRollback(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	const name = "blugr"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)
	h.mustTug("app", "scale", name, "web=2")
	l := startLoad(r, "gateway", url, false)
	defer func() {
		if l != nil {
			l.halt()
		}
	}()
	enough := func(phase string) tally {
		t.Helper()
		h.Eventually(2*time.Minute, fmt.Sprintf("%d requests in phase %s", phaseMinimum, phase), func() (bool, error) {
			c := l.counted(phase)
			return c.total >= phaseMinimum, fmt.Errorf("%d", c.total)
		})
		return l.counted(phase)
	}

	l.enter("switch")
	res := h.mustTug("app", "deploy", name, "--image", sampleV2, "--strategy", "blue-green", "-o", "json")
	if !strings.Contains(res.Stdout, `"strategy": "blue-green"`) || !strings.Contains(res.Stdout, `"weight": 100`) {
		t.Fatalf("deploy --strategy blue-green -o json: %s", res)
	}
	if got := versions(t, r, url, 50); got["v2"] != 50 {
		t.Fatalf("after the switch every request should reach v2: %v", got)
	}
	if c := enough("switch"); c.failures() > 0 {
		t.Fatalf("blue-green switch: %s", c)
	} else {
		t.Logf("blue-green switch: %s", c)
	}
	kept, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + name + ",tug.dev/release=1"})
	if err != nil || len(kept.Items) != 2 {
		t.Fatalf("v1's 2 units should be kept: %v %v", kept, err)
	}
	before := h.podNames(name)

	// the rollback: the first answer from the kept units, measured from
	// the command's start (logged, not asserted: a timing)
	l.enter("rollback")
	start := time.Now()
	back := make(chan time.Duration, 1)
	go func() {
		for time.Since(start) < time.Minute {
			if code, body, _, err := r.get(nil, url); err == nil && code == 200 && strings.Contains(body, "sample v1") {
				back <- time.Since(start)
				return
			}
		}
		back <- -1
	}()
	h.mustTug("release", "rollback", name)
	t.Logf("release rollback after blue-green: first answer from v1's kept units %v after the command started", <-back)
	if got := versions(t, r, url, 50); got["v1"] != 50 {
		t.Fatalf("after the rollback every request should reach v1: %v", got)
	}
	if c := enough("rollback"); c.failures() > 0 {
		t.Fatalf("rollback to the kept units: %s", c)
	} else {
		t.Logf("rollback: %s", c)
	}
	l.halt()
	l = nil
	for _, p := range h.podNames(name) {
		if !slices.Contains(before, p) {
			t.Fatalf("the rollback started unit %s; the kept units were %v", p, before)
		}
	}
	h.noCanaryLeft(name)
	if rels := h.releasesByVersion(name); rels[2].Status != "aborted" || rels[1].Status != "deployed" {
		t.Fatalf("release list after the rollback: %+v", rels)
	}
}

// podNames are the names of the app's pods now.
func (h *H) podNames(appName string) []string {
	h.t.Helper()
	pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	return out
}

// --canary-steps: the canary moves through its shares by itself, one
// every --step-interval while healthy, then is promoted.
func TestCanaryStepsPromoteByThemselves(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	const name = "canst"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)
	if rr := h.Tug("app", "deploy", name, "--image", sampleV2, "--canary-steps", "50,20"); rr.Code != 2 || !strings.Contains(rr.Stderr, "must go up") {
		t.Fatalf("steps that go down: want exit 2, got %s", rr)
	}
	res := h.mustTug("app", "deploy", name, "--image", sampleV2, "--canary-steps", "20,60", "--step-interval", "2s")
	for _, want := range []string{"v2 gets 20% of requests", "v2 gets 60% of requests", "every request to v2"} {
		if !strings.Contains(res.Stderr, want) {
			t.Fatalf("the steps should say %q:\n%s", want, res.Stderr)
		}
	}
	if got := versions(t, r, url, 100); got["v2"] != 100 {
		t.Fatalf("after the last step every request should reach v2: %v", got)
	}
	h.noCanaryLeft(name)
	if rels := h.releasesByVersion(name); rels[2].Status != "deployed" {
		t.Fatalf("release list after the steps: %+v", rels)
	}
}

// Failed builds while a canary runs never prune its release (issue 34,
// item 1): with a history of 2, three failing source deploys leave v2's
// record and config Secret; a canary unit that restarts still starts
// (it reads that Secret through envFrom), and the promote then sends every
// request through the router to v2. Before, the first failed build
// deleted v2 and the promote failed "release v2 not found".
func TestFailedBuildsDuringACanaryKeepItsRelease(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	reg := registryForBuilds(t, false)
	const name = "keepc"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)
	h.mustTug("app", "settings", "set", name, "--history", "2")
	h.mustTug("env", "set", name, "--no-restart", "GREETING=canary")
	h.mustTug("app", "deploy", name, "--image", sampleV2, "--canary", "50%")
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "build.sh"), []byte("echo 'error: broken' >&2\nexit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "Procfile"), []byte("web: httpd -f -p $PORT -h /app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		res := h.TugRun(Run{Args: []string{"app", "deploy", name, "--builder", "localhost/tug/builder-static:v1", "--repository", reg + "/e2e/" + h.NS + "/" + name}, Dir: src})
		if res.Code != 16 {
			t.Fatalf("a failing build: want exit 16, got %s", res)
		}
	}
	rels := h.releasesByVersion(name)
	canaryV := 0
	for v, rel := range rels {
		if rel.Status == "canary" {
			canaryV = v
		}
	}
	if canaryV == 0 {
		t.Fatalf("the canary's release is gone from the history after failed builds: %+v", rels)
	}
	// a canary unit that starts again reads its release's config
	ctx := context.Background()
	sel := "tug.dev/app=" + name + ",tug.dev/track=canary"
	if err := h.Client.CoreV1().Pods(h.NS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
		t.Fatal(err)
	}
	h.WaitPods(sel, 90*time.Second, "the canary's unit started again", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				return false
			}
		}
		return AllReady(1)(pods)
	})
	h.mustTug("release", "promote", name)
	if got := versions(t, r, url, 50); got["v2"] != 50 {
		t.Fatalf("after the promote every request should reach v2: %v", got)
	}
	h.noCanaryLeft(name)
}
