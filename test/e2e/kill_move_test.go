package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"tug.dev/tug/test/faultproxy"
)

// A move between clusters (`app pool set` to a pool of another cluster)
// killed with SIGKILL at each of its steps. Two contexts of the one local
// cluster with their own namespaces stand in for two clusters, as in
// TestClusterPoolsRouteAndMove. The killed tug reaches the cluster through
// the fault proxy, which holds the request just after the step (Lost: the
// server did it, tug never hears back; Stall: the server never sees it):
// the test waits until the proxy has it, then kills tug, so every kill
// point is exact, with no sleep.
//
// After each kill: `app info` with no --context reaches the copy that
// serves, says whether the move is unfinished, and agrees with what that
// copy's Deployments run; the app answers; the same `app pool set` run
// again leaves exactly one copy, in the target. Moves alternate between the
// two clusters. The killed tug's leases are left to expire for two kill
// points (one before the switch, one after) and deleted for the others, to
// keep the run short (as TestKill9DuringDeploy does).
//
// It also checks -o json of a move that fails (a pool with no node).
func TestKill9DuringMove(t *testing.T) {
	pc := newPoolClusters(t)
	h, beta := pc.Alpha, pc.Beta
	m := &movingApp{pc: pc, px: pc.viaProxy(), name: "shop"}
	must := pc.Must
	must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa,pnone")
	must("cluster", "add", "beta", "--context", "beta", "--pool", "pb")
	alpha, betaSide := moveSide{"alpha", h.NS, "pa", h}, moveSide{"beta", beta.NS, "pb", beta}

	must("app", "create", "shop", "--pool", "pb")
	must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	must("app", "scale", "shop", "web=2")
	beta.waitUnits("shop", "web", 2, sampleV1)

	moveCompletions(t, pc)
	failedMoveJSON(t, m)

	var table [][]string
	from, to := betaSide, alpha
	for i := range len(movePoints(from, to)) {
		p := movePoints(from, to)[i]
		t.Logf("kill %d: %s -> %s, after %s", i+1, from.cluster, to.cluster, p.name)
		m.killMove(p.name, p.rule, to.pool)
		after := afterMoveKill(t, m, i, p, from, to)
		rerun := rerunMove(t, m, i, p, from, to)
		table = append(table, []string{from.cluster + " -> " + to.cluster, p.name, after, rerun})
		from, to = to, from
	}

	killedTwice(t, m, from, to)
	from, to = to, from
	givenUp(t, m, from, to)

	t.Logf("kill -9 during a move:\n%s", killTable([]string{"move", "killed after", "`app info` right after the kill", "the same `app pool set` again"}, table))
}

// movePoint is a step of a move at which the test kills tug.
type movePoint struct {
	name string
	rule faultproxy.Rule
	// after the kill: the copy that serves is the target's, and
	// whether the move is unfinished (it is, at every point here)
	targetServes bool
	// the killed tug's lease is left to expire before the rerun (once
	// before the switch, once after); for the other points it is deleted
	leaseExpires bool
}

// movePoints are the kill points of a move from from to to, in order.
func movePoints(from, to moveSide) []movePoint {
	return []movePoint{
		{name: "the source marked as a move's source", rule: faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + from.ns + "/configmaps/tug-app-shop", Body: "startedAt", Fault: faultproxy.Lost, Count: 1}},
		{name: "the target's record written", rule: faultproxy.Rule{Method: "POST", Path: "/namespaces/" + to.ns + "/configmaps", Fault: faultproxy.Lost, Count: 1}},
		{name: "the target's Deployment applied (its rollout under way)", rule: faultproxy.Rule{Method: "PATCH", Path: "/namespaces/" + to.ns + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1}, leaseExpires: true},
		{name: "the target rolled out (waiting for its endpoints)", rule: faultproxy.Rule{Method: "GET", Path: "/namespaces/" + to.ns + "/endpointslices", Fault: faultproxy.Stall, Count: 1}},
		{name: "the source marked superseded", rule: faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + from.ns + "/configmaps/tug-app-shop", Body: "superseded", Fault: faultproxy.Lost, Count: 1}, targetServes: true},
		{name: "the source's Deployment deleted (its removal under way)", rule: faultproxy.Rule{Method: "DELETE", Path: "/namespaces/" + from.ns + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1}, targetServes: true, leaseExpires: true},
		{name: "the source's first release record deleted (its record still there)", rule: faultproxy.Rule{Method: "DELETE", Path: "/namespaces/" + from.ns + "/secrets/", Fault: faultproxy.Lost, Count: 1}, targetServes: true},
	}
}

