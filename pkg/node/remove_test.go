package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// recorder is a Progress that keeps every message.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Update(m string) { r.mu.Lock(); r.msgs = append(r.msgs, m); r.mu.Unlock() }
func (r *recorder) Done(m string)   { r.Update(m) }
func (r *recorder) Fail(m string)   { r.Update(m) }
func (r *recorder) saw(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// fakeCluster is a fake clientset with the behaviour node removal relies
// on and the object tracker lacks: evictions (through a policy the test
// sets) and the Deployment scale subresource, whose increase starts a ready
// unit on node "other" as the ReplicaSet, scheduler and kubelet would.
type fakeCluster struct {
	*fake.Clientset
	mu     sync.Mutex
	events []string
	// evict decides an eviction: nil lets it through (the pod is deleted).
	evict func(ns, name string) error
	// deny lists "verb resource[/sub]" that access reviews refuse.
	deny map[string]bool
}

func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{Clientset: fake.NewClientset(objs...)}
	tracker := fc.Tracker()
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		key := ra.Verb + " " + ra.Resource
		if ra.Subresource != "" {
			key += "/" + ra.Subresource
		}
		r.Status.Allowed = !fc.deny[key]
		return true, r, nil
	})
	// The tracker ignores field selectors; removal lists a node's pods by
	// spec.nodeName and waits on one pod by metadata.name.
	fc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.ListAction).GetListRestrictions()
		obj, err := tracker.List(podsGVR, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		list := obj.(*corev1.PodList)
		kept := list.Items[:0]
		for _, p := range list.Items {
			f := fields.Set{"spec.nodeName": p.Spec.NodeName, "metadata.name": p.Name, "metadata.namespace": p.Namespace}
			if (r.Labels == nil || r.Labels.Matches(labels.Set(p.Labels))) && (r.Fields == nil || r.Fields.Matches(f)) {
				kept = append(kept, p)
			}
		}
		list.Items = kept
		return true, list, nil
	})
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		if fc.evict != nil {
			if err := fc.evict(ev.Namespace, ev.Name); err != nil {
				fc.record("refused " + ev.Name)
				return true, nil, err
			}
		}
		elsewhere := 0
		if list, err := tracker.List(podsGVR, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, ev.Namespace); err == nil {
			for _, p := range list.(*corev1.PodList).Items {
				if p.Spec.NodeName != "n1" && kube.PodReady(&p) {
					elsewhere++
				}
			}
		}
		fc.record(fmt.Sprintf("evict %s (ready elsewhere: %d)", ev.Name, elsewhere))
		if err := tracker.Delete(podsGVR, ev.Namespace, ev.Name); err != nil {
			return true, nil, err
		}
		return true, nil, nil
	})
	fc.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		obj, err := tracker.Get(deploymentsGVR, a.GetNamespace(), a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment)
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace}, Spec: autoscalingv1.ScaleSpec{Replicas: *d.Spec.Replicas}}, nil
	})
	fc.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		sc := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		obj, err := tracker.Get(deploymentsGVR, a.GetNamespace(), sc.Name)
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		old := *d.Spec.Replicas
		d.Spec.Replicas = &sc.Spec.Replicas
		if err := tracker.Update(deploymentsGVR, d, d.Namespace); err != nil {
			return true, nil, err
		}
		fc.record(fmt.Sprintf("scale %s %d->%d", d.Name, old, sc.Spec.Replicas))
		if sc.Spec.Replicas > old {
			p := unitPod(d.Namespace, "shop", "web", fmt.Sprintf("shop-web-surge%d", sc.Spec.Replicas), "other", true)
			if err := tracker.Add(p); err != nil {
				return true, nil, err
			}
		}
		return true, sc, nil
	})
	return fc
}

func (fc *fakeCluster) record(e string) {
	fc.mu.Lock()
	fc.events = append(fc.events, e)
	fc.mu.Unlock()
}

func (fc *fakeCluster) log() []string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]string(nil), fc.events...)
}

func (fc *fakeCluster) found(t *testing.T, name string) *Found {
	t.Helper()
	n, err := fc.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &Found{Target: cluster.Target{Cluster: cluster.Cluster{Name: "test"}, Client: fc}, Node: n}
}

func replicaSetPod(ns, name, node string) *corev1.Pod {
	ctrl := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", Controller: &ctrl}}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func unitPod(ns, app, proc, name, node string, ready bool) *corev1.Pod {
	p := replicaSetPod(ns, name, node)
	p.Labels = map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: app, kube.LabelProcess: proc}
	if !ready {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	return p
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
}

func nodeExists(t *testing.T, fc *fakeCluster, name string) *corev1.Node {
	t.Helper()
	n, err := fc.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRemoveNoRebalanceDeletesOnlyTheNode(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), replicaSetPod("a", "p", "n1"))
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{NoRebalance: true})
	if err != nil || !res.Deleted {
		t.Fatalf("Remove: %+v %v", res, err)
	}
	if nodeExists(t, fc, "n1") != nil {
		t.Fatal("node still there")
	}
	if len(fc.log()) != 0 {
		t.Fatalf("--no-rebalance evicted: %v", fc.log())
	}
}

