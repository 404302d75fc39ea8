package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	p := &poolsRun{poolClusters: pc, app: &movingApp{pc: pc, name: "shop"}}
	p.onAlpha = pc.write(filepath.Join(t.TempDir(), "kubeconfig-alpha"), "alpha")
	p.must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa")
	p.must("cluster", "add", "beta", "--context", "beta", "--pool", "pb")
	p.must("cluster", "add", "dead", "--context", "dead", "--pool", "pd")

	routedToBeta(t, p)
	for _, c := range lookups(p) {
		c.check(t, p)
	}
	oldURL := failedMoveKeepsServing(t, p)
	// --dry-run says what would move and changes nothing.
	if r := p.must("app", "pool", "set", "shop", "pa", "--dry-run"); !strings.Contains(r.Stdout, `would move from cluster "beta" to cluster "alpha"`) || p.app.holds(p.Alpha.NS) {
		t.Fatalf("dry run: %s", r)
	}
	release := moveAnswering(t, p, oldURL)
	afterMove(t, p, release)
	old := finishSuperseded(t, p)
	moveBackOverHalfMade(t, p, old)
}

// poolsRun is TestClusterPoolsRouteAndMove's clusters and app, with tug
// run from the third context (or alpha's), each run logged with its time.
type poolsRun struct {
	*poolClusters
	app     *movingApp
	onAlpha string // a kubeconfig of the same contexts, alpha current
}

func (p *poolsRun) tug(args ...string) Result {
	p.h.t.Helper()
	return p.TugLogged(p.Kubeconfig, args...)
}

func (p *poolsRun) must(args ...string) Result {
	p.h.t.Helper()
	r := p.tug(args...)
	if r.Code != 0 {
		p.h.t.Fatalf("tug %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// routedToBeta: from the third context, with no --context, every command
// reaches beta, pb's cluster (with alpha current too).
func routedToBeta(t *testing.T, p *poolsRun) {
	t.Helper()
	h, beta, ctx := p.Alpha, p.Beta, context.Background()
	p.must("app", "create", "shop", "--pool", "pb")
	p.must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	// current context alpha: still beta
	if r := p.TugLogged(p.onAlpha, "app", "scale", "shop", "web=2"); r.Code != 0 {
		t.Fatalf("app scale with alpha current: %s", r)
	}
	pods := beta.waitUnits("shop", "web", 2, sampleV1)
	for _, pod := range pods {
		if pod.Spec.NodeName != p.Nodes[1] {
			t.Errorf("unit %s of pool pb runs on %s, want %s", pod.Name, pod.Spec.NodeName, p.Nodes[1])
		}
	}
	if p.app.holds(h.NS) || p.app.holds(p.Third.NS) || !p.app.holds(beta.NS) {
		t.Fatalf("the app should be in beta's namespace only: alpha %v, third %v, beta %v", p.app.leftovers(h.NS), p.app.leftovers(p.Third.NS), p.app.leftovers(beta.NS))
	}
	if d, err := h.Client.AppsV1().Deployments(beta.NS).Get(ctx, "shop-web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("scale should reach beta's Deployment: %v", err)
	}
	h.Eventually(30*time.Second, "logs through the routed context", func() (bool, error) {
		r := p.tug("logs", "shop", "--tail", "-1")
		return r.Code == 0 && strings.Contains(r.Stdout, "sample v1"), fmt.Errorf("%s", r)
	})
	r := h.TugRun(Run{Args: []string{"shell", "shop"}, Stdin: "echo routed-$HOSTNAME\n", Env: p.Env(p.Kubeconfig)})
	if r.Code != 0 || !strings.Contains(r.Stdout, "routed-shop-web-") {
		t.Fatalf("piped shell: %s", r)
	}
	host := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.Stdout), "routed-"))
	if _, err := h.Client.CoreV1().Pods(beta.NS).Get(ctx, host, metav1.GetOptions{}); err != nil {
		t.Fatalf("the shell ran in %q, not a unit in beta's namespace: %v", host, err)
	}
	if r := p.must("run", "shop", "--", "sh", "-c", "echo routed-run"); !strings.Contains(r.Stdout, "routed-run") {
		t.Fatalf("run: %s", r)
	}
	if in := p.app.where(); in.Namespace != beta.NS || in.Pool != "pb" {
		t.Fatalf("app info from the third context: namespace %s pool %s; want %s, pb", in.Namespace, in.Pool, beta.NS)
	}
}

// lookup is an `app info` whose answer says how tug found (or did not
// find) the app's cluster.
type lookup struct {
	before [][]string // commands run first, each must succeed
	args   []string
	// must: tug must exit 0 (else the test ends); otherwise it must exit code
	must       bool
	code       int
	stdoutHas  []string
	stderrHas  []string
	stderrLack string
	fails      string // what the error says, before the run's output
}