// moveCompletions: app names complete from every configured cluster, and
// from the current context (third), which commands fall back to; what
// follows the app's name comes from the cluster holding it.
func moveCompletions(t *testing.T, pc *poolClusters) {
	t.Helper()
	pc.Must("app", "create", "blog", "--context", "alpha")
	pc.Must("app", "create", "solo", "--context", "third")
	for _, c := range []struct {
		what string
		args []string
		want string
	}{
		{"app names with clusters configured", []string{"__complete", "app", "info", ""}, "blog\talpha\nshop\tbeta\nsolo\tthird\n:4\n"},
		{"app names with --context alpha", []string{"__complete", "--context", "alpha", "app", "info", ""}, "blog\n:4\n"},
		{"processes of an app in another cluster than the current context", []string{"__complete", "app", "restart", "shop", "-p", ""}, "web\t2 units\n:4\n"},
	} {
		if r := pc.Must(c.args...); r.Stdout != c.want {
			t.Errorf("%s: %q", c.what, r.Stdout)
		}
	}
}

// failedMoveJSON: a move that fails (pool pnone has no node), -o json
// with stderr piped: one JSON result on stdout saying failed, why, and
// where the app serves; no stderr line that reads as success.
func failedMoveJSON(t *testing.T, m *movingApp) {
	t.Helper()
	r := m.pc.Tug("app", "pool", "set", "shop", "pnone", "--timeout", "60s", "-o", "json")
	var failed struct {
		App, Pool, Status string
		From, To, Serving struct{ Cluster, Namespace string }
		Failure           *struct{ Class, Reason, Message string }
	}
	if r.Code != 13 {
		t.Fatalf("a move to a pool with no node: want exit 13; got %s", r)
	}
	if err := json.Unmarshal([]byte(r.Stdout), &failed); err != nil {
		t.Fatalf("-o json of a failed move is not one JSON value: %v\n%s", err, r)
	}
	if failed.Status != "failed" || failed.Failure == nil || failed.Failure.Class != "unschedulable" || failed.Failure.Message == "" ||
		failed.Serving.Cluster != "beta" || failed.Serving.Namespace != m.pc.Beta.NS || failed.To.Cluster != "alpha" || failed.Pool != "pnone" {
		t.Errorf("-o json of a failed move: %+v\n%s", failed, r.Stdout)
	}
	for _, line := range strings.Split(r.Stderr, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "moved ") || strings.Contains(l, " is running") || strings.Contains(l, "rolled back") || strings.HasPrefix(strings.TrimSpace(l), "✓") {
			t.Errorf("stderr of a failed move has a line that reads as success: %q\n%s", line, r.Stderr)
		}
	}
	if left := m.leftovers(m.pc.Alpha.NS); len(left) != 0 {
		t.Errorf("a failed move left in alpha: %v", left)
	}
}

