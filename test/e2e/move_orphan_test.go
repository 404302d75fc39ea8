package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	alpha, beta := pc.Alpha, pc.Beta
	tug, must := pc.Tug, pc.Must
	px := pc.viaProxy()
	must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa,pnone")
	must("cluster", "add", "beta", "--context", "beta", "--pool", "pb")
	ctx := context.Background()
	info := func() (appInfoJSON, Result) {
		t.Helper()
		var in appInfoJSON
		r := pc.infoJSON("shop", &in)
		return in, r
	}
	// the release the app's Deployments in ns run, and their generations
	deployments := func(ns string) (int, map[string]int64) {
		t.Helper()
		deps, err := alpha.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=shop"})
		if err != nil {
			t.Fatal(err)
		}
		release, gens := 0, map[string]int64{}
		for _, d := range deps.Items {
			release, _ = strconv.Atoi(d.Spec.Template.Labels["tug.dev/release"])
			gens[d.Name] = d.Generation
		}
		return release, gens
	}
	podUIDs := func(ns string) []string {
		t.Helper()
		pods, err := alpha.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=shop,tug.dev/process=web"})
		if err != nil {
			t.Fatal(err)
		}
		var uids []string
		for _, p := range pods.Items {
			uids = append(uids, string(p.UID))
		}
		slices.Sort(uids)
		return uids
	}

	must("app", "create", "shop", "--pool", "pa")
	must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	must("app", "scale", "shop", "web=2")
	alpha.waitUnits("shop", "web", 2, sampleV1)
	before, _ := info()
	if before.Namespace != alpha.NS || before.Release == 0 {
		t.Fatalf("app info before the moves: %+v", before)
	}

	// 1. Staged config: the move is refused before it starts.
	must("env", "set", "shop", "STAGED=yes", "--no-restart")
	staged := "has config staged with 'env set --no-restart'"
	r := tug("app", "pool", "set", "shop", "pb")
	if r.Code != 2 || !strings.Contains(r.Stderr, staged) || !strings.Contains(r.Stderr, "roll it out first") {
		t.Errorf("a move with config staged: want exit 2 saying %q and what to do; got %s", staged, r)
	}
	r = tug("app", "pool", "set", "shop", "pb", "-o", "json")
	if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, staged) {
		t.Errorf("a move with config staged, -o json: want exit 2, nothing on stdout (it failed before it started), the reason on stderr; got %s", r)
	}
	if in, r := info(); in.Namespace != alpha.NS || in.Release != before.Release || in.Pool != "pa" || in.Move != nil || strings.Contains(r.Stderr, "warning") {
		t.Errorf("after the refused move: want the app in alpha on v%d, pool pa, no move; got %+v\n%s", before.Release, in, r)
	}
	if v, _ := deployments(alpha.NS); v != before.Release {
		t.Errorf("after the refused move alpha's Deployments run v%d, want v%d", v, before.Release)
	}
	if left := alpha.appLeftovers(beta.NS, "shop"); len(left) != 0 {
		t.Errorf("the refused move made in beta: %v", left)
	}
	// rolled out, the staged config no longer stops a move
	must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	rolled, _ := info()
	if rolled.Release <= before.Release {
		t.Fatalf("the deploy rolling the staged config out: %+v", rolled)
	}

	// 2. A move to pb killed once beta's copy rolled out, just before the
	// old copy is marked superseded (the proxy never passes that write on).
	px.killAt("the new copy rolled out, the old one not yet superseded", faultproxy.Rule{
		Method: "PUT", Path: "/namespaces/" + alpha.NS + "/configmaps/tug-app-shop", Body: "superseded", Fault: faultproxy.Stall, Count: 1,
	}, "app", "pool", "set", "shop", "pb")
	pc.dropLeases("shop")
	if in, r := info(); in.Namespace != alpha.NS || in.Move == nil || in.Move.Role != "source" || !strings.Contains(r.Stderr, `also has a copy in cluster "beta"`) {
		t.Fatalf("after the kill: want alpha's copy serving, marked as the move's source, and a warning of beta's; got %+v\n%s", in, r)
	}
	// the old copy removed by hand: beta's copy is an orphan
	must("app", "remove", "shop", "--context", "alpha", "--yes")
	if left := alpha.appLeftovers(alpha.NS, "shop"); len(left) != 0 {
		t.Fatalf("app remove --context alpha left: %v", left)
	}
	beta.waitUnits("shop", "web", 2, sampleV1)
	uids := podUIDs(beta.NS)
	release, gens := deployments(beta.NS)

	orphan := []string{`app "shop" in cluster "beta" is the new copy of a move that never finished`,
		"no configured cluster holds its old copy any more", "'tug app pool set shop pb' says what to do"}
	warns := func(what string, r Result) {
		t.Helper()
		for _, w := range orphan {
			if !strings.Contains(r.Stderr, w) {
				t.Errorf("%s: stderr does not warn %q: %s", what, w, r)
			}
		}
		if strings.Contains(r.Stdout, "warning") {
			t.Errorf("%s: a warning on stdout: %s", what, r)
		}
	}
	r = must("app", "info", "shop")
	warns("app info of the orphan", r)
	if !strings.Contains(r.Stdout, "Namespace:  "+beta.NS) {
		t.Errorf("app info of the orphan does not show beta's copy: %s", r)
	}
	in, r := info() // valid JSON on stdout, or infoJSON fails the test
	warns("app info -o json of the orphan", r)
	if in.Namespace != beta.NS || in.Pool != "pb" || in.Release != release || in.Move == nil || in.Move.Role != "target" || in.Move.From != "alpha" {
		t.Errorf("app info -o json of the orphan: want beta's copy on v%d, pool pb, marked the target of a move from alpha; got %+v", release, in)
	}
	r = must("unit", "list", "shop", "-o", "json")
	warns("unit list -o json of the orphan", r)
	var units []unitRow
	if err := json.Unmarshal([]byte(r.Stdout), &units); err != nil || len(units) != 2 || !strings.HasPrefix(units[0].Name, "shop-web-") {
		t.Errorf("unit list -o json of the orphan: want its 2 units as JSON (%v): %s", err, r)
	}
	// without --adopt: what happened and what to do, nothing changed
	r = tug("app", "pool", "set", "shop", "pb")
	if r.Code != 2 || !strings.Contains(r.Stderr, "its rollout there had completed: pass --adopt to make it the app") {
		t.Errorf("pool set of the orphan without --adopt: want exit 2 offering --adopt; got %s", r)
	}
	if in, _ := info(); in.Move == nil || in.Move.Role != "target" {
		t.Errorf("pool set without --adopt changed the orphan's mark: %+v", in)
	}

	// 3. --adopt: beta's copy is the app, its units untouched.
	r = must("app", "pool", "set", "shop", "pb", "--adopt", "-o", "json")
	var adopted struct {
		App, Pool, Status string
		To, Serving       struct{ Cluster, Namespace string }
		Release           int
	}
	if err := json.Unmarshal([]byte(r.Stdout), &adopted); err != nil {
		t.Fatalf("--adopt -o json: %v\n%s", err, r)
	}
	if adopted.Status != "moved" || adopted.To.Cluster != "beta" || adopted.Serving.Namespace != beta.NS || adopted.Pool != "pb" || adopted.Release != release {
		t.Errorf("--adopt -o json: %+v\n%s", adopted, r)
	}
	if !strings.Contains(r.Stderr, `the move of shop to cluster "beta" is finished`) {
		t.Errorf("--adopt does not say the move is finished: %s", r)
	}
	in, r = info()
	if in.Namespace != beta.NS || in.Pool != "pb" || in.Release != release || in.Move != nil || strings.Contains(r.Stderr, "warning") {
		t.Errorf("app info after --adopt: want beta's copy on v%d, no move, no warning; got %+v\n%s", release, in, r)
	}
	if r := must("app", "info", "shop"); r.Stderr != "" || strings.Contains(r.Stdout, "Move:") {
		t.Errorf("app info after --adopt still tells of a move: %s", r)
	}
	if v, g := deployments(beta.NS); v != release || !maps.Equal(g, gens) {
		t.Errorf("--adopt touched the Deployments: v%d %v, before v%d %v", v, g, release, gens)
	}
	if got := podUIDs(beta.NS); !slices.Equal(got, uids) {
		t.Errorf("--adopt replaced units: pods %v, before %v", got, uids)
	}
	beta.waitUnits("shop", "web", 2, sampleV1)
	for _, rel := range beta.releases("shop") {
		if rel.Version > release {
			t.Errorf("--adopt made a release: v%d (%s), after v%d", rel.Version, rel.Status, release)
		}
	}
	r = tug("app", "pool", "set", "shop", "pb", "--adopt")
	if r.Code != 2 || !strings.Contains(r.Stderr, `--adopt is only for the new copy of a move whose old copy is gone, and app "shop" is not one`) {
		t.Errorf("a second --adopt: want exit 2, nothing to adopt; got %s", r)
	}

	// 4. A move to pnone (no node: its rollout never completes) killed once
	// alpha's Deployment is applied, the old copy in beta then removed.
	px.killAt("the new copy's Deployment applied (its rollout under way)", faultproxy.Rule{
		Method: "PATCH", Path: "/namespaces/" + alpha.NS + "/deployments/shop-web", Fault: faultproxy.Lost, Count: 1,
	}, "app", "pool", "set", "shop", "pnone")
	pc.dropLeases("shop")
	must("app", "remove", "shop", "--context", "beta", "--yes")
	r = must("app", "info", "shop")
	if !strings.Contains(r.Stderr, `app "shop" in cluster "alpha" is the new copy of a move that never finished`) || !strings.Contains(r.Stderr, "app pool set shop pnone") {
		t.Errorf("app info of an orphan that never rolled out: want the warning naming alpha and pnone; got %s", r)
	}
	r = tug("app", "pool", "set", "shop", "pnone", "--adopt")
	if r.Code != 2 || !strings.Contains(r.Stderr, "its rollout there never completed, so tug will not make it the app") {
		t.Errorf("--adopt of a copy whose rollout never completed: want exit 2 refusing; got %s", r)
	}
	if in, _ := info(); in.Namespace != alpha.NS || in.Move == nil || in.Move.Role != "target" {
		t.Errorf("the refused --adopt changed the copy: %+v", in)
	}
	// with --context, tug cannot see that the old copy is gone: the new
	// copy of a move is removed only when the user says it is one
	r = tug("app", "remove", "shop", "--context", "alpha", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "is the new copy of an unfinished move") || !strings.Contains(r.Stderr, "--move-copy") {
		t.Errorf("app remove of a move's new copy without --move-copy: want exit 2 naming --move-copy; got %s", r)
	}
	if in, _ := info(); in.Namespace != alpha.NS || in.Move == nil || in.Move.Role != "target" {
		t.Errorf("the refused remove changed the copy: %+v", in)
	}
	must("app", "remove", "shop", "--context", "alpha", "--yes", "--move-copy")
	for _, ns := range []string{alpha.NS, beta.NS} {
		if left := alpha.appLeftovers(ns, "shop"); len(left) != 0 {
			t.Errorf("left in %s: %v", ns, left)
		}
	}
}