func lookups(p *poolsRun) []lookup {
	return []lookup{
		// Not found anywhere: the error says where tug looked, and that
		// dead did not answer.
		{args: []string{"app", "info", "ghost"}, code: 1, stderrHas: []string{"searched clusters", "alpha", "unreachable", "dead"},
			fails: "app info of an app nowhere: want exit 1 naming the clusters searched and dead unreachable; got"},
		// In two clusters: exit 2 asking for --context; --context picks one.
		{before: [][]string{{"app", "create", "twin", "--context", "alpha"}, {"app", "create", "twin", "--context", "beta"}},
			args: []string{"app", "info", "twin"}, code: 2, stderrHas: []string{"several clusters", "--context"},
			fails: "app info of an app in two clusters: want exit 2 asking for --context; got"},
		{args: []string{"app", "info", "twin", "--context", "beta", "-o", "json"}, must: true, stdoutHas: []string{p.Beta.NS},
			fails: "--context beta:"},
		// --context on a copy the map puts elsewhere: a warning, and it acts.
		{args: []string{"app", "info", "shop", "--context", "beta"}, must: true, stderrLack: "warning",
			fails: "--context of the app's own cluster should not warn:"},
	}
}

func (c lookup) check(t *testing.T, p *poolsRun) {
	t.Helper()
	for _, args := range c.before {
		p.must(args...)
	}
	var r Result
	ok := true
	if c.must {
		r = p.must(c.args...)
	} else {
		r = p.tug(c.args...)
		ok = r.Code == c.code
	}
	for _, s := range c.stdoutHas {
		ok = ok && strings.Contains(r.Stdout, s)
	}
	for _, s := range c.stderrHas {
		ok = ok && strings.Contains(r.Stderr, s)
	}
	if c.stderrLack != "" && strings.Contains(r.Stderr, c.stderrLack) {
		ok = false
	}
	if !ok {
		t.Errorf("%s %s", c.fails, r)
	}
}

// failedMoveKeepsServing: a move whose rollout fails (alpha's pool pnone
// has no node): the app keeps serving in beta, and nothing of it is left
// in alpha. It returns beta's copy's address.
func failedMoveKeepsServing(t *testing.T, p *poolsRun) string {
	t.Helper()
	h, beta := p.Alpha, p.Beta
	p.must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa,pnone")
	r := p.tug("app", "pool", "set", "shop", "pnone", "--timeout", "60s")
	if r.Code != 13 || !strings.Contains(r.Stderr, `still serves in cluster "beta"`) || !strings.Contains(r.Stderr, "unschedulable") {
		t.Fatalf("a move to a pool with no node: want exit 13 saying it still serves in beta; got %s", r)
	}
	if left := p.app.leftovers(h.NS); len(left) != 0 {
		t.Errorf("a failed move left in alpha: %v", left)
	}
	if in := p.app.where(); in.Namespace != beta.NS || in.Pool != "pb" || in.Move != nil {
		t.Errorf("after a failed move: %+v", in)
	}
	svc, err := h.Client.CoreV1().Services(beta.NS).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldURL := "http://" + svc.Spec.ClusterIP + "/version"
	h.waitStatus(oldURL, 200, "v1")
	return oldURL
}

// moveAnswering: the move to alpha, polled all along: the old or the new
// address answers. It returns the release the move reports.
func moveAnswering(t *testing.T, p *poolsRun, oldURL string) int {
	t.Helper()
	h := p.Alpha
	poll := h.pollCopies(oldURL, h.NS, "shop")
	moved := p.tug("app", "pool", "set", "shop", "pa", "-o", "json")
	poll.halt()
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
	if poll.gaps.Load() > 0 {
		t.Errorf("%d of %d polls found neither copy answering:\n%s", poll.gaps.Load(), poll.polls.Load(), strings.Join(poll.gapNotes, "\n"))
	}
	t.Logf("%d polls during the move; the new copy answered: %v", poll.polls.Load(), poll.newServed.Load())
	if poll.polls.Load() < 10 || !poll.newServed.Load() {
		t.Errorf("%d polls during the move, the new copy answered: %v; want both copies seen answering", poll.polls.Load(), poll.newServed.Load())
	}
	if left := p.app.leftovers(p.Beta.NS); len(left) != 0 {
		t.Errorf("the move left in beta: %v", left)
	}
	return res.Release
}