// afterMoveKill checks `app info` with no --context right after kill i at
// p: it reaches the copy that serves, says the move is unfinished and how
// to finish it, agrees with what that copy's Deployments run, and the app
// answers. It returns what app info said, for the table.
func afterMoveKill(t *testing.T, m *movingApp, i int, p movePoint, from, to moveSide) string {
	t.Helper()
	serving := from
	if p.targetServes {
		serving = to
	}
	in, r := m.info()
	if in.Namespace != serving.ns {
		t.Errorf("kill %d: app info reached namespace %s, want %s (%s's copy serves)\n%s", i+1, in.Namespace, serving.ns, serving.cluster, r)
	}
	unfinished := in.Move != nil || strings.Contains(r.Stderr, "also has a copy in cluster")
	if !unfinished {
		t.Errorf("kill %d: app info does not say the move is unfinished: %s", i+1, r)
	}
	if !strings.Contains(r.Stderr, "app pool set shop "+to.pool) && (in.Move == nil || in.Move.Pool != to.pool) {
		t.Errorf("kill %d: app info does not say how to finish the move (pool %s): %s", i+1, to.pool, r)
	}
	units, unitImage := m.template(in.Namespace)
	switch {
	case in.Release == units && in.Running != nil:
		t.Errorf("kill %d: app info: record v%d is what the Deployments run, but running = %+v", i+1, in.Release, in.Running)
	case in.Release == units && in.Image != unitImage:
		t.Errorf("kill %d: app info: image %s, the Deployments run %s", i+1, in.Image, unitImage)
	case in.Release != units && (in.Running == nil || in.Running.Releases[len(in.Running.Releases)-1] != units):
		t.Errorf("kill %d: app info: record v%d, the Deployments run v%d, running = %+v", i+1, in.Release, units, in.Running)
	}
	if err := m.answers(); err != nil {
		t.Errorf("kill %d: the app does not answer after the kill: %v", i+1, err)
	}
	after := fmt.Sprintf("%s's copy (v%d)", serving.cluster, in.Release)
	if in.Move != nil {
		after += ", " + in.Move.Role + " of an unfinished move"
	}
	if strings.Contains(r.Stderr, "also has a copy") {
		after += "; warns of the copy in " + map[bool]string{true: from.cluster, false: to.cluster}[p.targetServes]
	}
	return after
}

// rerunMove runs the same pool set again after kill i, which finishes (or
// redoes) the move: exactly one copy is left, in the target, and it
// answers. Where p.leaseExpires, the killed tug's lease is left to
// expire: until then a rerun is refused, naming the lock, and prints
// nothing on stdout; afterwards it goes through. It returns the rerun's
// last line, for the table.
func rerunMove(t *testing.T, m *movingApp, i int, p movePoint, from, to moveSide) string {
	t.Helper()
	r := rerunAfterLease(t, m, i, p, to)
	if r.Code != 0 {
		t.Fatalf("kill %d: pool set again: %s", i+1, r.Result)
	}
	var res struct {
		Status      string
		To, Serving struct{ Cluster, Namespace string }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res.Status != "moved" || res.Serving.Namespace != to.ns || res.To.Cluster != to.cluster {
		t.Errorf("kill %d: -o json of the rerun: %+v %v\n%s", i+1, res, err, r.Result)
	}
	last := strings.TrimSpace(r.Stderr)
	last = last[strings.LastIndex(last, "\n")+1:]
	if _, msg, ok := strings.Cut(last, " "); ok { // drop the timestamp
		last = msg
	}
	if left := m.leftovers(from.ns); len(left) != 0 {
		t.Errorf("kill %d: the rerun left in %s: %v", i+1, from.cluster, left)
	}
	if !m.holds(to.ns) {
		t.Errorf("kill %d: no copy in %s after the rerun", i+1, to.cluster)
	}
	in, info := m.info()
	if in.Namespace != to.ns || in.Pool != to.pool || in.Move != nil || strings.Contains(info.Stderr, "warning") {
		t.Errorf("kill %d: app info after the rerun: %+v\n%s", i+1, in, info)
	}
	to.h.waitUnits("shop", "web", 2, sampleV1)
	if v, img := m.template(to.ns); v != in.Release || img != sampleV1 {
		t.Errorf("kill %d: after the rerun the Deployments run v%d (%s), app info says v%d", i+1, v, img, in.Release)
	}
	if err := m.answers(); err != nil {
		t.Errorf("kill %d: the app does not answer after the rerun: %v", i+1, err)
	}
	return last + r.expiry
}

// rerun is a pool set run again after a kill, and how it waited for the
// killed tug's lease (empty when the lease was deleted).
type rerun struct {
	Result
	expiry string
}

// rerunAfterLease runs the pool set of kill i again: at once with the
// leases deleted, or, where p.leaseExpires, refused until the killed
// tug's lease expires (tries paced at 2s: each fails at once until then).
func rerunAfterLease(t *testing.T, m *movingApp, i int, p movePoint, to moveSide) rerun {
	t.Helper()
	args := []string{"app", "pool", "set", "shop", to.pool, "-o", "json"}
	if !p.leaseExpires {
		m.dropLeases()
		return rerun{Result: m.pc.Tug(args...)}
	}
	r := m.pc.Tug(args...)
	// refused with the lock's own exit code and, under -o json, the
	// error object (docs/exit-codes.md, docs/output.md)
	if r.Code != 19 || !strings.Contains(r.Stderr, "is being changed by") || !strings.Contains(r.Stdout, `"class": "locked"`) {
		t.Errorf("kill %d: a rerun while the killed tug's lease is live: want it refused, naming the lock; got %s", i+1, r)
	}
	killed := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, 2*time.Minute, false, func(context.Context) (bool, error) {
		r = m.pc.Tug(args...)
		return r.Code == 0 || !strings.Contains(r.Stderr, "is being changed by"), nil
	})
	if err != nil {
		t.Fatalf("kill %d: the killed tug's lease never expired: %v\n%s", i+1, err, r)
	}
	return rerun{r, fmt.Sprintf(" (first refused, naming the lock; went through once the killed tug's leases expired, done %s after the kill)", time.Since(killed).Round(time.Second))}
}

