package e2e

// Node, pool and node-container tests. The cluster is shared with other
// test runs, so these tests follow three rules:
//
//   - A real node (node1, node2) is never deleted. Removal with its final
//     Node deletion is proven on registered-only Nodes (tug node add of a
//     name no kubelet uses: the Node stays not-ready and tainted, so nothing
//     is scheduled on it). Removal's rebalance — cordon, app-aware surge,
//     eviction under PodDisruptionBudgets — is proven on real nodes with the
//     e2e build's --keep-node, --pod-namespace and --pod-selector flags
//     (-tags e2e; users' binaries lack them): only this
//     test's pods move, and the Node stays.
//   - Every real node a test touches is restored in t.Cleanup (pool label,
//     the disabled taint, the cordon), and the window in which a real node
//     is cordoned or disabled is kept to the few seconds the test needs.
//   - The tests that change nodes run one at a time (nodeLock), though each
//     runs in parallel with the rest of the suite; a test that needs every
//     node schedulable says so with needAllNodes.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

func TestNodeAddUpdateRemoveRegistered(t *testing.T) {
	h := newNodeH(t)
	pool := "e2e-reg-" + randSuffix()
	name := h.fakeNode(pool)

	n := h.getNode(name)
	if n.Labels["tug.dev/pool"] != pool {
		t.Fatalf("pool label %q, want %q", n.Labels["tug.dev/pool"], pool)
	}
	// Until a kubelet joins, nothing may be scheduled there.
	if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoSchedule }) {
		t.Fatalf("a registered node must carry a NoSchedule taint; taints: %v", n.Spec.Taints)
	}

	// Adding again adopts and updates; metadata and IaaS id land.
	r := h.mustTug("node", "add", name, "--pool", pool, "--iaas-id", "i-0e2e", "--metadata", "rack=r1", "--metadata", "zone=z1")
	if strings.Contains(r.Stdout, "registered") {
		t.Fatalf("second add registered again: %s", r)
	}
	n = h.getNode(name)
	if n.Annotations["metadata.tug.dev/rack"] != "r1" || n.Annotations["tug.dev/iaas-id"] != "i-0e2e" || n.Spec.ProviderID != "i-0e2e" {
		t.Fatalf("metadata or iaas id missing: annotations %v, providerID %q", n.Annotations, n.Spec.ProviderID)
	}
	if r := h.mustTug("node", "add", name, "--pool", pool, "--iaas-id", "i-0e2e", "--metadata", "rack=r1"); !strings.Contains(r.Stdout, "nothing changed") {
		t.Fatalf("adding the same again should change nothing: %s", r)
	}

	// list and info
	l := h.nodeList("--pool", pool)
	if len(l.Nodes) != 1 || l.Nodes[0].Name != name || l.Nodes[0].Status != "not-ready" || l.Nodes[0].Pool != pool {
		t.Fatalf("node list --pool %s: %+v", pool, l.Nodes)
	}
	var info struct {
		Name       string            `json:"name"`
		Pool       string            `json:"pool"`
		IaaSID     string            `json:"iaasID"`
		Metadata   map[string]string `json:"metadata"`
		Conditions []struct{ Type, Status string }
		Units      []any `json:"units"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("node", "info", name, "-o", "json").Stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info.IaaSID != "i-0e2e" || info.Metadata["zone"] != "z1" || info.Pool != pool || len(info.Units) != 0 {
		t.Fatalf("node info: %+v", info)
	}
	if r := h.mustTug("node", "info", name); !strings.Contains(r.Stdout, "rack=r1") {
		t.Fatalf("node info table lacks metadata: %s", r)
	}

	// disable / enable / metadata delete / pool move
	h.mustTug("node", "update", name, "--disable")
	if n = h.getNode(name); !hasTaint(n, "tug.dev/disabled") {
		t.Fatalf("--disable: no tug.dev/disabled taint: %v", n.Spec.Taints)
	}
	if row := h.nodeList("--pool", pool).find(name); row == nil || !row.Disabled {
		t.Fatalf("node list after --disable: %+v", row)
	}
	h.mustTug("node", "update", name, "--enable", "--metadata", "rack=")
	n = h.getNode(name)
	if hasTaint(n, "tug.dev/disabled") {
		t.Fatalf("--enable left the taint: %v", n.Spec.Taints)
	}
	if _, ok := n.Annotations["metadata.tug.dev/rack"]; ok || n.Annotations["metadata.tug.dev/zone"] != "z1" {
		t.Fatalf("--metadata rack= should delete rack only: %v", n.Annotations)
	}
	pool2 := pool + "-b"
	h.mustTug("node", "update", name, "--pool", pool2)
	if got := h.getNode(name).Labels["tug.dev/pool"]; got != pool2 {
		t.Fatalf("--pool: label %q, want %q", got, pool2)
	}

	// pool list shows the pool with its node and an app placed in it.
	h.mustTug("app", "create", "pooled", "--pool", pool2)
	var pools struct {
		Pools []struct {
			Name  string   `json:"name"`
			Nodes []string `json:"nodes"`
			Apps  []string `json:"apps"`
		} `json:"pools"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("pool", "list", "-o", "json").Stdout), &pools); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pools.Pools, func(p struct {
		Name  string   `json:"name"`
		Nodes []string `json:"nodes"`
		Apps  []string `json:"apps"`
	}) bool {
		return p.Name == pool2
	})
	if i < 0 || !slices.Equal(pools.Pools[i].Nodes, []string{name}) || !slices.Contains(pools.Pools[i].Apps, h.NS+"/pooled") {
		t.Fatalf("pool list: want pool %s with node %s and app %s/pooled; got %+v", pool2, name, h.NS, pools.Pools)
	}

	// remove: asks first; dry-run changes nothing; then the Node goes.
	if r := h.Tug("node", "remove", name); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("remove without --yes and no terminal: want exit 2 naming --yes; got %s", r)
	}
	if r := h.mustTug("node", "remove", name, "--dry-run"); !strings.Contains(r.Stdout, "would") {
		t.Fatalf("dry run: %s", r)
	}
	if n = h.getNode(name); n.Spec.Unschedulable {
		t.Fatal("dry run cordoned the node")
	}
	r = h.mustTug("node", "remove", name, "--yes")
	if !strings.Contains(r.Stdout, "node deleted") {
		t.Fatalf("remove: %s", r)
	}
	if _, err := h.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node %s still exists after remove (err %v)", name, err)
	}
}

