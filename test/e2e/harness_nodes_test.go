package e2e

// Harness: real and registered-only nodes, their pools, and the rules for
// tests that change them (nodeLock, keepNodeState).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/node"
)

// nodeLock is held exclusively by tests that change nodes (one at a time),
// and shared by tests that need every node schedulable (required
// anti-affinity across both nodes cannot place its pods while a node is
// cordoned or disabled).
var nodeLock sync.RWMutex

// newNodeH is New for tests that change nodes: they run one at a time.
func newNodeH(t *testing.T) *H {
	h := New(t)
	nodeLock.Lock()
	t.Cleanup(nodeLock.Unlock)
	return h
}

// needAllNodes keeps node-changing tests of this run from cordoning or
// disabling a node until the test ends.
func (h *H) needAllNodes() {
	nodeLock.RLock()
	h.t.Cleanup(nodeLock.RUnlock)
}

func randSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// realNodes are the cluster's ready nodes that have a kubelet (the local
// cluster's node1 and node2), sorted.
func (h *H) realNodes() []string {
	h.t.Helper()
	list, err := h.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		if n.Status.NodeInfo.KubeletVersion == "" {
			continue // a registered-only node of some test
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				names = append(names, n.Name)
			}
		}
	}
	slices.Sort(names)
	if len(names) < 2 {
		if os.Getenv("TUG_E2E_REQUIRED") == "1" {
			h.t.Fatalf("the test cluster has %d ready node(s); make test starts two", len(names))
		}
		h.t.Skip("needs two nodes: make cluster-up NODES=2")
	}
	return names
}

// keepNodeState restores, when the test ends, what node tests change on a
// real node: the pool label, tug's disabled taint, the cordon and the
// record of surges a killed removal left. Other taints, labels and
// annotations are left alone (the node controller may have changed them
// meanwhile).
func (h *H) keepNodeState(name string) {
	h.t.Helper()
	n, err := h.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	pool, hadPool := n.Labels["tug.dev/pool"]
	hadDisabled := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "tug.dev/disabled" })
	var disabledTaint corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key == "tug.dev/disabled" {
			disabledTaint = t
		}
	}
	unschedulable := n.Spec.Unschedulable
	surges, hadSurges := n.Annotations[node.AnnotationSurges]
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := h.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if hadPool {
				cur.Labels["tug.dev/pool"] = pool
			} else {
				delete(cur.Labels, "tug.dev/pool")
			}
			cur.Spec.Taints = slices.DeleteFunc(cur.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "tug.dev/disabled" })
			if hadDisabled {
				cur.Spec.Taints = append(cur.Spec.Taints, disabledTaint)
			}
			cur.Spec.Unschedulable = unschedulable
			if hadSurges {
				cur.Annotations[node.AnnotationSurges] = surges
			} else {
				delete(cur.Annotations, node.AnnotationSurges)
			}
			_, err = h.Client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			h.t.Errorf("restoring node %s: %v", name, err)
		}
	})
}

// fakeNode registers a Node no kubelet will ever join (tug node add of an
// unused name) and deletes it when the test ends, if tug did not.
func (h *H) fakeNode(pool string) string {
	h.t.Helper()
	name := "tug-e2e-" + randSuffix()
	h.t.Cleanup(func() {
		err := h.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			h.t.Errorf("deleting registered node %s: %v", name, err)
		}
	})
	r := h.mustTug("node", "add", name, "--pool", pool)
	if !strings.Contains(r.Stdout, "registered") {
		h.t.Fatalf("node add of an unknown name should register it; got %s", r)
	}
	return name
}

func (h *H) getNode(name string) *corev1.Node {
	h.t.Helper()
	n, err := h.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("getting node %s: %v", name, err)
	}
	return n
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeRow is a line of `tug node list -o json`.
type nodeRow struct {
	Name     string `json:"name"`
	Cluster  string `json:"cluster"`
	Address  string `json:"address"`
	Pool     string `json:"pool"`
	Status   string `json:"status"`
	Ready    bool   `json:"ready"`
	Cordoned bool   `json:"cordoned"`
	Disabled bool   `json:"disabled"`
	Units    *int   `json:"units"`
}

type nodeListJSON struct {
	Nodes       []nodeRow `json:"nodes"`
	Unreachable []struct {
		Cluster, Context, Error string
	} `json:"unreachable"`
}

func (h *H) nodeList(args ...string) nodeListJSON {
	h.t.Helper()
	r := h.mustTug(append([]string{"node", "list", "-o", "json"}, args...)...)
	var out nodeListJSON
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		h.t.Fatalf("node list -o json: %v\n%s", err, r.Stdout)
	}
	return out
}

func (l nodeListJSON) find(name string) *nodeRow {
	for i := range l.Nodes {
		if l.Nodes[i].Name == name {
			return &l.Nodes[i]
		}
	}
	return nil
}

// deployOneUnit deploys a single web unit of app and returns its pod.
func (h *H) deployOneUnit(appName string) corev1.Pod {
	h.t.Helper()
	h.mustTug("app", "create", appName)
	h.mustTug("app", "deploy", appName, "--image", sampleV1)
	return h.waitUnits(appName, "web", 1, sampleV1)[0]
}

// drainArgs moves only this test's pods of app off node, keeping the Node
// (see the file comment).
func (h *H) drainArgs(node, appName string, extra ...string) []string {
	return append([]string{"node", "remove", node, "--yes", "--keep-node", "--pod-namespace", h.NS, "--pod-selector", "tug.dev/app=" + appName}, extra...)
}

