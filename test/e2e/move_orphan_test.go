package e2e

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"tug.dev/tug/test/faultproxy"
)

// The moves between clusters that must not happen, and the one that only
// happens when asked, on the clusters of newPoolClusters (alpha: pools pa
// and pnone, which has no node; beta: pool pb):
//
//  1. An app with config staged by 'env set --no-restart' does not move:
//     the pool set fails with a usage error, prints nothing on stdout with
//     -o json (docs/output.md: a failure before the move starts), and
//     nothing changes (the app serves in alpha on the same release, beta's
//     namespace holds nothing of it).
//  2. A move killed after the new copy in beta rolled out, before the old
//     copy was marked superseded, then the old copy removed by hand: beta
//     holds an orphaned new copy. Commands routed to it warn on stderr
//     (-o json stays one JSON value on stdout) and still work; 'app pool
//     set' without --adopt says its rollout had completed and changes
//     nothing.
//  3. --adopt makes it the app: its mark goes, the warning with it, its
//     units keep running untouched (same pods, same Deployment generation,
//     no new release); a second --adopt is refused.
//  4. A move to pnone killed while the new copy's rollout is under way (it
//     can never complete: no node has pnone), then its old copy removed by
//     hand: --adopt is refused, saying the rollout never completed.
func TestMoveStagedOrphanAdopt(t *testing.T) {
	pc := newPoolClusters(t)
	alpha := pc.Alpha
	m := &movingApp{pc: pc, px: pc.viaProxy(), name: "shop"}
	pc.Must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa,pnone")
	pc.Must("cluster", "add", "beta", "--context", "beta", "--pool", "pb")

	pc.Must("app", "create", "shop", "--pool", "pa")
	pc.Must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	pc.Must("app", "scale", "shop", "web=2")
	alpha.waitUnits("shop", "web", 2, sampleV1)
	before, _ := m.whereRun()
	if before.Namespace != alpha.NS || before.Release == 0 {
		t.Fatalf("app info before the moves: %+v", before)
	}

	stagedRefused(t, m, before)
	orphan := killedIntoOrphan(t, m)
	adoptOrphan(t, m, orphan)
	neverRolledOut(t, m)
}

// stagedRefused: 1. Staged config: the move is refused before it starts;
// rolled out, the staged config no longer stops a move.
func stagedRefused(t *testing.T, m *movingApp, before appInfoJSON) {
	t.Helper()
	pc, alpha, beta := m.pc, m.pc.Alpha, m.pc.Beta
	pc.Must("env", "set", "shop", "STAGED=yes", "--no-restart")
	staged := "has config staged with 'env set --no-restart'"
	r := pc.Tug("app", "pool", "set", "shop", "pb")
	if r.Code != 2 || !strings.Contains(r.Stderr, staged) || !strings.Contains(r.Stderr, "roll it out first") {
		t.Errorf("a move with config staged: want exit 2 saying %q and what to do; got %s", staged, r)
	}
	r = pc.Tug("app", "pool", "set", "shop", "pb", "-o", "json")
	if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, staged) {
		t.Errorf("a move with config staged, -o json: want exit 2, nothing on stdout (it failed before it started), the reason on stderr; got %s", r)
	}
	if in, r := m.whereRun(); in.Namespace != alpha.NS || in.Release != before.Release || in.Pool != "pa" || in.Move != nil || strings.Contains(r.Stderr, "warning") {
		t.Errorf("after the refused move: want the app in alpha on v%d, pool pa, no move; got %+v\n%s", before.Release, in, r)
	}
	if v, _ := m.deployments(alpha.NS); v != before.Release {
		t.Errorf("after the refused move alpha's Deployments run v%d, want v%d", v, before.Release)
	}
	if left := alpha.appLeftovers(beta.NS, "shop"); len(left) != 0 {
		t.Errorf("the refused move made in beta: %v", left)
	}
	pc.Must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	rolled, _ := m.whereRun()
	if rolled.Release <= before.Release {
		t.Fatalf("the deploy rolling the staged config out: %+v", rolled)
	}
}

// orphanCopy is beta's orphaned copy as it was made: its units' UIDs,
// its release, its Deployments' generations.
type orphanCopy struct {
	uids    []string
	release int
	gens    map[string]int64
}

// orphanWarning is what every command routed to the orphan warns.
var orphanWarning = []string{`app "shop" in cluster "beta" is the new copy of a move that never finished`,
	"no configured cluster holds its old copy any more", "'tug app pool set shop pb' says what to do"}