func TestRemoveRetriesWhileBudgetBlocks(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), readyNode("n2", true), replicaSetPod("a", "p", "n1"), replicaSetPod("a", "q", "n2"))
	refusals := 2
	fc.evict = func(ns, name string) error {
		if refusals > 0 {
			refusals--
			return budgetError("p-pdb", 1)
		}
		return nil
	}
	rec := &recorder{}
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{Progress: rec, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Deleted || !res.Cordoned || len(res.Evicted) != 1 || res.Evicted[0].Name != "p" {
		t.Fatalf("result %+v", res)
	}
	if got := strings.Join(fc.log(), "; "); got != "refused p; refused p; evict p (ready elsewhere: 1)" {
		t.Fatalf("evictions: %s", got)
	}
	if !rec.saw("pod a/p: blocked by PodDisruptionBudget p-pdb: it needs 1 healthy pods and has 1 currently") {
		t.Fatalf("progress did not name the budget: %q", rec.msgs)
	}
	if nodeExists(t, fc, "n1") != nil {
		t.Fatal("node still there")
	}
	if _, err := fc.CoreV1().Pods("a").Get(context.Background(), "q", metav1.GetOptions{}); err != nil {
		t.Fatalf("a pod on another node was touched: %v", err)
	}
}

func TestRemoveTimesOutLeavingNodeCordoned(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), replicaSetPod("a", "p", "n1"))
	fc.evict = func(string, string) error { return budgetError("p-pdb", 1) }
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{RetryDelay: time.Millisecond, Timeout: 50 * time.Millisecond})
	var de *DrainError
	if !errors.As(err, &de) || de.Timeout != 50*time.Millisecond {
		t.Fatalf("want a DrainError for the timeout, got %v", err)
	}
	for _, want := range []string{"timed out after 50ms", "pod a/p", "PodDisruptionBudget p-pdb", "stays cordoned", "--enable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	n := nodeExists(t, fc, "n1")
	if n == nil || !n.Spec.Unschedulable || res.Deleted {
		t.Fatalf("node must stay, cordoned: %+v, result %+v", n, res)
	}
}

func TestRemoveRefusesUnmanagedPodsBeforeChanging(t *testing.T) {
	bare := replicaSetPod("a", "bare", "n1")
	bare.OwnerReferences = nil
	fc := newFakeCluster(t, readyNode("n1", true), bare)
	_, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{})
	var be *BlockedError
	if !errors.As(err, &be) || len(be.Pods) != 1 || be.Pods[0].Name != "bare" {
		t.Fatalf("want a BlockedError naming a/bare, got %v", err)
	}
	if n := nodeExists(t, fc, "n1"); n == nil || n.Spec.Unschedulable {
		t.Fatal("a refused removal must leave the node as it was")
	}
	if len(fc.log()) != 0 {
		t.Fatalf("a refused removal evicted: %v", fc.log())
	}
}

// On a node no kubelet runs, an evicted pod is only marked for deletion;
// that must be enough to go on.
func TestRemoveNotReadyNodeDoesNotWaitForKubelet(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", false), replicaSetPod("a", "p", "n1"))
	tracker := fc.Tracker()
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		key := ra.Verb + " " + ra.Resource
		if ra.Subresource != "" {
			key += "/" + ra.Subresource
		}
		r.Status.Allowed = !fc.deny[key]
		return true, r, nil
	})
	// The tracker ignores field selectors; removal lists a node's pods by
	// spec.nodeName and waits on one pod by metadata.name.
	fc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.ListAction).GetListRestrictions()
		obj, err := tracker.List(podsGVR, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		list := obj.(*corev1.PodList)
		kept := list.Items[:0]
		for _, p := range list.Items {
			f := fields.Set{"spec.nodeName": p.Spec.NodeName, "metadata.name": p.Name, "metadata.namespace": p.Namespace}
			if (r.Labels == nil || r.Labels.Matches(labels.Set(p.Labels))) && (r.Fields == nil || r.Fields.Matches(f)) {
				kept = append(kept, p)
			}
		}
		list.Items = kept
		return true, list, nil
	})
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		obj, _ := tracker.Get(podsGVR, "a", "p")
		p := obj.(*corev1.Pod).DeepCopy()
		now := metav1.Now()
		p.DeletionTimestamp = &now // what the API server does; no kubelet finishes it
		return true, nil, tracker.Update(podsGVR, p, "a")
	})
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{Timeout: 5 * time.Second})
	if err != nil || !res.Deleted {
		t.Fatalf("Remove: %+v %v", res, err)
	}
}