// labelPool puts a real node in pool (keepNodeState restores it).
func (h *H) labelPool(node, pool string) {
	h.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := h.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels["tug.dev/pool"] = pool
		_, err = h.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// unlabelPool takes a real node out of pool, if it is still in it.
func (h *H) unlabelPool(node, pool string) {
	h.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := h.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil || n.Labels["tug.dev/pool"] != pool {
			return err
		}
		delete(n.Labels, "tug.dev/pool")
		_, err = h.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// nodeFree is what a schedulable node has left for pods' requests:
// allocatable minus what its non-terminated pods request, as the
// scheduler counts it.
type nodeFree struct {
	Name   string
	CPU    resource.Quantity // millicores
	Memory resource.Quantity
	Pods   int64
}

// freeCapacity lists the ready, schedulable real nodes (kubelet joined, not
// cordoned, no NoSchedule or NoExecute taint) with what they have free,
// sorted by name.
func (h *H) freeCapacity() []nodeFree {
	h.t.Helper()
	ctx := context.Background()
	nodes, err := h.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	pods, err := h.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
	})
	if err != nil {
		h.t.Fatal(err)
	}
	type used struct {
		cpu, mem resource.Quantity
		pods     int64
	}
	onNode := map[string]*used{}
	for i := range pods.Items {
		p := &pods.Items[i]
		u := onNode[p.Spec.NodeName]
		if u == nil {
			u = &used{}
			onNode[p.Spec.NodeName] = u
		}
		req := podRequests(p)
		u.cpu.Add(req[corev1.ResourceCPU])
		u.mem.Add(req[corev1.ResourceMemory])
		u.pods++
	}
	var out []nodeFree
	for _, n := range nodes.Items {
		if n.Status.NodeInfo.KubeletVersion == "" || n.Spec.Unschedulable || !nodeIsReady(&n) ||
			slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}) {
			continue
		}
		f := nodeFree{Name: n.Name, CPU: n.Status.Allocatable.Cpu().DeepCopy(), Memory: n.Status.Allocatable.Memory().DeepCopy(), Pods: n.Status.Allocatable.Pods().Value()}
		if u := onNode[n.Name]; u != nil {
			f.CPU.Sub(u.cpu)
			f.Memory.Sub(u.mem)
			f.Pods -= u.pods
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b nodeFree) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// podRequests is what the scheduler reserves for a pod: the larger of its
// containers' requests summed and any one init container's, plus overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for k, v := range c.Resources.Requests {
			q := out[k]
			q.Add(v)
			out[k] = q
		}
	}
	for _, c := range p.Spec.InitContainers {
		for k, v := range c.Resources.Requests {
			if q := out[k]; v.Cmp(q) > 0 {
				out[k] = v.DeepCopy()
			}
		}
	}
	for k, v := range p.Spec.Overhead {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
	return out
}

func (f nodeFree) String() string {
	return fmt.Sprintf("%s: %dm CPU, %s memory, %d pods free", f.Name, f.CPU.MilliValue(), f.Memory.String(), f.Pods)
}

// liveUnitsOn are the test's live units on node (pods of its namespace
// with a tug.dev/app label, not ended), by name.
func (h *H) liveUnitsOn(node string) []string {
	h.t.Helper()
	pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app", FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		h.t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

// nodeAgrees checks that node list and node info tell the node's state as
// the cluster has it (a deleted node: listed nowhere, info says not
// found); it returns what they said.
func (h *H) nodeAgrees(node string) string {
	t := h.t
	t.Helper()
	n, err := h.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if row := h.nodeList().find(node); row != nil {
			t.Errorf("node list still lists the deleted node %s: %+v", node, row)
		}
		if r := h.Tug("node", "info", node); r.Code != 2 || !strings.Contains(r.Stderr, "not found") {
			t.Errorf("node info of the deleted node %s: want exit 2, not found; got %s", node, r)
		}
		return "gone"
	}
	if err != nil {
		t.Fatal(err)
	}
	// the most urgent status shows: not-ready before cordoned
	status := "ready"
	switch {
	case !nodeIsReady(n):
		status = "not-ready"
	case n.Spec.Unschedulable:
		status = "cordoned"
	}
	row := h.nodeList().find(node)
	if row == nil || row.Cordoned != n.Spec.Unschedulable || row.Status != status {
		t.Errorf("node list says %+v; the node is %s, unschedulable=%v", row, status, n.Spec.Unschedulable)
	}
	// units move while the killed tug's work goes on (a unit starting
	// elsewhere, one stopping): info and a list right after must
	// agree once the node holds still
	var said string
	h.Eventually(time.Minute, "node info agrees with the units on "+node, func() (bool, error) {
		var info struct {
			Status   string
			Cordoned bool
			Units    []struct{ Namespace, Name string }
		}
		r := h.mustTug("node", "info", node, "-o", "json")
		if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil {
			return false, err
		}
		var mine []string
		for _, u := range info.Units {
			if u.Namespace == h.NS {
				mine = append(mine, u.Name)
			}
		}
		slices.Sort(mine)
		have := h.liveUnitsOn(node)
		said = fmt.Sprintf("%s (cordoned %v), units %v", info.Status, info.Cordoned, mine)
		if info.Cordoned != n.Spec.Unschedulable || info.Status != status || !slices.Equal(mine, have) {
			return false, fmt.Errorf("node info: %s; the cluster: unschedulable=%v, units %v", said, n.Spec.Unschedulable, have)
		}
		return true, nil
	})
	return said
}

// soleUnitNode is where the app's one web unit runs once it is alone and
// ready.
func (h *H) soleUnitNode(appName string) string {
	h.t.Helper()
	return h.waitUnits(appName, "web", 1, sampleV1)[0].Spec.NodeName
}
