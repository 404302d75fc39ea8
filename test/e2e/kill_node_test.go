package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/test/faultproxy"
)

// `tug node remove` killed with SIGKILL at each of its writes: the cordon,
// the app's deploy lock, the surge that starts a unit elsewhere before the
// last one moves, the eviction, putting the unit count back, and deleting
// the Node. Each kill point is exact: the killed tug reaches the cluster
// through the fault proxy, which passes that one request to the server and
// never answers it (Lost), and the test kills tug once the server has done
// it.
//
// After each kill, what `node list` and `node info` say (cordoned or not,
// the app's units on the node, the node at all) must agree with the
// cluster, and `node remove` run again must finish the removal: the unit
// runs on another node, the app's unit count is the record's again, and
// (for a whole removal) the Node is gone. The real nodes are drained with
// the e2e build's --keep-node/--pod-namespace/--pod-selector flags (only this
// test's unit moves, see node_test.go); the Node deletion is proven on
// registered-only Nodes, with a pod bound to each (--force).
func TestKill9DuringNodeRemove(t *testing.T) {
	h := newNodeH(t)
	nodes := h.realNodes()
	for _, n := range nodes {
		h.keepNodeState(n)
	}
	f := h.faulty()
	h.deployOneUnit("solo")

	var table [][]string
	for _, k := range drainKills(h.NS) {
		table = append(table, killDrain(t, h, f, k))
	}
	// A whole removal, on registered-only Nodes: each holds a pod bound to
	// it (no kubelet runs it; --force moves it), and the Node goes at the end.
	for _, k := range removalKills(h.NS) {
		table = append(table, killRemoval(t, h, f, k))
	}
	t.Logf("node remove kill table:\n%s", killTable([]string{"killed after", "node", "node list / node info right after", "node remove again"}, table))
}

// drainKill is a write of `node remove` on a real node (drained with
// --keep-node) at which the test kills tug.
type drainKill struct {
	name string
	rule func(node, pod string) faultproxy.Rule
	// the killed tug's lease is left to expire (the rerun waits for
	// it): always once the count went up, as the lease that still names
	// the killed tug is what tells the rerun nobody changed the app since
	keepLease bool
}

// drainKills are the kill points of a drain of app solo's node, in order.
func drainKills(ns string) []drainKill {
	return []drainKill{
		{"the node cordoned", func(node, _ string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/api/v1/nodes/" + node, Fault: faultproxy.Lost, Count: 1}
		}, false},
		{"the app's deploy lock taken", func(string, string) faultproxy.Rule {
			return faultproxy.Rule{Method: "POST", Path: "/namespaces/" + ns + "/leases", Fault: faultproxy.Lost, Count: 1}
		}, true},
		// the surge is the run's first write of the scale, putting the count
		// back its second (a body match would need protobuf: client-go
		// sends Scale objects so)
		{"the surge written (1 -> 2 units)", func(string, string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + ns + "/deployments/solo-web/scale", Fault: faultproxy.Lost, Count: 1}
		}, true},
		{"the unit's eviction", func(_, pod string) faultproxy.Rule {
			return faultproxy.Rule{Method: "POST", Path: "/namespaces/" + ns + "/pods/" + pod + "/eviction", Fault: faultproxy.Lost, Count: 1}
		}, true},
		{"the unit count put back (2 -> 1)", func(string, string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + ns + "/deployments/solo-web/scale", Fault: faultproxy.Lost, Skip: 1, Count: 1}
		}, false},
	}
}

// killDrain kills `node remove` of the node app solo's unit runs on at k,
// checks what node list and node info say, and runs the removal again: the
// unit runs on another node, the node stays cordoned, and the app's unit
// count is the record's again. It opens the node again for the next round
// and returns the round's table row.
func killDrain(t *testing.T, h *H, f *faulty, k drainKill) []string {
	t.Helper()
	from := h.soleUnitNode("solo")
	pod := h.liveUnitsOn(from)[0]
	args := h.drainArgs(from, "solo")
	killed := time.Now()
	h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, k.name, k.rule(from, pod), args...)
	after := h.nodeAgrees(from)
	if !k.keepLease {
		h.dropLease("solo")
	}
	res := h.Tug(append(args, "-o", "json", "--timeout", "3m")...)
	if res.Code != 0 {
		t.Fatalf("node remove again after a kill at %s: %s", k.name, res)
	}
	t.Logf("node remove again: %s", res)
	rerun := fmt.Sprintf("finished %s after the kill; %s", time.Since(killed).Round(time.Second), drainRerunDid(t, res))
	if now := h.liveUnitsOn(from); len(now) != 0 {
		t.Errorf("after the rerun, units still on %s: %v", from, now)
	}
	if n := h.getNode(from); !n.Spec.Unschedulable {
		t.Errorf("after the rerun %s is schedulable; a drain leaves it cordoned", from)
	}
	h.nodeAgrees(from)
	want := h.desiredUnits("solo")
	h.Eventually(time.Minute, "the app's units settle", func() (bool, error) {
		got := h.deploymentReplicas("solo-web")
		if got != want {
			return false, fmt.Errorf("the Deployment has %d replicas, the record says %d", got, want)
		}
		return true, nil
	})
	if elsewhere := h.soleUnitNode("solo"); elsewhere == from {
		t.Errorf("the unit is back on %s", from)
	}
	h.mustTug("node", "update", from, "--enable")
	// the node controller's unschedulable taint goes a moment after the
	// cordon: the next round's surge must find the node open
	h.Eventually(time.Minute, from+" loses the unschedulable taint", func() (bool, error) {
		return !hasTaint(h.getNode(from), "node.kubernetes.io/unschedulable"), nil
	})
	h.dropLease("solo")
	return []string{k.name, from + " (real, --keep-node)", after, rerun}
}