// warnsOrphan checks that r warns orphanWarning on stderr, and nothing on
// stdout.
func warnsOrphan(t *testing.T, what string, r Result) {
	t.Helper()
	for _, w := range orphanWarning {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("%s: stderr does not warn %q: %s", what, w, r)
		}
	}
	if strings.Contains(r.Stdout, "warning") {
		t.Errorf("%s: a warning on stdout: %s", what, r)
	}
}

// killedIntoOrphan: 2. A move to pb killed once beta's copy rolled out,
// just before the old copy is marked superseded (the proxy never passes
// that write on), then the old copy removed by hand: beta's copy is an
// orphan. Commands routed to it warn and still work; pool set without
// --adopt changes nothing.
func killedIntoOrphan(t *testing.T, m *movingApp) orphanCopy {
	t.Helper()
	pc, alpha, beta := m.pc, m.pc.Alpha, m.pc.Beta
	m.killMove("the new copy rolled out, the old one not yet superseded", faultproxy.Rule{
		Method: "PUT", Path: "/namespaces/" + alpha.NS + "/configmaps/tug-app-shop", Body: "superseded", Fault: faultproxy.Stall, Count: 1,
	}, "pb")
	pc.dropLeases("shop")
	if in, r := m.whereRun(); in.Namespace != alpha.NS || in.Move == nil || in.Move.Role != "source" || !strings.Contains(r.Stderr, `also has a copy in cluster "beta"`) {
		t.Fatalf("after the kill: want alpha's copy serving, marked as the move's source, and a warning of beta's; got %+v\n%s", in, r)
	}
	pc.Must("app", "remove", "shop", "--context", "alpha", "--yes")
	if left := alpha.appLeftovers(alpha.NS, "shop"); len(left) != 0 {
		t.Fatalf("app remove --context alpha left: %v", left)
	}
	beta.waitUnits("shop", "web", 2, sampleV1)
	o := orphanCopy{uids: m.webPodUIDs(beta.NS)}
	o.release, o.gens = m.deployments(beta.NS)

	r := pc.Must("app", "info", "shop")
	warnsOrphan(t, "app info of the orphan", r)
	if !strings.Contains(r.Stdout, "Namespace:  "+beta.NS) {
		t.Errorf("app info of the orphan does not show beta's copy: %s", r)
	}
	in, r := m.whereRun() // valid JSON on stdout, or infoJSON fails the test
	warnsOrphan(t, "app info -o json of the orphan", r)
	if in.Namespace != beta.NS || in.Pool != "pb" || in.Release != o.release || in.Move == nil || in.Move.Role != "target" || in.Move.From != "alpha" {
		t.Errorf("app info -o json of the orphan: want beta's copy on v%d, pool pb, marked the target of a move from alpha; got %+v", o.release, in)
	}
	r = pc.Must("unit", "list", "shop", "-o", "json")
	warnsOrphan(t, "unit list -o json of the orphan", r)
	var units []unitRow
	if err := json.Unmarshal([]byte(r.Stdout), &units); err != nil || len(units) != 2 || !strings.HasPrefix(units[0].Name, "shop-web-") {
		t.Errorf("unit list -o json of the orphan: want its 2 units as JSON (%v): %s", err, r)
	}
	// without --adopt: what happened and what to do, nothing changed
	r = pc.Tug("app", "pool", "set", "shop", "pb")
	if r.Code != 2 || !strings.Contains(r.Stderr, "its rollout there had completed: pass --adopt to make it the app") {
		t.Errorf("pool set of the orphan without --adopt: want exit 2 offering --adopt; got %s", r)
	}
	if in, _ := m.whereRun(); in.Move == nil || in.Move.Role != "target" {
		t.Errorf("pool set without --adopt changed the orphan's mark: %+v", in)
	}
	return o
}