// afterMove: the app runs on pa's node in alpha and answers there; its
// config and history came along; its address is the pool's node only;
// running the move again moves nothing.
func afterMove(t *testing.T, p *poolsRun, release int) {
	t.Helper()
	h := p.Alpha
	moved2 := h.waitUnits("shop", "web", 2, sampleV1)
	for _, pod := range moved2 {
		if pod.Spec.NodeName != p.Nodes[0] {
			t.Errorf("unit %s of pool pa runs on %s, want %s", pod.Name, pod.Spec.NodeName, p.Nodes[0])
		}
	}
	if in := p.app.where(); in.Namespace != h.NS || in.Pool != "pa" || in.Move != nil || in.Release != release {
		t.Errorf("app info after the move: %+v", in)
	}
	newSvc, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitStatus("http://"+newSvc.Spec.ClusterIP+"/version", 200, "v1")
	// config and history came along
	var rels []releaseRow
	if err := json.Unmarshal([]byte(p.must("release", "list", "shop", "-o", "json").Stdout), &rels); err != nil {
		t.Fatal(err)
	}
	if len(rels) < 2 {
		t.Errorf("release history after the move: %+v", rels)
	}
	// app address: the pool's node only.
	var addrs []struct{ Kind, URL, Note string }
	if err := json.Unmarshal([]byte(p.must("app", "address", "shop", "-o", "json").Stdout), &addrs); err != nil {
		t.Fatal(err)
	}
	nodePorts := 0
	for _, a := range addrs {
		if a.Kind == "node-port" {
			nodePorts++
			if a.Note != "node "+p.Nodes[0] {
				t.Errorf("app address lists %s (%s) outside pool pa", a.URL, a.Note)
			}
		}
	}
	if nodePorts != 1 {
		t.Errorf("app address: %d node ports, want pa's one node: %+v", nodePorts, addrs)
	}
	// Running the move again: the app is where its pool is, nothing moves.
	if r := p.must("app", "pool", "set", "shop", "pa", "--dry-run"); strings.Contains(r.Stdout, "would move") {
		t.Errorf("pool set to the pool it has, in its cluster: %s", r)
	}
}

// finishSuperseded: a move killed after the switch leaves the old copy,
// superseded, in beta (made here by hand): commands go to the copy that
// serves and say the move is unfinished; the same pool set finishes it.
// It returns the hand-made record, which the next step reuses.
func finishSuperseded(t *testing.T, p *poolsRun) map[string]any {
	t.Helper()
	h, beta := p.Alpha, p.Beta
	old := map[string]any{"name": "shop", "namespace": beta.NS, "pool": "pb", "createdAt": time.Now().UTC(), "release": 2, "lastRelease": 2,
		"move": map[string]any{"role": "source", "from": "beta", "to": "alpha", "pool": "pa", "startedAt": time.Now().UTC(), "superseded": true}}
	p.app.createRecord(beta.NS, old)
	r := p.must("app", "info", "shop")
	if !strings.Contains(r.Stdout, "Namespace:  "+h.NS) || !strings.Contains(r.Stderr, `also has a copy in cluster "beta"`) || !strings.Contains(r.Stderr, "app pool set shop pa") {
		t.Errorf("app info with a superseded copy left in beta: want alpha's copy and a warning naming beta; got %s", r)
	}
	// --context reaches that copy, with a warning, and info says so
	r = p.must("app", "info", "shop", "--context", "beta")
	if !strings.Contains(r.Stderr, "warning: ") || !strings.Contains(r.Stderr, "superseded") || !strings.Contains(r.Stdout, "Move:") {
		t.Errorf("app info --context beta of the superseded copy: want a warning and a Move line; got %s", r)
	}
	r = p.must("app", "pool", "set", "shop", "pa")
	if !strings.Contains(r.Stderr, "move of shop to cluster \"alpha\" is finished") || p.app.holds(beta.NS) || !p.app.holds(h.NS) {
		t.Errorf("pool set finishing a move: want beta's copy gone; got %s (beta holds: %v)", r, p.app.leftovers(beta.NS))
	}
	// (the one warning left is the dead cluster's, which did not answer)
	if r := p.must("app", "info", "shop"); strings.Count(r.Stderr, "warning") != 1 || !strings.Contains(r.Stderr, `in cluster "dead", which did not answer`) {
		t.Errorf("warning after the move finished, other than dead's: %s", r)
	}
	return old
}

// moveBackOverHalfMade: a move killed before the switch leaves a marked
// new copy (here in beta, by hand) while the app serves in alpha: commands
// stay with alpha's copy, and a move to beta removes the half-made copy
// first. The source carries the move's mark too (a move marks it first):
// the half-made copy is recognised by the same mark, and only then
// removed.
func moveBackOverHalfMade(t *testing.T, p *poolsRun, old map[string]any) {
	t.Helper()
	h, beta, ctx := p.Alpha, p.Beta, context.Background()
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
	p.app.createRecord(beta.NS, old)
	if in := p.app.where(); in.Namespace != h.NS {
		t.Errorf("with a half-made copy in beta, commands should stay with alpha's: %+v", in)
	}
	if r := p.must("app", "pool", "set", "shop", "pb"); !strings.Contains(r.Stderr, "moved shop from cluster \"alpha\"") {
		t.Errorf("moving back over a half-made copy: %s", r)
	}
	if left := p.app.leftovers(h.NS); len(left) != 0 {
		t.Errorf("the move back left in alpha: %v", left)
	}
	if in := p.app.where(); in.Namespace != beta.NS || in.Pool != "pb" || in.Move != nil {
		t.Errorf("after moving back: %+v", in)
	}
	beta.waitUnits("shop", "web", 2, sampleV1)
}
