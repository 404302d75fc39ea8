package node

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func readyNode(name string, ready bool) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: "10.0.0.9"}},
		},
	}
}

func TestStatusPrecedence(t *testing.T) {
	cases := []struct {
		ready, cordoned, disabled bool
		want                      string
	}{
		{true, false, false, StatusReady},
		{true, false, true, StatusDisabled},
		{true, true, true, StatusCordoned},
		{false, true, true, StatusNotReady},
	}
	for _, c := range cases {
		n := readyNode("n", c.ready)
		n.Spec.Unschedulable = c.cordoned
		setDisabled(n, c.disabled)
		got := Summarize(n, "prod", nil)
		if got.Status != c.want || got.Ready != c.ready || got.Cordoned != c.cordoned || got.Disabled != c.disabled {
			t.Errorf("%+v: got %+v", c, got)
		}
		if got.Address != "10.0.0.9" {
			t.Errorf("address %q, want the internal IP", got.Address)
		}
	}
	// A registered node without any condition is not ready.
	if IsReady(&corev1.Node{}) {
		t.Error("a node with no Ready condition counts as ready")
	}
}

func TestTaints(t *testing.T) {
	n := readyNode("n", true)
	n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}, {Key: "gpu", Value: "a100", Effect: corev1.TaintEffectNoSchedule}}
	if !setDisabled(n, true) || setDisabled(n, true) {
		t.Fatal("disable should change once, then be a no-op")
	}
	if got := ShortTaints(Summarize(n, "c", nil).Taints); got != "not-ready:NoExecute,gpu=a100:NoSchedule,disabled=true:NoSchedule" {
		t.Fatalf("short taints %q", got)
	}
	if !setDisabled(n, false) || setDisabled(n, false) {
		t.Fatal("enable should change once, then be a no-op")
	}
	if len(n.Spec.Taints) != 2 || IsDisabled(n) {
		t.Fatalf("enable must keep the other taints: %v", n.Spec.Taints)
	}
}

func TestMetadata(t *testing.T) {
	md, err := ParseMetadata([]string{"rack=r1", "zone=", "team=a=b"}, true)
	if err != nil || md["rack"] != "r1" || md["zone"] != "" || md["team"] != "a=b" {
		t.Fatalf("ParseMetadata: %v %v", md, err)
	}
	for _, bad := range []string{"novalue", "=x", "bad key=v", "-x=1"} {
		if _, err := ParseMetadata([]string{bad}, true); err == nil {
			t.Errorf("%q should be refused", bad)
		}
	}
	if _, err := ParseMetadata([]string{"zone="}, false); err == nil {
		t.Error("an empty value must be refused where it cannot mean delete")
	}
	n := readyNode("n", true)
	n.Annotations = map[string]string{MetadataPrefix + "zone": "z", "other": "x"}
	if !applyMetadata(n, md) {
		t.Fatal("applyMetadata reported no change")
	}
	got := Metadata(n)
	if len(got) != 2 || got["rack"] != "r1" || got["team"] != "a=b" || n.Annotations["other"] != "x" {
		t.Fatalf("metadata %v, annotations %v", got, n.Annotations)
	}
	if applyMetadata(n, map[string]string{"rack": "r1"}) {
		t.Fatal("setting the same value is no change")
	}
}

func TestNodeName(t *testing.T) {
	for in, want := range map[string]string{
		"node7":                     "node7",
		"10.0.0.7":                  "10.0.0.7",
		"Node7.Example.COM":         "node7.example.com",
		"https://10.0.0.7:2376":     "10.0.0.7",
		"10.0.0.7:10250":            "10.0.0.7",
		" worker-1.internal.local ": "worker-1.internal.local",
	} {
		if got, err := NodeName(in); err != nil || got != want {
			t.Errorf("NodeName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "under_score", "a b", "http://", "x!"} {
		if _, err := NodeName(bad); err == nil {
			t.Errorf("NodeName(%q) should fail", bad)
		}
	}
}

func TestUpdateOptionsValidate(t *testing.T) {
	if err := (UpdateOptions{Enable: true, Disable: true}).Validate(); err == nil || !strings.Contains(err.Error(), "contradict") {
		t.Errorf("--enable --disable: %v", err)
	}
	if err := (UpdateOptions{}).Validate(); err == nil {
		t.Error("an empty update should be refused")
	}
	if err := (UpdateOptions{Pool: "a b"}).Validate(); err == nil {
		t.Error("an invalid pool should be refused")
	}
	if err := (UpdateOptions{Metadata: map[string]string{"k": ""}}).Validate(); err != nil {
		t.Errorf("deleting metadata alone is an update: %v", err)
	}
}

func budgetError(budget string, healthy int) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: "The disruption budget " + budget + " needs 1 healthy pods and has " + string(rune('0'+healthy)) + " currently",
	})
	return err
}

