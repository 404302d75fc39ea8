package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/test/faultproxy"
)

// Deploys through a misbehaving API server: each either succeeds with
// exactly one new release, or fails with a clear message, its release
// failed or interrupted and the previous release serving.
func TestFaultsDeploy(t *testing.T) {
	h := New(t)
	f := h.faulty()
	h.deployShop("shop", 1)
	h.settledAndTruthful("shop")

	succeeds := func(what, img string, rules ...faultproxy.Rule) {
		t.Helper()
		before := len(h.releases("shop"))
		injected := map[faultproxy.Fault]int{}
		for _, r := range rules {
			injected[r.Fault] = f.p.Injected(r.Fault)
			f.p.Add(r)
		}
		r := f.tug("app", "deploy", "shop", "--image", img, "--request-timeout", "5s")
		if r.Code != 0 {
			t.Fatalf("%s: the deploy should survive: %s", what, r)
		}
		for _, rule := range rules {
			f.injected(rule.Fault, injected[rule.Fault])
		}
		rows := h.releases("shop")
		if len(rows) != before+1 || rows[0].Status != "deployed" || rows[0].Image != img {
			t.Fatalf("%s: want exactly one new release, deployed: %+v", what, rows)
		}
		h.waitUnits("shop", "web", 1, img)
		if v, _ := h.settledAndTruthful("shop"); v != rows[0].Version {
			t.Errorf("%s: units run v%d, want v%d", what, v, rows[0].Version)
		}
	}
	fails := func(what, img, wantMsg, wantStatus string, rules ...faultproxy.Rule) {
		t.Helper()
		prev := h.appInfo("shop")
		for _, r := range rules {
			f.p.Add(r)
		}
		r := f.tug("app", "deploy", "shop", "--image", img, "--request-timeout", "5s")
		if r.Code == 0 || !strings.Contains(r.Stderr, wantMsg) {
			t.Fatalf("%s: want a failure saying %q: %s", what, wantMsg, r)
		}
		if strings.Contains(r.Stderr, "goroutine ") || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 3 {
			t.Errorf("%s: the message should be short and clear:\n%s", what, r.Stderr)
		}
		rows := h.releases("shop")
		if rows[0].Status != wantStatus {
			t.Errorf("%s: newest release %+v, want %s", what, rows[0], wantStatus)
		}
		h.waitUnits("shop", "web", 1, prev.Image)
		if v, _ := h.settledAndTruthful("shop"); v != prev.Release {
			t.Errorf("%s: units run v%d, want the previous v%d", what, v, prev.Release)
		}
	}

	// storing the release is answered 429 twice: client-go waits Retry-After
	succeeds("429 on the release's create", sampleV2,
		faultproxy.Rule{Method: "POST", Path: "/secrets", Fault: faultproxy.TooMany, RetryAfter: 1, Count: 2})
	// the rollout's watches: refused with 503, answered 410 Gone, closed early
	succeeds("watches refused, gone and closed", sampleV1,
		faultproxy.Rule{Path: "/deployments", Watch: "yes", Fault: faultproxy.Unavailable, RetryAfter: 1, Count: 2},
		faultproxy.Rule{Path: "/pods", Watch: "yes", Fault: faultproxy.Gone, Count: 2},
		faultproxy.Rule{Path: "/deployments", Watch: "yes", Fault: faultproxy.CloseEarly, AfterBytes: 300, Count: 3})
	// a read stalls until --request-timeout; reads that reset are retried
	succeeds("reads reset", sampleV2,
		faultproxy.Rule{Method: "GET", Path: "/configmaps/", Fault: faultproxy.Reset, Count: 2})
	// the final write (the record naming the new release) stalls past
	// --request-timeout: tug writes it again with a fresh deadline
	succeeds("the final record write stalls", sampleV1,
		faultproxy.Rule{Method: "PUT", Path: "/configmaps/tug-app-shop", Fault: faultproxy.Stall, Skip: 1, Count: 1})

	// The API server fails (500 on every read of pods and Deployments;
	// the only such reads of a deploy whose record is settled are the
	// rollout's) once the Deployment is applied: tug cannot tell how the rollout
	// ends, says so, and marks the release interrupted. The units go on to
	// run it; app info says so, and the next command that takes the lock
	// records it deployed.
	prev := h.appInfo("shop")
	f.p.Add(faultproxy.Rule{Method: "GET", Path: "/pods", Fault: faultproxy.ServerError})
	// (Skip: the ownership check's GET of the Deployment before the
	// release is stored goes through.)
	f.p.Add(faultproxy.Rule{Method: "GET", Path: "/deployments", Fault: faultproxy.ServerError, Skip: 1})
	r := f.tug("app", "deploy", "shop", "--image", sampleV2, "--request-timeout", "5s")
	if r.Code == 0 || !strings.Contains(r.Stderr, "error on the server") {
		t.Fatalf("the API failing mid-rollout: want a clear failure: %s", r)
	}
	rows := h.releases("shop")
	if rows[0].Status != "interrupted" {
		t.Errorf("newest release %+v, want interrupted", rows[0])
	}
	units, image := h.settledUnits("shop", 2*time.Minute)
	in, _ := h.assertAgrees("shop", units, image, true)
	if units != rows[0].Version || in.Release != prev.Release || in.Running == nil || !strings.Contains(in.Running.Note, "the last deploy was interrupted") {
		t.Errorf("app info after the API failed mid-rollout: %+v (units v%d)", in, units)
	}
	h.mustTug("app", "scale", "shop", "web=1") // takes the lock
	if v, _ := h.settledAndTruthful("shop"); v != rows[0].Version {
		t.Errorf("units v%d, want v%d", v, rows[0].Version)
	}
	if rows := h.releases("shop"); rows[0].Status != "deployed" {
		t.Errorf("after the next lock taker: %+v, want deployed", rows[0])
	}

	// applying the Deployment fails with 500: the release failed, v-prev serves
	fails("500 on apply", sampleV2, "applying deployment shop-web", "failed",
		faultproxy.Rule{Method: "PATCH", Path: "/deployments/shop-web", Fault: faultproxy.ServerError, Count: 1})
	// the connection resets on the record write right after the release was
	// stored: the release is interrupted, never left pending
	fails("reset after the release was stored", sampleV2, "connection reset", "interrupted",
		faultproxy.Rule{Method: "PUT", Path: "/configmaps/tug-app-shop", Fault: faultproxy.Reset, Count: 1})
}