// A pod that no controller would recreate stops the removal before
// anything changes; --force evicts it. On a node no kubelet runs, an
// evicted pod only gets marked for deletion, and that is enough to go on.
func TestNodeRemoveRegisteredWithPods(t *testing.T) {
	h := newNodeH(t)
	name := h.fakeNode("e2e-pods-" + randSuffix())
	ctx := context.Background()
	_, err := h.Client.CoreV1().Pods(h.NS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Labels: map[string]string{"app": "bare"}},
		Spec: corev1.PodSpec{
			NodeName:   name, // bound directly: the scheduler would never pick this node
			Containers: []corev1.Container{{Name: "c", Image: sampleV1, ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Tug("node", "remove", name, "--yes")
	if r.Code != 1 || !strings.Contains(r.Stderr, h.NS+"/bare") || !strings.Contains(r.Stderr, "--force") || !strings.Contains(r.Stderr, "nothing was changed") {
		t.Fatalf("remove with an unmanaged pod: want exit 1 naming the pod and --force; got %s", r)
	}
	if h.getNode(name).Spec.Unschedulable {
		t.Fatal("a refused removal cordoned the node")
	}
	r = h.mustTug("node", "remove", name, "--yes", "--force", "-o", "json")
	var res struct {
		Evicted []struct{ Namespace, Name string }
		Deleted bool
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if !res.Deleted || len(res.Evicted) != 1 || res.Evicted[0].Name != "bare" {
		t.Fatalf("remove --force: %+v", res)
	}
	if _, err := h.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node %s still exists (err %v)", name, err)
	}
	// The pod garbage collector takes pods of deleted nodes; the namespace
	// cleanup does not wait for it.
	_ = h.Client.CoreV1().Pods(h.NS).Delete(ctx, "bare", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

func TestNodeBadInputChangesNothing(t *testing.T) {
	h := newNodeH(t)
	real := h.realNodes()[0]
	before := h.getNode(real)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"node", "info", "no-such-node"}, `node "no-such-node" not found`},
		{[]string{"node", "update", "no-such-node", "--disable"}, `node "no-such-node" not found`},
		{[]string{"node", "remove", "no-such-node", "--yes"}, `node "no-such-node" not found`},
		{[]string{"node", "update", real, "--enable", "--disable"}, "contradict"},
		{[]string{"node", "update", real}, "nothing to update"},
		{[]string{"node", "update", real, "--pool", "not a pool!"}, "invalid pool"},
		{[]string{"node", "update", real, "--metadata", "bad key=v"}, "invalid metadata key"},
		{[]string{"node", "add", "tug-e2e-never", "--pool", "bad/pool"}, "invalid pool"},
		{[]string{"node", "add", "tug-e2e-never"}, "missing --pool"},
		{[]string{"node", "add", "Not_A_Host!", "--pool", "p"}, "invalid node address"},
		{[]string{"node", "list", "--pool", "a b"}, "invalid pool"},
		{[]string{"node", "list", "--cluster", "nope"}, `cluster "nope" not found`},
		{[]string{"node", "remove", real, "--pod-selector", "a=b", "--yes"}, "--keep-node"},
		{[]string{"node-container", "add", "agent", "--image", sampleV1, "--pool", "bad pool"}, "invalid pool"},
		{[]string{"node-container", "upgrade", "no-such-agent"}, "not found"},
	}
	for _, c := range cases {
		r := h.Tug(c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("tug %s: want exit 2 and %q; got %s", strings.Join(c.args, " "), c.want, r)
		}
	}
	if _, err := h.Client.CoreV1().Nodes().Get(context.Background(), "tug-e2e-never", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused node add created a Node (err %v)", err)
	}
	after := h.getNode(real)
	if after.ResourceVersion != before.ResourceVersion && (after.Spec.Unschedulable != before.Spec.Unschedulable ||
		hasTaint(after, "tug.dev/disabled") != hasTaint(before, "tug.dev/disabled") || after.Labels["tug.dev/pool"] != before.Labels["tug.dev/pool"]) {
		t.Errorf("bad input changed node %s", real)
	}

	// A user with namespace rights only gets a sentence naming the missing
	// cluster-scoped permission.
	r := h.Tug("node", "list", "--as", "e2e-namespace-user")
	if r.Code != 1 || !strings.Contains(r.Stderr, `cannot list nodes at cluster scope`) {
		t.Errorf("node list without cluster rights: want exit 1 naming 'list nodes at cluster scope'; got %s", r)
	}
	r = h.Tug("node", "update", real, "--disable", "--as", "e2e-namespace-user")
	if r.Code != 1 || !strings.Contains(r.Stderr, "nodes at cluster scope") {
		t.Errorf("node update without cluster rights: want exit 1 naming the node permission; got %s", r)
	}
}

// Disable keeps new units off a node; enable lets them back.
func TestNodeDisableEnableSteersNewUnits(t *testing.T) {
	h := newNodeH(t)
	nodes := h.realNodes()
	a, b := nodes[0], nodes[1]
	h.keepNodeState(a)
	h.keepNodeState(b)
	h.mustTug("app", "create", "steer")

	h.mustTug("node", "update", a, "--disable")
	if !hasTaint(h.getNode(a), "tug.dev/disabled") {
		t.Fatalf("%s has no disabled taint", a)
	}
	if row := h.nodeList().find(a); row == nil || row.Status != "disabled" {
		t.Fatalf("node list: %s should be disabled: %+v", a, row)
	}
	h.mustTug("app", "deploy", "steer", "--image", sampleV1)
	h.mustTug("app", "scale", "steer", "web=2")
	for _, p := range h.waitUnits("steer", "web", 2, sampleV1) {
		if p.Spec.NodeName == a {
			t.Fatalf("unit %s landed on disabled node %s", p.Name, a)
		}
	}
	// Swap: a takes units again, b does not; new units must go to a.
	h.mustTug("node", "update", a, "--enable")
	h.mustTug("node", "update", b, "--disable")
	h.mustTug("app", "scale", "steer", "web=4")
	pods := h.waitUnits("steer", "web", 4, sampleV1)
	h.mustTug("node", "update", b, "--enable")
	onA := 0
	for _, p := range pods {
		if p.Spec.NodeName == a {
			onA++
		}
	}
	if onA != 2 {
		t.Fatalf("after enabling %s and disabling %s, the 2 new units should be on %s; %d are", a, b, a, onA)
	}
	if hasTaint(h.getNode(b), "tug.dev/disabled") || hasTaint(h.getNode(a), "tug.dev/disabled") {
		t.Fatal("--enable left a disabled taint")
	}
}

// probe requests url in a loop until stop is closed, counting failures.
type probe struct {
	ok, failed atomic.Int64
	lastErr    atomic.Value
	done       chan struct{}
}

func startProbe(url string, stop <-chan struct{}) *probe {
	p := &probe{done: make(chan struct{})}
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(10 * time.Millisecond) // pacing, not synchronisation
		defer tick.Stop()
		deadline := time.After(4 * time.Minute) // bounded, whatever happens
		for {
			select {
			case <-stop:
				return
			case <-deadline:
				return
			case <-tick.C:
			}
			resp, err := c.Get(url)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("status %s", resp.Status)
				}
			}
			if err != nil {
				p.failed.Add(1)
				p.lastErr.Store(err.Error())
			} else {
				p.ok.Add(1)
			}
		}
	}()
	return p
}