func TestClassifyEviction(t *testing.T) {
	podsGR := schema.GroupResource{Resource: "pods"}
	out := ClassifyEviction(budgetError("web-pdb", 1))
	if out.Kind != EvictRetry || out.Budget != "web-pdb" ||
		out.Reason != "blocked by PodDisruptionBudget web-pdb: it needs 1 healthy pods and has 1 currently" {
		t.Errorf("budget refusal: %+v", out)
	}
	throttled := apierrors.NewTooManyRequests("slow down", 3)
	if out := ClassifyEviction(throttled); out.Kind != EvictRetry || out.Budget != "" || out.RetryAfter.Seconds() != 3 || !strings.Contains(out.Reason, "slow down") {
		t.Errorf("server throttling: %+v", out)
	}
	if out := ClassifyEviction(nil); out.Kind != EvictDone {
		t.Errorf("nil: %+v", out)
	}
	if out := ClassifyEviction(apierrors.NewNotFound(podsGR, "x")); out.Kind != EvictDone {
		t.Errorf("gone already: %+v", out)
	}
	terminating := apierrors.NewForbidden(podsGR, "x", errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	if out := ClassifyEviction(terminating); out.Kind != EvictDone {
		t.Errorf("namespace terminating: %+v", out)
	}
	multi := apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
	if out := ClassifyEviction(multi); out.Kind != EvictFailed || !strings.Contains(out.Err.Error(), "more than one PodDisruptionBudget") {
		t.Errorf("several budgets: %+v", out)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "x", errors.New(`User "bob" cannot create resource "pods/eviction" in API group "" in the namespace "shop"`))
	if out := ClassifyEviction(forbidden); out.Kind != EvictFailed {
		t.Errorf("forbidden: %+v", out)
	}
}

func TestClassifyPods(t *testing.T) {
	ctrl := true
	owned := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: &ctrl}}
	}
	cases := []struct {
		name        string
		pod         corev1.Pod
		o           RemoveOptions
		skip, block string
	}{
		{"replicaset pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("ReplicaSet")}}, RemoveOptions{}, "", ""},
		{"daemonset pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("DaemonSet")}}, RemoveOptions{}, skipDaemonSet, ""},
		{"static pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, RemoveOptions{}, skipMirror, ""},
		{"bare pod", corev1.Pod{}, RemoveOptions{}, "", blockUnmanaged},
		{"bare pod, --force", corev1.Pod{}, RemoveOptions{Force: true}, "", ""},
		{"finished bare pod", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, RemoveOptions{}, "", ""},
		{"emptyDir", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("ReplicaSet")}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}, RemoveOptions{}, "", blockEmptyDir},
		{"emptyDir, allowed", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("ReplicaSet")}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}, RemoveOptions{DeleteEmptyDirData: true}, "", ""},
	}
	for _, c := range cases {
		skip, block := classify(&c.pod, c.o)
		if skip != c.skip || block != c.block {
			t.Errorf("%s: skip %q block %q; want %q %q", c.name, skip, block, c.skip, c.block)
		}
	}
}

func TestBlockedErrorNamesFlags(t *testing.T) {
	e := &BlockedError{Node: "n1", Pods: []SkippedPod{
		{PodRef: PodRef{Namespace: "a", Name: "bare"}, Reason: blockUnmanaged},
		{PodRef: PodRef{Namespace: "b", Name: "cache"}, Reason: blockEmptyDir},
	}}
	msg := e.Error()
	for _, want := range []string{"a/bare", "--force", "b/cache", "--delete-emptydir-data", "nothing was changed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
