package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pools on every command, and moves between clusters. Two contexts of the
// one local cluster, each with its own namespace, stand in for two
// clusters (alpha holds pools pa and pnone, beta pool pb); a third context
// in a namespace that holds nothing is the current one, and a dead context
// is configured too. Pool pa is one node's label, pb the other's.
//
// What this proves: tug finds the app's cluster by asking each configured
// context, sends every app command there with no --context, and moves an
// app from one context to another keeping it answering. What it cannot
// prove with one API server: separate registries, networks, credentials or
// clocks; the same images and nodes serve both "clusters".
func TestClusterPoolsRouteAndMove(t *testing.T) {
	pc := newPoolClusters(t, "dead")
	h, beta, third, nodes, cc := pc.Alpha, pc.Beta, pc.Third, pc.Nodes, pc.clusterContexts
	kubeconfig := cc.Kubeconfig
	onAlpha := cc.write(filepath.Join(t.TempDir(), "kubeconfig-alpha"), "alpha")
	tugWith := func(kc string, args ...string) Result {
		t.Helper()
		start := time.Now()
		r := h.TugRun(Run{Args: args, Env: cc.Env(kc)})
		t.Logf("tug %s: exit %d in %s", strings.Join(args, " "), r.Code, time.Since(start).Round(100*time.Millisecond))
		return r
	}
	tug := func(args ...string) Result {
		t.Helper()
		return tugWith(kubeconfig, args...)
	}
	must := func(args ...string) Result {
		t.Helper()
		r := tug(args...)
		if r.Code != 0 {
			t.Fatalf("tug %s: %s", strings.Join(args, " "), r)
		}
		return r
	}
	must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa")
	must("cluster", "add", "beta", "--context", "beta", "--pool", "pb")
	must("cluster", "add", "dead", "--context", "dead", "--pool", "pd")
	ctx := context.Background()
	holds := func(ns string) bool {
		t.Helper()
		return h.holdsApp(ns, "shop")
	}
	leftovers := func(ns string) []string {
		t.Helper()
		return h.appLeftovers(ns, "shop")
	}
	info := func() appInfoJSON {
		t.Helper()
		var in appInfoJSON
		cc.infoJSON("shop", &in)
		return in
	}

	// From the third context, with no --context: every command reaches
	// beta, pb's cluster.
	must("app", "create", "shop", "--pool", "pb")
	must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	// current context alpha: still beta
	if r := tugWith(onAlpha, "app", "scale", "shop", "web=2"); r.Code != 0 {
		t.Fatalf("app scale with alpha current: %s", r)
	}
	pods := beta.waitUnits("shop", "web", 2, sampleV1)
	for _, p := range pods {
		if p.Spec.NodeName != nodes[1] {
			t.Errorf("unit %s of pool pb runs on %s, want %s", p.Name, p.Spec.NodeName, nodes[1])
		}
	}
	if holds(h.NS) || holds(third.NS) || !holds(beta.NS) {
		t.Fatalf("the app should be in beta's namespace only: alpha %v, third %v, beta %v", leftovers(h.NS), leftovers(third.NS), leftovers(beta.NS))
	}
	if d, err := h.Client.AppsV1().Deployments(beta.NS).Get(ctx, "shop-web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("scale should reach beta's Deployment: %v", err)
	}
	h.Eventually(30*time.Second, "logs through the routed context", func() (bool, error) {
		r := tug("logs", "shop", "--tail", "-1")
		return r.Code == 0 && strings.Contains(r.Stdout, "sample v1"), fmt.Errorf("%s", r)
	})
	r := h.TugRun(Run{Args: []string{"shell", "shop"}, Stdin: "echo routed-$HOSTNAME\n", Env: cc.Env(kubeconfig)})
	if r.Code != 0 || !strings.Contains(r.Stdout, "routed-shop-web-") {
		t.Fatalf("piped shell: %s", r)
	}
	host := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.Stdout), "routed-"))
	if _, err := h.Client.CoreV1().Pods(beta.NS).Get(ctx, host, metav1.GetOptions{}); err != nil {
		t.Fatalf("the shell ran in %q, not a unit in beta's namespace: %v", host, err)
	}
	if r := must("run", "shop", "--", "sh", "-c", "echo routed-run"); !strings.Contains(r.Stdout, "routed-run") {
		t.Fatalf("run: %s", r)
	}
	if in := info(); in.Namespace != beta.NS || in.Pool != "pb" {
		t.Fatalf("app info from the third context: namespace %s pool %s; want %s, pb", in.Namespace, in.Pool, beta.NS)
	}

	// Not found anywhere: the error says where tug looked, and that dead
	// did not answer.
	if r := tug("app", "info", "ghost"); r.Code != 1 || !strings.Contains(r.Stderr, "searched clusters") || !strings.Contains(r.Stderr, "alpha") ||
		!strings.Contains(r.Stderr, "unreachable") || !strings.Contains(r.Stderr, "dead") {
		t.Errorf("app info of an app nowhere: want exit 1 naming the clusters searched and dead unreachable; got %s", r)
	}
	// In two clusters: exit 2 asking for --context; --context picks one.
	must("app", "create", "twin", "--context", "alpha")
	must("app", "create", "twin", "--context", "beta")
	if r := tug("app", "info", "twin"); r.Code != 2 || !strings.Contains(r.Stderr, "several clusters") || !strings.Contains(r.Stderr, "--context") {
		t.Errorf("app info of an app in two clusters: want exit 2 asking for --context; got %s", r)
	}
	if r := must("app", "info", "twin", "--context", "beta", "-o", "json"); !strings.Contains(r.Stdout, beta.NS) {
		t.Errorf("--context beta: %s", r)
	}
	// --context on a copy the map puts elsewhere: a warning, and it acts.
	if r := must("app", "info", "shop", "--context", "beta"); strings.Contains(r.Stderr, "warning") {
		t.Errorf("--context of the app's own cluster should not warn: %s", r)
	}

	// A move whose rollout fails (alpha's pool pnone has no node): the app
	// keeps serving in beta, and nothing of it is left in alpha.
	must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa,pnone")
	r = tug("app", "pool", "set", "shop", "pnone", "--timeout", "60s")
	if r.Code != 13 || !strings.Contains(r.Stderr, `still serves in cluster "beta"`) || !strings.Contains(r.Stderr, "unschedulable") {
		t.Fatalf("a move to a pool with no node: want exit 13 saying it still serves in beta; got %s", r)
	}
	if left := leftovers(h.NS); len(left) != 0 {
		t.Errorf("a failed move left in alpha: %v", left)
	}
	if in := info(); in.Namespace != beta.NS || in.Pool != "pb" || in.Move != nil {
		t.Errorf("after a failed move: %+v", in)
	}
	svc, err := h.Client.CoreV1().Services(beta.NS).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldURL := "http://" + svc.Spec.ClusterIP + "/version"
	h.waitStatus(oldURL, 200, "v1")

	// --dry-run says what would move and changes nothing.
	if r := must("app", "pool", "set", "shop", "pa", "--dry-run"); !strings.Contains(r.Stdout, `would move from cluster "beta" to cluster "alpha"`) || holds(h.NS) {
		t.Fatalf("dry run: %s", r)
	}

	// The move: polled all along, the old or the new address answers.
	var (
		polls, gaps atomic.Int64
		newServed   atomic.Bool
		mu          sync.Mutex
		gapNotes    []string
		stop        = make(chan struct{})
		done        = make(chan struct{})
	)
	go func() {
		defer close(done)
		newURL := ""
		// paced, not synchronising: a poll every 20ms leaves CPU to the move
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if newURL == "" {
				if s, err := h.Client.CoreV1().Services(h.NS).Get(ctx, "shop", metav1.GetOptions{}); err == nil && s.Spec.ClusterIP != "" {
					newURL = "http://" + s.Spec.ClusterIP + "/version"
				}
			}
			polls.Add(1)
			oc, ob := status(oldURL)
			if oc == 200 {
				continue
			}
			nc, nb := 0, "no Service yet"
			if newURL != "" {
				nc, nb = status(newURL)
			}
			if nc == 200 {
				newServed.Store(true)
				continue
			}
			gaps.Add(1)
			mu.Lock()
			gapNotes = append(gapNotes, fmt.Sprintf("%s: old %d %q, new %d %q", time.Now().Format("15:04:05.000"), oc, ob, nc, nb))
			mu.Unlock()
		}
	}()
	moved := tug("app", "pool", "set", "shop", "pa", "-o", "json")
	close(stop)
	<-done
	if moved.Code != 0 {
		t.Fatalf("app pool set shop pa: %s", moved)
	}
	var res struct {
		App, Pool, Status string
		From, To          struct{ Cluster, Namespace string }
		Release           int
	}
	if err := json.Unmarshal([]byte(moved.Stdout), &res); err != nil {
		t.Fatalf("move -o json: %v\n%s", err, moved)
	}
	if res.Status != "moved" || res.From.Cluster != "beta" || res.To.Cluster != "alpha" || res.To.Namespace != h.NS || res.Pool != "pa" {
		t.Errorf("move result %+v", res)
	}
	if gaps.Load() > 0 {
		t.Errorf("%d of %d polls found neither copy answering:\n%s", gaps.Load(), polls.Load(), strings.Join(gapNotes, "\n"))
	}
	t.Logf("%d polls during the move; the new copy answered: %v", polls.Load(), newServed.Load())
	if polls.Load() < 10 || !newServed.Load() {
		t.Errorf("%d polls during the move, the new copy answered: %v; want both copies seen answering", polls.Load(), newServed.Load())
	}
	if left := leftovers(beta.NS); len(left) != 0 {
		t.Errorf("the move left in beta: %v", left)
	}
	moved2 := h.waitUnits("shop", "web", 2, sampleV1)
	for _, p := range moved2 {
		if p.Spec.NodeName != nodes[0] {
			t.Errorf("unit %s of pool pa runs on %s, want %s", p.Name, p.Spec.NodeName, nodes[0])
		}
	}
	if in := info(); in.Namespace != h.NS || in.Pool != "pa" || in.Move != nil || in.Release != res.Release {
		t.Errorf("app info after the move: %+v", in)
	}
	newSvc, err := h.Client.CoreV1().Services(h.NS).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitStatus("http://"+newSvc.Spec.ClusterIP+"/version", 200, "v1")
	// config and history came along
	var rels []releaseRow
	if err := json.Unmarshal([]byte(must("release", "list", "shop", "-o", "json").Stdout), &rels); err != nil {
		t.Fatal(err)
	}
	if len(rels) < 2 {
		t.Errorf("release history after the move: %+v", rels)
	}
	// app address: the pool's node only.
	var addrs []struct{ Kind, URL, Note string }
	if err := json.Unmarshal([]byte(must("app", "address", "shop", "-o", "json").Stdout), &addrs); err != nil {
		t.Fatal(err)
	}
	nodePorts := 0
	for _, a := range addrs {
		if a.Kind == "node-port" {
			nodePorts++
			if a.Note != "node "+nodes[0] {
				t.Errorf("app address lists %s (%s) outside pool pa", a.URL, a.Note)
			}
		}
	}
	if nodePorts != 1 {
		t.Errorf("app address: %d node ports, want pa's one node: %+v", nodePorts, addrs)
	}
	// Running the move again: the app is where its pool is, nothing moves.
	if r := must("app", "pool", "set", "shop", "pa", "--dry-run"); strings.Contains(r.Stdout, "would move") {
		t.Errorf("pool set to the pool it has, in its cluster: %s", r)
	}

	// A move killed after the switch leaves the old copy, superseded, in
	// beta (made here by hand): commands go to the copy that serves and
	// say the move is unfinished; the same pool set finishes it.
	old := map[string]any{"name": "shop", "namespace": beta.NS, "pool": "pb", "createdAt": time.Now().UTC(), "release": 2, "lastRelease": 2,
		"move": map[string]any{"role": "source", "from": "beta", "to": "alpha", "pool": "pa", "startedAt": time.Now().UTC(), "superseded": true}}
	record, _ := json.Marshal(old)
	_, err = h.Client.CoreV1().ConfigMaps(beta.NS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tug-app-shop", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": "shop", "tug.dev/app": "shop", "tug.dev/kind": "app"}},
		Data: map[string]string{"app.json": string(record)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r = must("app", "info", "shop")
	if !strings.Contains(r.Stdout, "Namespace:  "+h.NS) || !strings.Contains(r.Stderr, `also has a copy in cluster "beta"`) || !strings.Contains(r.Stderr, "app pool set shop pa") {
		t.Errorf("app info with a superseded copy left in beta: want alpha's copy and a warning naming beta; got %s", r)
	}
	// --context reaches that copy, with a warning, and info says so
	r = must("app", "info", "shop", "--context", "beta")
	if !strings.Contains(r.Stderr, "warning: ") || !strings.Contains(r.Stderr, "superseded") || !strings.Contains(r.Stdout, "Move:") {
		t.Errorf("app info --context beta of the superseded copy: want a warning and a Move line; got %s", r)
	}
	r = must("app", "pool", "set", "shop", "pa")
	if !strings.Contains(r.Stderr, "move of shop to cluster \"alpha\" is finished") || holds(beta.NS) || !holds(h.NS) {
		t.Errorf("pool set finishing a move: want beta's copy gone; got %s (beta holds: %v)", r, leftovers(beta.NS))
	}
	// (the one warning left is the dead cluster's, which did not answer)
	if r := must("app", "info", "shop"); strings.Count(r.Stderr, "warning") != 1 || !strings.Contains(r.Stderr, `in cluster "dead", which did not answer`) {
		t.Errorf("warning after the move finished, other than dead's: %s", r)
	}

	// A move killed before the switch leaves a marked new copy (here in
	// beta, by hand) while the app serves in alpha: commands stay with
	// alpha's copy, and a move to beta removes the half-made copy first.
	// The source carries the move's mark too (a move marks it first): the
	// half-made copy is recognised by the same mark, and only then removed.
	started := time.Now().UTC()
	alphaRec, err := h.Client.CoreV1().ConfigMaps(h.NS).Get(ctx, "tug-app-shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var alphaApp map[string]any
	if err := json.Unmarshal([]byte(alphaRec.Data["app.json"]), &alphaApp); err != nil {
		t.Fatal(err)
	}
	alphaApp["move"] = map[string]any{"role": "source", "from": "alpha", "to": "beta", "pool": "pb", "startedAt": started}
	b, _ := json.Marshal(alphaApp)
	alphaRec.Data["app.json"] = string(b)
	if _, err := h.Client.CoreV1().ConfigMaps(h.NS).Update(ctx, alphaRec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old["namespace"] = beta.NS
	old["move"] = map[string]any{"role": "target", "from": "alpha", "to": "beta", "pool": "pb", "startedAt": started}
	record, _ = json.Marshal(old)
	_, err = h.Client.CoreV1().ConfigMaps(beta.NS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tug-app-shop", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": "shop", "tug.dev/app": "shop", "tug.dev/kind": "app"}},
		Data: map[string]string{"app.json": string(record)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if in := info(); in.Namespace != h.NS {
		t.Errorf("with a half-made copy in beta, commands should stay with alpha's: %+v", in)
	}
	if r := must("app", "pool", "set", "shop", "pb"); !strings.Contains(r.Stderr, "moved shop from cluster \"alpha\"") {
		t.Errorf("moving back over a half-made copy: %s", r)
	}
	if left := leftovers(h.NS); len(left) != 0 {
		t.Errorf("the move back left in alpha: %v", left)
	}
	if in := info(); in.Namespace != beta.NS || in.Pool != "pb" || in.Move != nil {
		t.Errorf("after moving back: %+v", in)
	}
	beta.waitUnits("shop", "web", 2, sampleV1)
}