// Removal is app-aware: a single-unit app gets a second unit elsewhere
// before its only one moves, and keeps answering throughout.
func TestNodeRemoveMovesUnitsWithoutDowntime(t *testing.T) {
	h := newNodeH(t)
	h.realNodes()
	pod := h.deployOneUnit("solo")
	from := pod.Spec.NodeName
	h.keepNodeState(from)
	svc, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s:80/", svc.Spec.ClusterIP)
	h.Eventually(30*time.Second, "service answers", func() (bool, error) {
		_, err := tryGet(url)
		return err == nil, err
	})

	stop := make(chan struct{})
	pr := startProbe(url, stop)
	r := h.Tug(h.drainArgs(from, "solo", "-o", "json")...)
	close(stop)
	<-pr.done
	if r.Code != 0 {
		t.Fatalf("node remove: %s", r)
	}
	var res struct {
		Evicted []struct{ Name, App, Process string }
		Surges  []struct {
			App, Process string
			From, To     int32
			Restored     bool
		}
		Deleted bool
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if len(res.Evicted) != 1 || res.Evicted[0].Name != pod.Name || res.Deleted {
		t.Fatalf("want the one unit evicted and the node kept: %+v", res)
	}
	if len(res.Surges) != 1 || res.Surges[0].From != 1 || res.Surges[0].To != 2 || !res.Surges[0].Restored {
		t.Fatalf("want web surged 1 -> 2 and restored: %+v", res.Surges)
	}
	if f := pr.failed.Load(); f != 0 || pr.ok.Load() == 0 {
		t.Fatalf("probe loop: %d ok, %d failed (last error: %v); want no failure", pr.ok.Load(), f, pr.lastErr.Load())
	}
	t.Logf("probe loop: %d requests, none failed", pr.ok.Load())

	// The unit runs on the other node; the count is back to 1; the node
	// stays cordoned until enabled.
	moved := h.waitUnits("solo", "web", 1, sampleV1)
	if moved[0].Spec.NodeName == from {
		t.Fatalf("the unit is still on %s", from)
	}
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "solo-web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 1 {
		t.Fatalf("deployment replicas after the move: %v (err %v), want 1", d.Spec.Replicas, err)
	}
	if row := h.nodeList().find(from); row == nil || row.Status != "cordoned" {
		t.Fatalf("%s should stay cordoned after the move: %+v", from, row)
	}
	h.mustTug("node", "update", from, "--enable")
	if h.getNode(from).Spec.Unschedulable {
		t.Fatalf("--enable did not uncordon %s", from)
	}
}