func TestRemoveSurgesLastReadyUnit(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), readyNode("other", true),
		unitPod("apps", "shop", "web", "shop-web-1", "n1", true), deployment("apps", "shop-web", 1),
		// a worker with a ready unit elsewhere needs no surge
		unitPod("apps", "shop", "worker", "shop-worker-1", "n1", true), unitPod("apps", "shop", "worker", "shop-worker-2", "other", true),
		deployment("apps", "shop-worker", 2))
	rec := &recorder{}
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{Progress: rec, Holder: lock.Holder{User: "test"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	log := fc.log()
	var web []string
	for _, e := range log {
		if strings.Contains(e, "shop-web") {
			web = append(web, e)
		}
	}
	if got := strings.Join(web, "; "); got != "scale shop-web 1->2; evict shop-web-1 (ready elsewhere: 2); scale shop-web 2->1" {
		t.Fatalf("web: want surge, evict with a ready unit elsewhere, restore; got %s", got)
	}
	for _, e := range log {
		if strings.Contains(e, "scale shop-worker") {
			t.Fatalf("worker had a ready unit elsewhere and must not be surged: %v", log)
		}
	}
	if len(res.Surges) != 1 || res.Surges[0] != (Surge{Namespace: "apps", App: "shop", Process: "web", From: 1, To: 2, Restored: true}) {
		t.Fatalf("surges %+v", res.Surges)
	}
	if len(res.Evicted) != 2 || !res.Deleted {
		t.Fatalf("result %+v", res)
	}
	// The deploy lock was held for the surge and released after.
	leases, _ := fc.CoordinationV1().Leases("apps").List(context.Background(), metav1.ListOptions{})
	if len(leases.Items) != 0 {
		t.Fatalf("deploy lock left behind: %v", leases.Items)
	}
	if !rec.saw("apps/shop (web): starting a unit on another node") {
		t.Fatalf("progress: %q", rec.msgs)
	}
}

func TestRemoveDryRunChangesNothing(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), unitPod("apps", "shop", "web", "shop-web-1", "n1", true), deployment("apps", "shop-web", 1))
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || len(res.Evicted) != 1 || len(res.Surges) != 1 || res.Surges[0].To != 2 || !res.Deleted {
		t.Fatalf("dry run plan %+v", res)
	}
	if n := nodeExists(t, fc, "n1"); n == nil || n.Spec.Unschedulable {
		t.Fatal("dry run changed the node")
	}
	if len(fc.log()) != 0 {
		t.Fatalf("dry run acted: %v", fc.log())
	}
}

func TestRemovePodSelectorNeedsKeepNode(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true))
	_, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{PodSelector: "a=b"})
	if !inputerr.Is(err) {
		t.Fatalf("want an input error, got %v", err)
	}
}

func TestRemoveStopsBeforeCordonWithoutPermission(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), replicaSetPod("a", "p", "n1"))
	fc.deny = map[string]bool{"create pods/eviction": true}
	_, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{})
	var pe *PermissionError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "create pods/eviction in all namespaces") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("want a PermissionError naming pods/eviction, got %v", err)
	}
	if n := nodeExists(t, fc, "n1"); n == nil || n.Spec.Unschedulable {
		t.Fatal("the node must be left as it was")
	}
	// --no-rebalance needs only to delete the node.
	fc.deny = map[string]bool{"delete nodes": true}
	if _, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{NoRebalance: true}); !errors.As(err, &pe) {
		t.Fatalf("want a PermissionError for delete nodes, got %v", err)
	}
}

func TestRemoveOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    RemoveOptions
		want string // "" for valid
	}{
		{"defaults", RemoveOptions{}, ""},
		{"force and emptydir", RemoveOptions{Force: true, DeleteEmptyDirData: true, Timeout: time.Minute}, ""},
		{"drain some pods", RemoveOptions{KeepNode: true, PodSelector: "app=x", PodNamespace: "team"}, ""},
		{"no-rebalance alone", RemoveOptions{NoRebalance: true}, ""},
		{"no-rebalance and force", RemoveOptions{NoRebalance: true, Force: true}, "--no-rebalance moves nothing"},
		{"no-rebalance and keep-node", RemoveOptions{NoRebalance: true, KeepNode: true}, "--no-rebalance moves nothing"},
		{"no-rebalance and a namespace", RemoveOptions{NoRebalance: true, PodNamespace: "team"}, "--no-rebalance moves nothing"},
		{"selector without keep-node", RemoveOptions{PodSelector: "app=x"}, "need --keep-node"},
		{"namespace without keep-node", RemoveOptions{PodNamespace: "team"}, "need --keep-node"},
		{"negative timeout", RemoveOptions{Timeout: -time.Second}, "invalid --timeout -1s"},
		{"bad selector", RemoveOptions{KeepNode: true, PodSelector: "a b c"}, "invalid pod selector"},
	} {
		err := tc.o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !inputerr.Is(err)):
			t.Errorf("%s: %v, want a usage error with %q", tc.name, err, tc.want)
		}
	}
}
