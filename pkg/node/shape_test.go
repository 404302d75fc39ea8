package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
)

// A registered Node is in its pool, carries the IaaS id, is found by the
// address the user gave (an IP as InternalIP), and is not ready until a
// kubelet joins.
func TestRegisteredNode(t *testing.T) {
	for _, tt := range []struct {
		name     string
		addrType corev1.NodeAddressType
	}{
		{"10.0.0.7", corev1.NodeInternalIP},
		{"worker-7", corev1.NodeHostName},
	} {
		n := registeredNode(tt.name, AddOptions{Pool: "gpu", IaaSID: "i-123"})
		if n.Name != tt.name || n.Labels[kube.LabelPool] != "gpu" || n.Spec.ProviderID != "i-123" || n.Annotations[AnnotationIaaSID] != "i-123" {
			t.Errorf("%s: node %+v", tt.name, n.ObjectMeta)
		}
		if len(n.Status.Addresses) != 1 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: tt.addrType, Address: tt.name}) {
			t.Errorf("%s: addresses %+v", tt.name, n.Status.Addresses)
		}
		if len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Type != corev1.NodeReady || n.Status.Conditions[0].Status != corev1.ConditionFalse {
			t.Errorf("%s: conditions %+v; want Ready=False", tt.name, n.Status.Conditions)
		}
	}
}

// unitsOf keeps live units only, sorted by namespace, app and name.
func TestUnitsOf(t *testing.T) {
	pod := func(ns, appName, name string, phase corev1.PodPhase, kind string) corev1.Pod {
		l := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: appName, kube.LabelProcess: "web"}
		if kind != "" {
			l[kube.LabelKind] = kind
		}
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}, Status: corev1.PodStatus{Phase: phase}}
	}
	units := unitsOf([]corev1.Pod{
		pod("dev", "shop", "shop-b", corev1.PodRunning, ""),
		pod("dev", "api", "api-a", corev1.PodRunning, ""),
		pod("dev", "shop", "shop-a", corev1.PodPending, ""),
		pod("alpha", "zed", "zed-a", corev1.PodRunning, ""),
		pod("dev", "shop", "shop-done", corev1.PodSucceeded, ""),
		pod("dev", "shop", "shop-run-1", corev1.PodRunning, "run"),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "other"}},
	})
	var got []string
	for _, u := range units {
		got = append(got, u.Namespace+"/"+u.Name)
	}
	want := []string{"alpha/zed-a", "dev/api-a", "dev/shop-a", "dev/shop-b"}
	if len(got) != len(want) {
		t.Fatalf("units %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("units %q, want %q", got, want)
		}
	}
	if none := unitsOf(nil); none == nil || len(none) != 0 {
		t.Fatalf("unitsOf(nil) = %#v; want an empty list (JSON [])", none)
	}
}