// adoptOrphan: 3. --adopt: beta's copy is the app, its units untouched
// (same pods, same Deployment generations, no new release); a second
// --adopt is refused.
func adoptOrphan(t *testing.T, m *movingApp, o orphanCopy) {
	t.Helper()
	pc, beta := m.pc, m.pc.Beta
	r := pc.Must("app", "pool", "set", "shop", "pb", "--adopt", "-o", "json")
	var adopted struct {
		App, Pool, Status string
		To, Serving       struct{ Cluster, Namespace string }
		Release           int
	}
	if err := json.Unmarshal([]byte(r.Stdout), &adopted); err != nil {
		t.Fatalf("--adopt -o json: %v\n%s", err, r)
	}
	if adopted.Status != "moved" || adopted.To.Cluster != "beta" || adopted.Serving.Namespace != beta.NS || adopted.Pool != "pb" || adopted.Release != o.release {
		t.Errorf("--adopt -o json: %+v\n%s", adopted, r)
	}
	if !strings.Contains(r.Stderr, `the move of shop to cluster "beta" is finished`) {
		t.Errorf("--adopt does not say the move is finished: %s", r)
	}
	in, r := m.whereRun()
	if in.Namespace != beta.NS || in.Pool != "pb" || in.Release != o.release || in.Move != nil || strings.Contains(r.Stderr, "warning") {
		t.Errorf("app info after --adopt: want beta's copy on v%d, no move, no warning; got %+v\n%s", o.release, in, r)
	}
	if r := pc.Must("app", "info", "shop"); r.Stderr != "" || strings.Contains(r.Stdout, "Move:") {
		t.Errorf("app info after --adopt still tells of a move: %s", r)
	}
	if v, g := m.deployments(beta.NS); v != o.release || !maps.Equal(g, o.gens) {
		t.Errorf("--adopt touched the Deployments: v%d %v, before v%d %v", v, g, o.release, o.gens)
	}
	if got := m.webPodUIDs(beta.NS); !slices.Equal(got, o.uids) {
		t.Errorf("--adopt replaced units: pods %v, before %v", got, o.uids)
	}
	beta.waitUnits("shop", "web", 2, sampleV1)
	for _, rel := range beta.releases("shop") {
		if rel.Version > o.release {
			t.Errorf("--adopt made a release: v%d (%s), after v%d", rel.Version, rel.Status, o.release)
		}
	}
	r = pc.Tug("app", "pool", "set", "shop", "pb", "--adopt")
	if r.Code != 2 || !strings.Contains(r.Stderr, `--adopt is only for the new copy of a move whose old copy is gone, and app "shop" is not one`) {
		t.Errorf("a second --adopt: want exit 2, nothing to adopt; got %s", r)
	}
}

// neverRolledOut: 4. A move to pnone (no node: its rollout never
// completes) killed once alpha's Deployment is applied, the old copy in
// beta then removed: --adopt is refused, and app remove of the new copy
// wants --move-copy.
func neverRolledOut(t *testing.T, m *movingApp) {
	t.Helper()
	pc, alpha, beta := m.pc, m.pc.Alpha, m.pc.Beta
	m.killMove("the new copy's Deployment applied (its rollout under way)", faultproxy.Rule{
		Method: "PATCH", Path: "/namespaces/" + alpha.NS + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1,
	}, "pnone")
	pc.dropLeases("shop")
	pc.Must("app", "remove", "shop", "--context", "beta", "--yes")
	r := pc.Must("app", "info", "shop")
	if !strings.Contains(r.Stderr, `app "shop" in cluster "alpha" is the new copy of a move that never finished`) || !strings.Contains(r.Stderr, "app pool set shop pnone") {
		t.Errorf("app info of an orphan that never rolled out: want the warning naming alpha and pnone; got %s", r)
	}
	r = pc.Tug("app", "pool", "set", "shop", "pnone", "--adopt")
	if r.Code != 2 || !strings.Contains(r.Stderr, "its rollout there never completed, so tug will not make it the app") {
		t.Errorf("--adopt of a copy whose rollout never completed: want exit 2 refusing; got %s", r)
	}
	if in, _ := m.whereRun(); in.Namespace != alpha.NS || in.Move == nil || in.Move.Role != "target" {
		t.Errorf("the refused --adopt changed the copy: %+v", in)
	}
	// with --context, tug cannot see that the old copy is gone: the new
	// copy of a move is removed only when the user says it is one
	r = pc.Tug("app", "remove", "shop", "--context", "alpha", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "is the new copy of an unfinished move") || !strings.Contains(r.Stderr, "--move-copy") {
		t.Errorf("app remove of a move's new copy without --move-copy: want exit 2 naming --move-copy; got %s", r)
	}
	if in, _ := m.whereRun(); in.Namespace != alpha.NS || in.Move == nil || in.Move.Role != "target" {
		t.Errorf("the refused remove changed the copy: %+v", in)
	}
	pc.Must("app", "remove", "shop", "--context", "alpha", "--yes", "--move-copy")
	for _, ns := range []string{alpha.NS, beta.NS} {
		if left := alpha.appLeftovers(ns, "shop"); len(left) != 0 {
			t.Errorf("left in %s: %v", ns, left)
		}
	}
}