// drainRerunDid says what a rerun of node remove did, from its -o json:
// the surges (its own or the killed run's put back) and the unit moved.
func drainRerunDid(t *testing.T, res Result) string {
	t.Helper()
	var out struct {
		Evicted []struct{ Name string }
		Surges  []struct {
			From, To          int32
			Restored, Earlier bool
		}
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("node remove -o json: %v\n%s", err, res)
	}
	var did []string
	for _, s := range out.Surges {
		what := fmt.Sprintf("surged %d -> %d", s.From, s.To)
		if s.Earlier {
			what = fmt.Sprintf("put back the killed run's %d -> %d", s.From, s.To)
		}
		if !s.Restored {
			what += " (not restored)"
		}
		did = append(did, what)
	}
	if len(out.Evicted) > 0 {
		did = append(did, "moved the unit")
	} else {
		did = append(did, "nothing left to move")
	}
	return strings.Join(did, ", ")
}

// removalKill is a write of a whole `node remove` of a registered-only
// Node at which the test kills tug.
type removalKill struct {
	name string
	rule func(node string) faultproxy.Rule
}

// removalKills are the kill points of a whole removal, in order.
func removalKills(ns string) []removalKill {
	return []removalKill{
		{"the node cordoned", func(node string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/api/v1/nodes/" + node, Fault: faultproxy.Lost, Count: 1}
		}},
		{"the pod's eviction", func(string) faultproxy.Rule {
			return faultproxy.Rule{Method: "POST", Path: "/namespaces/" + ns + "/pods/bare/eviction", Fault: faultproxy.Lost, Count: 1}
		}},
		{"the Node deleted", func(node string) faultproxy.Rule {
			return faultproxy.Rule{Method: "DELETE", Path: "/api/v1/nodes/" + node, Fault: faultproxy.Lost, Count: 1}
		}},
	}
}

// killRemoval registers a Node with a pod bound to it, kills `node remove
// --force` of it at k, checks what node list and node info say, and runs
// the removal again: the Node is gone (the rerun deletes it, or says it is
// not found when the killed run had). It returns the round's table row.
func killRemoval(t *testing.T, h *H, f *faulty, k removalKill) []string {
	t.Helper()
	ctx := context.Background()
	node := h.fakeNode("e2e-kill-" + randSuffix())
	_, err := h.Client.CoreV1().Pods(h.NS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: sampleV1, ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"node", "remove", node, "--yes", "--force"}
	h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, k.name, k.rule(node), args...)
	after := h.nodeAgrees(node)
	res := h.Tug(append(args, "-o", "json")...)
	var out struct{ Deleted bool }
	var rerun string
	switch {
	case res.Code == 2 && strings.Contains(res.Stderr, "not found") && after == "gone":
		rerun = "says the node is not found"
	case res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &out) != nil || !out.Deleted:
		t.Fatalf("node remove again after a kill at %s: %s", k.name, res)
	default:
		rerun = "deletes the node"
	}
	if _, err := h.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node %s still there after the rerun (err %v)", node, err)
	}
	h.nodeAgrees(node)
	// the pod garbage collector takes pods of deleted nodes; the next
	// round's pod has the same name
	_ = h.Client.CoreV1().Pods(h.NS).Delete(ctx, "bare", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	h.Eventually(time.Minute, "the bound pod is gone", func() (bool, error) {
		_, err := h.Client.CoreV1().Pods(h.NS).Get(ctx, "bare", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	return []string{k.name, "registered-only", after, rerun}
}