// Removal respects PodDisruptionBudgets: it waits, saying which budget
// blocks, and times out with the node still cordoned; once the budget
// allows, it proceeds.
func TestNodeRemoveRespectsDisruptionBudget(t *testing.T) {
	h := newNodeH(t)
	h.realNodes()
	ctx := context.Background()
	pod := h.deployOneUnit("guarded")
	from := pod.Spec.NodeName
	h.keepNodeState(from)

	// minAvailable 3, more units than the app ever has: no eviction is
	// allowed, even with the surged unit. (maxUnavailable 0 is not enough:
	// while the budget controller has not yet seen the surge, it counts 2
	// healthy units against 1 expected and lets one eviction through.)
	three := intstr.FromInt32(3)
	pdb, err := h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &three,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"tug.dev/app": "guarded"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "budget observed", func() (bool, error) {
		p, err := h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Get(ctx, pdb.Name, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 1, err
	})

	// Timeout: a clear error, the node still cordoned, the unit in place,
	// the count restored.
	r := h.Tug(h.drainArgs(from, "guarded", "--timeout", "8s")...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "timed out") || !strings.Contains(r.Stderr, "PodDisruptionBudget guard") || !strings.Contains(r.Stderr, "stays cordoned") {
		t.Fatalf("blocked removal: want exit 1 naming the budget and the cordon; got %s", r)
	}
	if !h.getNode(from).Spec.Unschedulable {
		t.Fatalf("%s should stay cordoned after the timeout", from)
	}
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, "guarded-web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 1 {
		t.Fatalf("deployment replicas after the timeout: %v (err %v), want 1 (surge restored)", d.Spec.Replicas, err)
	}
	h.mustTug("node", "update", from, "--enable")
	// Restoring the count is a scale-down, and the ReplicaSet picks which
	// unit goes: the one on the node, or the one added elsewhere. Wait for
	// the one that stays, ready and alone, and drain the node it is on.
	var kept corev1.Pod
	h.WaitPods("tug.dev/app=guarded", 90*time.Second, "one ready unit after the restore", func(pods []corev1.Pod) bool {
		if len(pods) != 1 || pods[0].DeletionTimestamp != nil || !AllReady(1)(pods) {
			return false
		}
		kept = pods[0]
		return true
	})
	if kept.Spec.NodeName != from {
		from = kept.Spec.NodeName
		h.keepNodeState(from)
	}
	h.Eventually(30*time.Second, "budget observes the unit that stays", func() (bool, error) {
		p, err := h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Get(ctx, pdb.Name, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 1 && p.Status.CurrentHealthy == 1, err
	})

	// Blocked, then allowed: it proceeds by itself.
	bg := h.startTug(h.drainArgs(from, "guarded", "--timeout", "2m")...)
	bg.WaitFor(t, "blocked by PodDisruptionBudget guard", 60*time.Second)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Get(ctx, "guard", metav1.GetOptions{})
		if err != nil {
			return err
		}
		zero := intstr.FromInt32(0)
		p.Spec.MinAvailable = &zero
		_, err = h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := bg.Wait(); r.Code != 0 {
		t.Fatalf("removal once the budget allows: %s", r)
	}
	h.mustTug("node", "update", from, "--enable")
	if moved := h.waitUnits("guarded", "web", 1, sampleV1); moved[0].Spec.NodeName == from {
		t.Fatalf("the unit is still on %s", from)
	}
}

