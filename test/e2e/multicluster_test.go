package e2e

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Several clusters: two contexts over the local cluster (each with its own
// namespace, as two teams' contexts would be) and one that answers nobody.
// tug's cluster map lives in a config file of the test's own (TUG_CONFIG).
func TestClusterMultiple(t *testing.T) {
	h := New(t)
	h2 := h.Another()
	cc := h.newClusterContexts("alpha", map[string]string{"alpha": h.NS, "beta": h2.NS}, "dead")
	tugConfig, tug, must := cc.TugConfig, cc.Tug, cc.Must

	// Nothing configured: the current context is the one cluster.
	if r := must("cluster", "list"); !strings.Contains(r.Stderr, "no cluster configured") {
		t.Fatalf("cluster list with nothing configured: %s", r)
	}
	if l := parseNodeList(t, must("node", "list", "-o", "json")); len(l.Nodes) < 2 || l.Nodes[0].Cluster != "alpha" {
		t.Fatalf("node list without clusters should list the current context's nodes as cluster alpha: %+v", l)
	}

	must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa", "--default")
	must("cluster", "add", "beta", "--context", "beta", "--pool", "pb,pb2")
	must("cluster", "add", "dead", "--context", "dead", "--pool", "pd")

	// Bad input: exit 2, the file unchanged.
	before, err := os.ReadFile(tugConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "add", "gamma", "--context", "no-such-context"}, `context "no-such-context" not found in the kubeconfig`},
		{[]string{"cluster", "add", "Bad_Name", "--context", "alpha"}, "invalid cluster name"},
		{[]string{"cluster", "add", "gamma", "--context", "alpha", "--pool", "pb"}, `pool "pb" already belongs to cluster "beta"`},
		{[]string{"cluster", "add", "gamma", "--context", "alpha", "--pool", "no good"}, "invalid pool"},
		{[]string{"cluster", "add", "gamma"}, "missing --context"},
		{[]string{"cluster", "remove", "gamma"}, `cluster "gamma" not found`},
		{[]string{"node", "list", "--cluster", "gamma"}, `cluster "gamma" not found`},
	} {
		if r := tug(c.args...); r.Code != 2 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("tug %s: want exit 2 and %q; got %s", strings.Join(c.args, " "), c.want, r)
		}
	}
	if after, _ := os.ReadFile(tugConfig); string(after) != string(before) {
		t.Errorf("bad input changed tug's config:\n%s\nwas:\n%s", after, before)
	}

	var clusters []struct {
		Name, Context string
		Pools         []string
		Default       bool
	}
	if err := json.Unmarshal([]byte(must("cluster", "list", "-o", "json").Stdout), &clusters); err != nil {
		t.Fatal(err)
	}
	if len(clusters) != 3 || clusters[0].Name != "alpha" || !clusters[0].Default || !slices.Equal(clusters[1].Pools, []string{"pb", "pb2"}) {
		t.Fatalf("cluster list: %+v", clusters)
	}

	// node list spans the reachable clusters and reports the dead one.
	r := must("node", "list", "-o", "json")
	l := parseNodeList(t, r)
	// Other tests register and delete nodes (fakeNode) while this one
	// runs: count the nodes that stay, so two lists taken a moment apart
	// agree.
	perCluster := map[string]int{}
	for _, n := range l.Nodes {
		if !registeredByATest(n.Name) {
			perCluster[n.Cluster]++
		}
	}
	if perCluster["alpha"] < 2 || perCluster["beta"] != perCluster["alpha"] || perCluster["dead"] != 0 {
		t.Fatalf("node list per cluster: %v; want every node under alpha and beta", perCluster)
	}
	if len(l.Unreachable) != 1 || l.Unreachable[0].Cluster != "dead" || !strings.Contains(l.Unreachable[0].Error, "127.0.0.1:1") {
		t.Fatalf("node list should report cluster dead as unreachable: %+v", l.Unreachable)
	}
	r = must("node", "list")
	if !strings.Contains(r.Stderr, "cluster dead") || !strings.Contains(r.Stderr, "unreachable") || !strings.Contains(r.Stdout, "beta") {
		t.Fatalf("node list table: want beta's nodes and a warning about dead; got %s", r)
	}
	if l := parseNodeList(t, must("node", "list", "--cluster", "beta", "-o", "json")); stayingNodes(l) != perCluster["beta"] || l.Nodes[0].Cluster != "beta" || len(l.Unreachable) != 0 {
		t.Fatalf("node list --cluster beta: %+v", l)
	}
	// A node named in several clusters needs --cluster.
	if r := tug("node", "info", l.Nodes[0].Name); r.Code != 2 || !strings.Contains(r.Stderr, "--cluster") {
		t.Fatalf("node info of a node in two clusters: want exit 2 asking for --cluster; got %s", r)
	}
	must("node", "info", l.Nodes[0].Name, "--cluster", "beta")
	// Only the dead cluster: its failure is the command's.
	if r := tug("node", "list", "--cluster", "dead"); r.Code != 1 || !strings.Contains(r.Stderr, "cannot reach the cluster") {
		t.Fatalf("node list --cluster dead: want exit 1 saying it cannot reach it; got %s", r)
	}

	// App commands go to the pool's cluster: pb is beta's, whose context
	// works in h2's namespace; an app with no pool stays in the current one.
	must("app", "create", "placed", "--pool", "pb")
	must("app", "create", "unplaced")
	ctx := context.Background()
	if _, err := h.Client.CoreV1().ConfigMaps(h2.NS).Get(ctx, "tug-app-placed", metav1.GetOptions{}); err != nil {
		t.Fatalf("app in pool pb should live in cluster beta's namespace %s: %v", h2.NS, err)
	}
	if _, err := h.Client.CoreV1().ConfigMaps(h.NS).Get(ctx, "tug-app-placed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("app in pool pb also in %s (err %v)", h.NS, err)
	}
	if _, err := h.Client.CoreV1().ConfigMaps(h.NS).Get(ctx, "tug-app-unplaced", metav1.GetOptions{}); err != nil {
		t.Fatalf("app without a pool should live in the current context's namespace: %v", err)
	}

	// Creating an app in a pool of another cluster than --context says is
	// refused; an existing app put in beta's pool moves there
	// (TestClusterPoolsRouteAndMove moves a deployed one).
	if r := tug("app", "create", "misplaced", "--pool", "pb", "--context", "alpha"); r.Code != 2 || !strings.Contains(r.Stderr, `pool "pb" is in cluster "beta"`) {
		t.Errorf("app create --pool pb --context alpha: want exit 2 naming beta; got %s", r)
	}
	must("app", "pool", "set", "unplaced", "pb")
	if _, err := h.Client.CoreV1().ConfigMaps(h2.NS).Get(ctx, "tug-app-unplaced", metav1.GetOptions{}); err != nil {
		t.Fatalf("app moved to pool pb should live in beta's namespace %s: %v", h2.NS, err)
	}
	if _, err := h.Client.CoreV1().ConfigMaps(h.NS).Get(ctx, "tug-app-unplaced", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("app moved to pool pb is still in %s (err %v)", h.NS, err)
	}

	// pool list: the configured pools, per cluster, and the dead cluster.
	var pools struct {
		Pools []struct {
			Name, Cluster string
			Apps          []string
		}
		Unreachable []struct{ Cluster string }
	}
	if err := json.Unmarshal([]byte(must("pool", "list", "-o", "json").Stdout), &pools); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pools.Pools {
		if p.Name == "pb" {
			found = p.Cluster == "beta" && slices.Contains(p.Apps, h2.NS+"/placed")
		}
	}
	if !found || len(pools.Unreachable) != 1 || pools.Unreachable[0].Cluster != "dead" {
		t.Fatalf("pool list: want pb in beta with app %s/placed and dead unreachable; got %+v", h2.NS, pools)
	}

	// remove: the map forgets the cluster; its pools go to the default.
	if r := must("cluster", "remove", "beta"); !strings.Contains(r.Stdout, `default cluster "alpha"`) {
		t.Fatalf("cluster remove: %s", r)
	}
	if r := tug("cluster", "remove", "beta"); r.Code != 2 {
		t.Fatalf("removing beta twice: want exit 2; got %s", r)
	}
	if l := parseNodeList(t, must("node", "list", "-o", "json")); slices.ContainsFunc(l.Nodes, func(n nodeRow) bool { return n.Cluster == "beta" }) {
		t.Fatalf("beta still listed after remove: %+v", l.Nodes)
	}
}

func parseNodeList(t *testing.T, r Result) nodeListJSON {
	t.Helper()
	var l nodeListJSON
	if err := json.Unmarshal([]byte(r.Stdout), &l); err != nil {
		t.Fatalf("node list -o json: %v\n%s", err, r)
	}
	return l
}

// registeredByATest says whether a node is one fakeNode registered: other
// tests add and remove those while a test runs.
func registeredByATest(name string) bool { return strings.HasPrefix(name, "tug-e2e-") }

// stayingNodes counts the listed nodes that are not registeredByATest.
func stayingNodes(l nodeListJSON) int {
	n := 0
	for _, node := range l.Nodes {
		if !registeredByATest(node.Name) {
			n++
		}
	}
	return n
}
