package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	ctx := context.Background()
	h.deployOneUnit("solo")

	// unitsOn are this test's live units on node, by name.
	unitsOn := func(node string) []string {
		t.Helper()
		pods, err := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app", FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			t.Fatal(err)
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
	// agrees checks that node list and node info tell the node's state as
	// the cluster has it; it returns what they said.
	agrees := func(node string) string {
		t.Helper()
		n, err := h.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
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
			have := unitsOn(node)
			said = fmt.Sprintf("%s (cordoned %v), units %v", info.Status, info.Cordoned, mine)
			if info.Cordoned != n.Spec.Unschedulable || info.Status != status || !slices.Equal(mine, have) {
				return false, fmt.Errorf("node info: %s; the cluster: unschedulable=%v, units %v", said, n.Spec.Unschedulable, have)
			}
			return true, nil
		})
		return said
	}
	// record is the app's unit count in its record; replicas the Deployment's.
	record := func() int32 {
		t.Helper()
		var in struct{ Processes []struct{ Desired int32 } }
		if err := json.Unmarshal([]byte(h.mustTug("app", "info", "solo", "-o", "json").Stdout), &in); err != nil || len(in.Processes) != 1 {
			t.Fatalf("app info: %v %+v", err, in)
		}
		return in.Processes[0].Desired
	}
	dropLease := func() {
		t.Helper()
		err := h.Client.CoordinationV1().Leases(h.NS).Delete(ctx, "tug-lock-solo", metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	// where the one unit runs once it is alone and ready
	home := func() string {
		t.Helper()
		return h.waitUnits("solo", "web", 1, sampleV1)[0].Spec.NodeName
	}

	type row struct {
		point, node, after, rerun string
	}
	var table []row
	kinds := []struct {
		name string
		rule func(node, pod string) faultproxy.Rule
		// the killed tug's lease is left to expire (the rerun waits for
		// it): always once the count went up, as the lease that still names
		// the killed tug is what tells the rerun nobody changed the app since
		keepLease bool
	}{
		{"the node cordoned", func(node, _ string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/api/v1/nodes/" + node, Fault: faultproxy.Lost, Count: 1}
		}, false},
		{"the app's deploy lock taken", func(string, string) faultproxy.Rule {
			return faultproxy.Rule{Method: "POST", Path: "/namespaces/" + h.NS + "/leases", Fault: faultproxy.Lost, Count: 1}
		}, true},
		// the surge is the run's first write of the scale, putting the count
		// back its second (a body match would need protobuf: client-go
		// sends Scale objects so)
		{"the surge written (1 -> 2 units)", func(string, string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + h.NS + "/deployments/solo-web/scale", Fault: faultproxy.Lost, Count: 1}
		}, true},
		{"the unit's eviction", func(_, pod string) faultproxy.Rule {
			return faultproxy.Rule{Method: "POST", Path: "/namespaces/" + h.NS + "/pods/" + pod + "/eviction", Fault: faultproxy.Lost, Count: 1}
		}, true},
		{"the unit count put back (2 -> 1)", func(string, string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + h.NS + "/deployments/solo-web/scale", Fault: faultproxy.Lost, Skip: 1, Count: 1}
		}, false},
	}
	for _, k := range kinds {
		from := home()
		pod := unitsOn(from)[0]
		args := h.drainArgs(from, "solo")
		killed := time.Now()
		h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, k.name, k.rule(from, pod), args...)
		r := row{point: k.name, node: from + " (real, --keep-node)", after: agrees(from)}
		if !k.keepLease {
			dropLease()
		}
		res := h.Tug(append(args, "-o", "json", "--timeout", "3m")...)
		if res.Code != 0 {
			t.Fatalf("node remove again after a kill at %s: %s", k.name, res)
		}
		t.Logf("node remove again: %s", res)
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
		r.rerun = fmt.Sprintf("finished %s after the kill; %s", time.Since(killed).Round(time.Second), strings.Join(did, ", "))
		if now := unitsOn(from); len(now) != 0 {
			t.Errorf("after the rerun, units still on %s: %v", from, now)
		}
		if n := h.getNode(from); !n.Spec.Unschedulable {
			t.Errorf("after the rerun %s is schedulable; a drain leaves it cordoned", from)
		}
		agrees(from)
		want := record()
		h.Eventually(time.Minute, "the app's units settle", func() (bool, error) {
			got := h.deploymentReplicas("solo-web")
			if got != want {
				return false, fmt.Errorf("the Deployment has %d replicas, the record says %d", got, want)
			}
			return true, nil
		})
		if elsewhere := home(); elsewhere == from {
			t.Errorf("the unit is back on %s", from)
		}
		h.mustTug("node", "update", from, "--enable")
		// the node controller's unschedulable taint goes a moment after the
		// cordon: the next round's surge must find the node open
		h.Eventually(time.Minute, from+" loses the unschedulable taint", func() (bool, error) {
			return !hasTaint(h.getNode(from), "node.kubernetes.io/unschedulable"), nil
		})
		dropLease()
		table = append(table, r)
	}

	// A whole removal, on registered-only Nodes: each holds a pod bound to
	// it (no kubelet runs it; --force moves it), and the Node goes at the end.
	for _, k := range []struct {
		name string
		rule func(node string) faultproxy.Rule
	}{
		{"the node cordoned", func(node string) faultproxy.Rule {
			return faultproxy.Rule{Method: "PUT", Path: "/api/v1/nodes/" + node, Fault: faultproxy.Lost, Count: 1}
		}},
		{"the pod's eviction", func(string) faultproxy.Rule {
			return faultproxy.Rule{Method: "POST", Path: "/namespaces/" + h.NS + "/pods/bare/eviction", Fault: faultproxy.Lost, Count: 1}
		}},
		{"the Node deleted", func(node string) faultproxy.Rule {
			return faultproxy.Rule{Method: "DELETE", Path: "/api/v1/nodes/" + node, Fault: faultproxy.Lost, Count: 1}
		}},
	} {
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
		r := row{point: k.name, node: "registered-only", after: agrees(node)}
		res := h.Tug(append(args, "-o", "json")...)
		var out struct{ Deleted bool }
		switch {
		case res.Code == 2 && strings.Contains(res.Stderr, "not found") && r.after == "gone":
			r.rerun = "says the node is not found"
		case res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &out) != nil || !out.Deleted:
			t.Fatalf("node remove again after a kill at %s: %s", k.name, res)
		default:
			r.rerun = "deletes the node"
		}
		if _, err := h.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("node %s still there after the rerun (err %v)", node, err)
		}
		agrees(node)
		// the pod garbage collector takes pods of deleted nodes; the next
		// round's pod has the same name
		_ = h.Client.CoreV1().Pods(h.NS).Delete(ctx, "bare", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		h.Eventually(time.Minute, "the bound pod is gone", func() (bool, error) {
			_, err := h.Client.CoreV1().Pods(h.NS).Get(ctx, "bare", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		table = append(table, r)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "| # | killed after | node | node list / node info right after | node remove again |\n|---|---|---|---|---|\n")
	for i, r := range table {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, r.point, r.node, r.after, r.rerun)
	}
	t.Logf("node remove kill table:\n%s", b.String())
}
