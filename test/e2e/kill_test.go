package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A deploy killed with SIGKILL at 10 random points (seeded; the seed is
// logged, TUG_E2E_SEED repeats a run). After each kill `app info` tells
// what the units run, and once the next command has taken the app's lock
// (`app scale`, at once or once the units settled) no release is pending
// and the record agrees with the units.
//
// The killed tug's lease would expire after lock.LeaseDuration plus the
// takeover watch; the test deletes it instead, to keep the run short
// (TestKilledDeployDoesNotBlockTheNext waits for a real expiry).
func TestKill9DuringDeploy(t *testing.T) {
	h := New(t)
	const name = "k9"
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TUG_E2E_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (TUG_E2E_SEED=%d repeats these kill points)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1, "--process", "web=sample")
	h.mustTug("app", "scale", name, "web=2")
	// how long a whole deploy takes here, to spread the kill points over it
	start := time.Now()
	h.mustTug("app", "deploy", name, "--image", sampleV2)
	whole := time.Since(start)
	t.Logf("a whole deploy takes %s", whole.Round(10*time.Millisecond))

	type row struct {
		delay         time.Duration
		exit          string
		release       int
		infoAfterKill string
		status        string
		units, record int
		unitImage     string
	}
	var table []row
	for i := range 10 {
		// always a change: the image the record does not name
		img := sampleV1
		if h.appInfo(name).Image == sampleV1 {
			img = sampleV2
		}
		// half the kill points fall in the first 80ms, where tug starts,
		// stores the release and applies it; the others anywhere in a
		// whole deploy
		span := whole + whole/5
		if i%2 == 0 {
			span = 80 * time.Millisecond
		}
		delay := time.Duration(rng.Int64N(int64(span)))
		before := h.releases(name)
		last := 0
		if len(before) > 0 {
			last = before[0].Version
		}
		cmd := exec.Command(env.tug, "app", "deploy", name, "--image", img)
		cmd.Env = h.tugEnv(nil)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		r := row{delay: delay, exit: "killed"}
		select {
		case err := <-exited:
			r.exit = "finished first"
			if err != nil {
				t.Errorf("deploy #%d ended by itself with %v; only a kill should stop it", i+1, err)
			}
		case <-time.After(delay): // the random kill point, not a synchronisation
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		// stand in for the lease's expiry (see above)
		err := h.Client.CoordinationV1().Leases(h.NS).Delete(context.Background(), "tug-lock-"+name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		after := h.releases(name)
		if len(after) > 0 && after[0].Version > last {
			r.release = after[0].Version
		}
		// app info at once, while the units may still move: it names what
		// the Deployments run when the record does not
		tmpl, tmplImage := h.templateRelease(name)
		in, _ := h.assertAgrees(name, tmpl, tmplImage, false)
		r.infoAfterKill = fmt.Sprintf("record v%d", in.Release)
		if in.Running != nil {
			r.infoAfterKill += fmt.Sprintf(", running v%d", in.Running.Releases[len(in.Running.Releases)-1])
			if in.Running.RollingOut {
				r.infoAfterKill += " (rolling out)"
			}
		}
		// the next command that takes the lock settles the record: the
		// killed release is deployed if the units finished it, else
		// interrupted (and the scale puts the record's release back). It
		// runs at once after even kills, after the units settle after odd ones.
		if i%2 == 1 {
			h.settledUnits(name, 2*time.Minute)
		}
		h.mustTug("app", "scale", name, "web=2")
		units, unitImage := h.settledUnits(name, 2*time.Minute)
		in, rows := h.assertAgrees(name, units, unitImage, true)
		r.units, r.unitImage, r.record = units, unitImage, in.Release
		if r.release > 0 {
			r.status = statusOf(rows, r.release)
			// a release is deployed exactly when the units ended up on it
			if (r.status == "deployed") != (units == r.release) {
				t.Errorf("v%d is %s but the units run v%d", r.release, r.status, units)
			}
			if r.status != "deployed" && r.status != "interrupted" {
				t.Errorf("v%d is %s after the kill, want deployed or interrupted", r.release, r.status)
			}
		}
		table = append(table, r)
	}
	// and a deploy after all that works and leaves nothing pending
	h.mustTug("app", "deploy", name, "--image", sampleV2)
	units, unitImage := h.settledUnits(name, 2*time.Minute)
	h.assertAgrees(name, units, unitImage, true)

	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, a whole deploy %s\n", seed, whole.Round(10*time.Millisecond))
	fmt.Fprintf(&b, "| # | kill after | tug | release | app info right after | status after the next lock taker | units run | record |\n|---|---|---|---|---|---|---|---|\n")
	for i, r := range table {
		rel := "none stored"
		if r.release > 0 {
			rel = fmt.Sprintf("v%d", r.release)
		}
		st := r.status
		if st == "" {
			st = "-"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | v%d (%s) | v%d |\n", i+1, r.delay.Round(time.Millisecond), r.exit, rel, r.infoAfterKill, st,
			r.units, strings.TrimPrefix(r.unitImage, "localhost/tug/"), r.record)
	}
	t.Logf("kill -9 table:\n%s", b.String())
}

// SIGTERM (as CI sends on cancel) during a rollout that cannot finish: tug
// exits 130 and the release says interrupted at once; app info says the
// units are moving to it; the next command that takes the lock brings the
// record's release back and nothing is left pending.
func TestDeployTerminatedIsRecorded(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "term")
	h.mustTug("app", "deploy", "term", "--image", sampleV1)
	cmd := exec.Command(env.tug, "app", "deploy", "term", "--image", "localhost/tug/sample:unready")
	cmd.Env = h.tugEnv(nil)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	h.Eventually(time.Minute, "the Deployment runs release 2", func() (bool, error) {
		v, _ := h.templateRelease("term")
		return v == 2, nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after SIGTERM, want 130", code)
	}
	rows := h.releases("term")
	if rows[0].Version != 2 || rows[0].Status != "interrupted" {
		t.Fatalf("after SIGTERM: %+v, want v2 interrupted", rows)
	}
	in := h.appInfo("term")
	if in.Release != 1 || in.Running == nil || !slices.Equal(in.Running.Releases, []int{2}) && !slices.Equal(in.Running.Releases, []int{1, 2}) ||
		!strings.Contains(in.Running.Note, "the last deploy was interrupted") {
		t.Errorf("app info after SIGTERM: %+v", in)
	}
	h.mustTug("app", "restart", "term") // takes the lock, re-applies v1
	h.waitUnits("term", "web", 1, sampleV1)
	h.settledAndTruthful("term")
	if rows := h.releases("term"); rows[0].Status != "interrupted" || rows[1].Status != "deployed" {
		t.Errorf("after the next lock taker: %+v", rows)
	}
}