// Other commands through a misbehaving API server end in the right state.
func TestFaultsCommands(t *testing.T) {
	h := New(t)
	f := h.faulty()
	h.deployShop("shop", 1, "HEARTBEAT=1s")
	v, _ := h.settledAndTruthful("shop")

	// scale: the apply is answered 503 once (with Retry-After), reads reset
	n := f.p.Injected(faultproxy.Unavailable)
	f.p.Add(faultproxy.Rule{Method: "PATCH", Path: "/deployments/shop-web", Fault: faultproxy.Unavailable, RetryAfter: 1, Count: 1})
	f.p.Add(faultproxy.Rule{Method: "GET", Path: "/configmaps/", Fault: faultproxy.Reset, Count: 1})
	f.must("app", "scale", "shop", "web=2", "--request-timeout", "5s")
	f.injected(faultproxy.Unavailable, n)
	h.waitUnits("shop", "web", 2, sampleV1)
	if got, _ := h.settledAndTruthful("shop"); got != v || len(h.releases("shop")) != v {
		t.Errorf("scale made a release or moved the units: units v%d, releases %+v", got, h.releases("shop"))
	}

	// env set: the release's create gets 429, the rollout's watch is closed early
	n = f.p.Injected(faultproxy.TooMany)
	f.p.Add(faultproxy.Rule{Method: "POST", Path: "/secrets", Fault: faultproxy.TooMany, RetryAfter: 1, Count: 1})
	f.p.Add(faultproxy.Rule{Path: "/deployments", Watch: "yes", Fault: faultproxy.CloseEarly, AfterBytes: 200, Count: 2})
	f.must("env", "set", "shop", "FAULTS=1", "--request-timeout", "5s")
	f.injected(faultproxy.TooMany, n)
	rows := h.releases("shop")
	if len(rows) != v+1 || rows[0].Status != "deployed" || rows[0].Kind != "env" {
		t.Fatalf("env set: want one new env release, deployed: %+v", rows)
	}
	h.settledAndTruthful("shop")

	// unit list: a read that resets is retried; one that stalls ends at
	// --request-timeout with a message, not a hang
	f.p.Add(faultproxy.Rule{Method: "GET", Path: "/pods", Fault: faultproxy.Reset, Count: 1})
	r := f.must("unit", "list", "shop", "-o", "json")
	if strings.Count(r.Stdout, `"name"`) < 2 {
		t.Errorf("unit list after a reset: %s", r)
	}
	f.p.Add(faultproxy.Rule{Method: "GET", Path: "/pods", Fault: faultproxy.Stall})
	start := time.Now()
	r = f.tug("unit", "list", "shop", "--request-timeout", "2s")
	if r.Code == 0 || strings.TrimSpace(r.Stderr) == "" || strings.Contains(r.Stderr, "goroutine ") {
		t.Errorf("unit list against a stalled server: %s", r)
	}
	t.Logf("unit list against a stalled server: %s in %s", strings.TrimSpace(r.Stderr), time.Since(start).Round(time.Millisecond))

	// run: creating the run pod gets 503 with Retry-After once; its watch 410
	n = f.p.Injected(faultproxy.Unavailable)
	f.p.Add(faultproxy.Rule{Method: "POST", Path: "/pods", Fault: faultproxy.Unavailable, RetryAfter: 1, Count: 1})
	f.p.Add(faultproxy.Rule{Path: "/pods", Watch: "yes", Fault: faultproxy.Gone, Count: 1})
	r = f.must("run", "shop", "--", "sh", "-c", "echo from-a-faulty-run")
	f.injected(faultproxy.Unavailable, n)
	if !strings.Contains(r.Stdout, "from-a-faulty-run") {
		t.Errorf("run output: %s", r)
	}
	h.waitNoRunPods(time.Minute)

	// shell (piped): finding the unit gets 429 once
	n = f.p.Injected(faultproxy.TooMany)
	f.p.Add(faultproxy.Rule{Method: "GET", Path: "/pods", Fault: faultproxy.TooMany, RetryAfter: 1, Count: 1})
	r = f.tugRun(Run{Args: []string{"shell", "shop"}, Stdin: "echo from-a-faulty-shell\n"})
	f.injected(faultproxy.TooMany, n)
	if r.Code != 0 || !strings.Contains(r.Stdout, "from-a-faulty-shell") {
		t.Errorf("shell: %s", r)
	}

	// logs -f: the log streams are closed early and the pods watch answered
	// 410; lines keep coming from both units
	units := h.waitUnits("shop", "web", 2, sampleV1)
	closed := f.p.Injected(faultproxy.CloseEarly)
	f.p.Add(faultproxy.Rule{Method: "GET", Path: "/log", Query: "follow=true", Fault: faultproxy.CloseEarly, AfterBytes: 400, Count: 2})
	f.p.Add(faultproxy.Rule{Path: "/pods", Watch: "yes", Fault: faultproxy.Gone, Count: 1})
	cmd := exec.Command(env.tug, "logs", "shop", "-f")
	cmd.Env = append(h.tugEnv(nil), "KUBECONFIG="+f.kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	s := NewStream(stdout)
	// both units' streams get closed early (after 400 bytes each) ...
	h.Eventually(time.Minute, "the proxy closes both log streams", func() (bool, error) {
		return f.p.Injected(faultproxy.CloseEarly) >= closed+2, nil
	})
	// ... and both units' heartbeats keep coming after that
	mark := len(s.String())
	h.Eventually(30*time.Second, "heartbeats from both units after their streams were closed", func() (bool, error) {
		after := s.String()[mark:]
		for _, p := range units {
			if !strings.Contains(after, p.Name+" | sample v1: heartbeat") {
				return false, fmt.Errorf("nothing from %s yet:\n%s", p.Name, after)
			}
		}
		return true, nil
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("logs -f: faults injected: %q", f.p.Log())

	h.settledAndTruthful("shop")
	// node remove through the proxy is not covered here: draining a real
	// node takes minutes on the local cluster (see docs/reliability.md).
}