// killedTwice: a move killed during its target rollout, then the rerun
// killed while it removes that half-made copy. The source still serves,
// and a third run moves the app.
func killedTwice(t *testing.T, m *movingApp, from, to moveSide) {
	t.Helper()
	p := movePoints(from, to)[2]
	m.killMove(p.name, p.rule, to.pool)
	m.dropLeases()
	m.killMove("the rerun deleted the half-made copy's Deployment", faultproxy.Rule{Method: "DELETE", Path: "/namespaces/" + to.ns + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1}, to.pool)
	m.dropLeases()
	if in, r := m.info(); in.Namespace != from.ns || in.Move == nil {
		t.Errorf("after a rerun killed while removing the half-made copy: app info %+v\n%s", in, r)
	}
	if err := m.answers(); err != nil {
		t.Errorf("the app does not answer after the second kill: %v", err)
	}
	m.pc.Must("app", "pool", "set", "shop", to.pool)
	if left := m.leftovers(from.ns); len(left) != 0 {
		t.Errorf("the third run left in %s: %v", from.cluster, left)
	}
	if in, r := m.info(); in.Namespace != to.ns || in.Pool != to.pool || in.Move != nil || strings.Contains(r.Stderr, "warning") {
		t.Errorf("app info after the third run: %+v\n%s", in, r)
	}
	to.h.waitUnits("shop", "web", 2, sampleV1)
}

// givenUp: a move killed after the target's record was written, then the
// app asked to stay on its pool: the half-made copy goes, app info no
// longer calls the move unfinished, and nothing is rolled out: the same
// release, the same units (their UIDs).
func givenUp(t *testing.T, m *movingApp, from, to moveSide) {
	t.Helper()
	p := movePoints(from, to)[1]
	m.killMove(p.name, p.rule, to.pool)
	m.dropLeases()
	before, _ := m.info()
	if before.Move == nil {
		t.Errorf("before giving up: app info shows no unfinished move: %+v", before)
	}
	uidsBefore := m.unitUIDs(from.ns)
	var kept struct {
		Release        int
		UnitsRestarted *bool
	}
	if r := m.pc.Must("app", "pool", "set", "shop", from.pool, "-o", "json"); json.Unmarshal([]byte(r.Stdout), &kept) != nil || kept.Release != before.Release || kept.UnitsRestarted == nil || *kept.UnitsRestarted {
		t.Errorf("giving up the move: want v%d, unitsRestarted false; got %s", before.Release, r)
	}
	if after := m.unitUIDs(from.ns); len(uidsBefore) == 0 || !slices.Equal(after, uidsBefore) {
		t.Errorf("giving up the move replaced the units: UIDs %v, then %v", uidsBefore, after)
	}
	if left := m.leftovers(to.ns); len(left) != 0 {
		t.Errorf("giving up the move left in %s: %v", to.cluster, left)
	}
	if in, r := m.info(); in.Namespace != from.ns || in.Pool != from.pool || in.Move != nil || in.Release != before.Release || strings.Contains(r.Stderr, "warning") {
		t.Errorf("app info after giving up the move: %+v\n%s", in, r)
	}
	if err := m.answers(); err != nil {
		t.Errorf("the app does not answer after giving up the move: %v", err)
	}
}
