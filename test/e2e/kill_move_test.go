package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	tug, must := pc.Tug, pc.Must
	px := pc.viaProxy()
	must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa,pnone")
	must("cluster", "add", "beta", "--context", "beta", "--pool", "pb")
	ctx := context.Background()
	type side struct {
		cluster, ns, pool string
		h                 *H
	}
	alpha, betaSide := side{"alpha", h.NS, "pa", h}, side{"beta", beta.NS, "pb", beta}
	holds := func(ns string) bool {
		t.Helper()
		return h.holdsApp(ns, "shop")
	}
	// what of the app is left in ns (its lock Lease included)
	leftovers := func(ns string) []string {
		t.Helper()
		return h.appLeftovers(ns, "shop")
	}
	type info struct {
		appInfoJSON
		Image   string
		Running *struct {
			Releases []int
			Image    string
		}
	}
	appInfo := func() (info, Result) {
		t.Helper()
		var in info
		r := pc.infoJSON("shop", &in)
		return in, r
	}
	// the release the Deployments in ns name in their pod templates
	template := func(ns string) (int, string) {
		t.Helper()
		deps, err := h.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=shop"})
		if err != nil {
			t.Fatal(err)
		}
		release, image := 0, ""
		for _, d := range deps.Items {
			v, _ := strconv.Atoi(d.Spec.Template.Labels["tug.dev/release"])
			if release != 0 && v != release {
				t.Fatalf("deployments in %s on releases %d and %d", ns, release, v)
			}
			release, image = v, d.Spec.Template.Spec.Containers[0].Image
		}
		return release, image
	}
	// answers: one of the app's Services answers /version now, a few times over
	answers := func() error {
		t.Helper()
		var urls []string
		for _, ns := range []string{h.NS, beta.NS} {
			if s, err := h.Client.CoreV1().Services(ns).Get(ctx, "shop", metav1.GetOptions{}); err == nil && s.Spec.ClusterIP != "" {
				urls = append(urls, "http://"+s.Spec.ClusterIP+"/version")
			}
		}
		for range 5 {
			ok := false
			var seen []string
			for _, u := range urls {
				code, body := status(u)
				if code == 200 {
					ok = true
					break
				}
				seen = append(seen, fmt.Sprintf("%s: %d %q", u, code, body))
			}
			if !ok {
				return fmt.Errorf("no copy answered: %v", seen)
			}
		}
		return nil
	}
	dropLeases := func() {
		t.Helper()
		pc.dropLeases("shop")
	}

	must("app", "create", "shop", "--pool", "pb")
	must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	must("app", "scale", "shop", "web=2")
	beta.waitUnits("shop", "web", 2, sampleV1)

	// App names complete from every configured cluster, and from the
	// current context (third), which commands fall back to.
	must("app", "create", "blog", "--context", "alpha")
	must("app", "create", "solo", "--context", "third")
	r := must("__complete", "app", "info", "")
	if r.Stdout != "blog\talpha\nshop\tbeta\nsolo\tthird\n:4\n" {
		t.Errorf("app names with clusters configured: %q", r.Stdout)
	}
	if r := must("__complete", "--context", "alpha", "app", "info", ""); r.Stdout != "blog\n:4\n" {
		t.Errorf("app names with --context alpha: %q", r.Stdout)
	}
	// and what follows the app's name comes from the cluster holding it
	if r := must("__complete", "app", "restart", "shop", "-p", ""); r.Stdout != "web\t2 units\n:4\n" {
		t.Errorf("processes of an app in another cluster than the current context: %q", r.Stdout)
	}

	// A move that fails (pool pnone has no node), -o json with stderr
	// piped: one JSON result on stdout saying failed, why, and where the
	// app serves; no stderr line that reads as success.
	r = tug("app", "pool", "set", "shop", "pnone", "--timeout", "60s", "-o", "json")
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
		failed.Serving.Cluster != "beta" || failed.Serving.Namespace != beta.NS || failed.To.Cluster != "alpha" || failed.Pool != "pnone" {
		t.Errorf("-o json of a failed move: %+v\n%s", failed, r.Stdout)
	}
	for _, line := range strings.Split(r.Stderr, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "moved ") || strings.Contains(l, " is running") || strings.Contains(l, "rolled back") || strings.HasPrefix(strings.TrimSpace(l), "✓") {
			t.Errorf("stderr of a failed move has a line that reads as success: %q\n%s", line, r.Stderr)
		}
	}
	if left := leftovers(h.NS); len(left) != 0 {
		t.Errorf("a failed move left in alpha: %v", left)
	}

	type point struct {
		name string
		rule faultproxy.Rule
		// after the kill: the copy that serves is the target's, and
		// whether the move is unfinished (it is, at every point here)
		targetServes bool
	}
	points := func(from, to side) []point {
		return []point{
			{"the source marked as a move's source", faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + from.ns + "/configmaps/tug-app-shop", Body: "startedAt", Fault: faultproxy.Lost, Count: 1}, false},
			{"the target's record written", faultproxy.Rule{Method: "POST", Path: "/namespaces/" + to.ns + "/configmaps", Fault: faultproxy.Lost, Count: 1}, false},
			{"the target's Deployment applied (its rollout under way)", faultproxy.Rule{Method: "PATCH", Path: "/namespaces/" + to.ns + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1}, false},
			{"the target rolled out (waiting for its endpoints)", faultproxy.Rule{Method: "GET", Path: "/namespaces/" + to.ns + "/endpointslices", Fault: faultproxy.Stall, Count: 1}, false},
			{"the source marked superseded", faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + from.ns + "/configmaps/tug-app-shop", Body: "superseded", Fault: faultproxy.Lost, Count: 1}, true},
			{"the source's Deployment deleted (its removal under way)", faultproxy.Rule{Method: "DELETE", Path: "/namespaces/" + from.ns + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1}, true},
			{"the source's first release record deleted (its record still there)", faultproxy.Rule{Method: "DELETE", Path: "/namespaces/" + from.ns + "/secrets/", Fault: faultproxy.Lost, Count: 1}, true},
		}
	}
	// killAt runs the move to pool through the proxy and kills tug once the
	// proxy holds the request of point p.
	killAt := func(p point, pool string) {
		t.Helper()
		px.killAt(p.name, p.rule, "app", "pool", "set", "shop", pool)
	}
	type row struct {
		point, from, to, infoAfter, rerun string
	}
	var table []row
	from, to := betaSide, alpha
	for i := range len(points(from, to)) {
		p := points(from, to)[i]
		t.Logf("kill %d: %s -> %s, after %s", i+1, from.cluster, to.cluster, p.name)
		killAt(p, to.pool)

		// app info with no --context: the copy that serves
		serving := from
		if p.targetServes {
			serving = to
		}
		in, r := appInfo()
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
		units, unitImage := template(in.Namespace)
		switch {
		case in.Release == units && in.Running != nil:
			t.Errorf("kill %d: app info: record v%d is what the Deployments run, but running = %+v", i+1, in.Release, in.Running)
		case in.Release == units && in.Image != unitImage:
			t.Errorf("kill %d: app info: image %s, the Deployments run %s", i+1, in.Image, unitImage)
		case in.Release != units && (in.Running == nil || in.Running.Releases[len(in.Running.Releases)-1] != units):
			t.Errorf("kill %d: app info: record v%d, the Deployments run v%d, running = %+v", i+1, in.Release, units, in.Running)
		}
		if err := answers(); err != nil {
			t.Errorf("kill %d: the app does not answer after the kill: %v", i+1, err)
		}
		after := fmt.Sprintf("%s's copy (v%d)", serving.cluster, in.Release)
		if in.Move != nil {
			after += ", " + in.Move.Role + " of an unfinished move"
		}
		if strings.Contains(r.Stderr, "also has a copy") {
			after += "; warns of the copy in " + map[bool]string{true: from.cluster, false: to.cluster}[p.targetServes]
		}

		// The same pool set again finishes (or redoes) the move. Twice,
		// before and after the switch, the killed tug's lease is left to
		// expire: until then a rerun is refused, naming the lock, and
		// prints nothing on stdout; afterwards it goes through.
		rerun := []string{"app", "pool", "set", "shop", to.pool, "-o", "json"}
		expiry := ""
		if i == 2 || i == 5 {
			if r = tug(rerun...); r.Code == 0 || !strings.Contains(r.Stderr, "is being changed by") || r.Stdout != "" {
				t.Errorf("kill %d: a rerun while the killed tug's lease is live: want it refused, naming the lock; got %s", i+1, r)
			}
			killed := time.Now()
			// paced at 2s: each try fails at once until the lease expires
			err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, false, func(context.Context) (bool, error) {
				r = tug(rerun...)
				return r.Code == 0 || !strings.Contains(r.Stderr, "is being changed by"), nil
			})
			if err != nil {
				t.Fatalf("kill %d: the killed tug's lease never expired: %v\n%s", i+1, err, r)
			}
			expiry = fmt.Sprintf(" (first refused, naming the lock; went through once the killed tug's leases expired, done %s after the kill)", time.Since(killed).Round(time.Second))
		} else {
			dropLeases()
			r = tug(rerun...)
		}
		if r.Code != 0 {
			t.Fatalf("kill %d: pool set again: %s", i+1, r)
		}
		var res struct {
			Status      string
			To, Serving struct{ Cluster, Namespace string }
		}
		if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res.Status != "moved" || res.Serving.Namespace != to.ns || res.To.Cluster != to.cluster {
			t.Errorf("kill %d: -o json of the rerun: %+v %v\n%s", i+1, res, err, r)
		}
		last := strings.TrimSpace(r.Stderr)
		last = last[strings.LastIndex(last, "\n")+1:]
		if _, msg, ok := strings.Cut(last, " "); ok { // drop the timestamp
			last = msg
		}
		if left := leftovers(from.ns); len(left) != 0 {
			t.Errorf("kill %d: the rerun left in %s: %v", i+1, from.cluster, left)
		}
		if !holds(to.ns) {
			t.Errorf("kill %d: no copy in %s after the rerun", i+1, to.cluster)
		}
		in, r = appInfo()
		if in.Namespace != to.ns || in.Pool != to.pool || in.Move != nil || strings.Contains(r.Stderr, "warning") {
			t.Errorf("kill %d: app info after the rerun: %+v\n%s", i+1, in, r)
		}
		to.h.waitUnits("shop", "web", 2, sampleV1)
		if v, img := template(to.ns); v != in.Release || img != sampleV1 {
			t.Errorf("kill %d: after the rerun the Deployments run v%d (%s), app info says v%d", i+1, v, img, in.Release)
		}
		if err := answers(); err != nil {
			t.Errorf("kill %d: the app does not answer after the rerun: %v", i+1, err)
		}
		table = append(table, row{p.name, from.cluster, to.cluster, after, last + expiry})
		from, to = to, from
	}

	// Killed twice: a move killed during its target rollout, then the
	// rerun killed while it removes that half-made copy. The source still
	// serves, and a third run moves the app.
	killAt(points(from, to)[2], to.pool)
	dropLeases()
	killAt(point{"the rerun deleted the half-made copy's Deployment", faultproxy.Rule{Method: "DELETE", Path: "/namespaces/" + to.ns + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1}, false}, to.pool)
	dropLeases()
	if in, r := appInfo(); in.Namespace != from.ns || in.Move == nil {
		t.Errorf("after a rerun killed while removing the half-made copy: app info %+v\n%s", in, r)
	}
	if err := answers(); err != nil {
		t.Errorf("the app does not answer after the second kill: %v", err)
	}
	must("app", "pool", "set", "shop", to.pool)
	if left := leftovers(from.ns); len(left) != 0 {
		t.Errorf("the third run left in %s: %v", from.cluster, left)
	}
	if in, r := appInfo(); in.Namespace != to.ns || in.Pool != to.pool || in.Move != nil || strings.Contains(r.Stderr, "warning") {
		t.Errorf("app info after the third run: %+v\n%s", in, r)
	}
	to.h.waitUnits("shop", "web", 2, sampleV1)
	from, to = to, from

	// Given up: a move killed after the target's record was written, then
	// the app asked to stay on its pool: the half-made copy goes, app info
	// no longer calls the move unfinished, and nothing is rolled out: the
	// same release, the same units (their UIDs).
	killAt(points(from, to)[1], to.pool)
	dropLeases()
	before, _ := appInfo()
	if before.Move == nil {
		t.Errorf("before giving up: app info shows no unfinished move: %+v", before)
	}
	unitUIDs := func(ns string) []string {
		t.Helper()
		pods, err := h.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=shop"})
		if err != nil {
			t.Fatal(err)
		}
		var uids []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil { // units of an earlier rollout may still be going
				uids = append(uids, string(p.UID))
			}
		}
		slices.Sort(uids)
		return uids
	}
	uidsBefore := unitUIDs(from.ns)
	var kept struct {
		Release        int
		UnitsRestarted *bool
	}
	if r := must("app", "pool", "set", "shop", from.pool, "-o", "json"); json.Unmarshal([]byte(r.Stdout), &kept) != nil || kept.Release != before.Release || kept.UnitsRestarted == nil || *kept.UnitsRestarted {
		t.Errorf("giving up the move: want v%d, unitsRestarted false; got %s", before.Release, r)
	}
	if after := unitUIDs(from.ns); len(uidsBefore) == 0 || !slices.Equal(after, uidsBefore) {
		t.Errorf("giving up the move replaced the units: UIDs %v, then %v", uidsBefore, after)
	}
	if left := leftovers(to.ns); len(left) != 0 {
		t.Errorf("giving up the move left in %s: %v", to.cluster, left)
	}
	if in, r := appInfo(); in.Namespace != from.ns || in.Pool != from.pool || in.Move != nil || in.Release != before.Release || strings.Contains(r.Stderr, "warning") {
		t.Errorf("app info after giving up the move: %+v\n%s", in, r)
	}
	if err := answers(); err != nil {
		t.Errorf("the app does not answer after giving up the move: %v", err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "| # | move | killed after | `app info` right after the kill | the same `app pool set` again |\n|---|---|---|---|---|\n")
	for i, r := range table {
		fmt.Fprintf(&b, "| %d | %s -> %s | %s | %s | %s |\n", i+1, r.from, r.to, r.point, r.infoAfter, r.rerun)
	}
	t.Logf("kill -9 during a move:\n%s", b.String())
}