// A node container runs one pod per matching node, is upgraded node by
// node and removed; a pool's own version takes that pool's nodes from the
// default one.
func TestNodeContainerLifecycle(t *testing.T) {
	h := newNodeH(t)
	nodes := h.realNodes()
	ctx := context.Background()
	podsOf := func(ds string) []corev1.Pod {
		d, err := h.Client.AppsV1().DaemonSets(h.NS).Get(ctx, ds, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("daemonset %s: %v", ds, err)
		}
		l, err := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	onNodes := func(pods []corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				out = append(out, p.Spec.NodeName)
			}
		}
		slices.Sort(out)
		return out
	}

	h.mustTug("node-container", "add", "agent", "--image", sampleV1, "--env", "HEARTBEAT=1s")
	if got := onNodes(podsOf("nc-agent")); !slices.Equal(got, nodes) {
		t.Fatalf("node container pods on %v; want one on each of %v", got, nodes)
	}
	var list []struct {
		Name, Image, Pool string
		Desired, Ready    int32
	}
	if err := json.Unmarshal([]byte(h.mustTug("node-container", "list", "-o", "json").Stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "agent" || list[0].Ready != int32(len(nodes)) || list[0].Image != sampleV1 {
		t.Fatalf("node-container list: %+v", list)
	}

	// upgrade onto v2: every node, rolled, waited for.
	h.mustTug("node-container", "upgrade", "agent", "--image", sampleV2)
	pods := podsOf("nc-agent")
	if got := onNodes(pods); !slices.Equal(got, nodes) {
		t.Fatalf("after upgrade, pods on %v; want %v", got, nodes)
	}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image != sampleV2 {
			t.Fatalf("pod %s on %s still runs %s", p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image)
		}
	}

	// A pool of its own on one node: that node runs the pool's version,
	// the default version leaves it.
	poolNode := nodes[1]
	h.keepNodeState(poolNode)
	pool := "e2e-nc-" + randSuffix()
	h.mustTug("node", "update", poolNode, "--pool", pool)
	h.mustTug("node-container", "add", "agent", "--image", sampleV1, "--pool", pool)
	ds := "nc-agent-" + pool
	if got := onNodes(podsOf(ds)); !slices.Equal(got, []string{poolNode}) {
		t.Fatalf("pool version's pods on %v; want only %s", got, poolNode)
	}
	h.WaitPods("tug.dev/node-container=agent,!tug.dev/pool", 60*time.Second, "default version off the pool's node", func(pods []corev1.Pod) bool {
		return slices.Equal(onNodes(pods), []string{nodes[0]})
	})
	h.mustTug("node-container", "remove", "agent", "--pool", pool, "--yes")
	if _, err := h.Client.AppsV1().DaemonSets(h.NS).Get(ctx, ds, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("daemonset %s still there (err %v)", ds, err)
	}
	h.WaitPods("tug.dev/node-container=agent,!tug.dev/pool", 60*time.Second, "default version back on every node", func(pods []corev1.Pod) bool {
		return slices.Equal(onNodes(pods), nodes) && len(pods) == len(nodes)
	})

	// remove: DaemonSet and pods gone.
	if r := h.Tug("node-container", "remove", "agent"); r.Code != 2 {
		t.Fatalf("remove without --yes: want exit 2; got %s", r)
	}
	h.mustTug("node-container", "remove", "agent", "--yes")
	if _, err := h.Client.AppsV1().DaemonSets(h.NS).Get(ctx, "nc-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("daemonset nc-agent still there (err %v)", err)
	}
	if l, _ := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/node-container=agent"}); len(l.Items) != 0 {
		t.Fatalf("%d node container pods left after remove", len(l.Items))
	}
}
