package kubetest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func configMap(name, rv string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev", ResourceVersion: rv}, Data: data}
}

// TestHonorResourceVersion pins the compare-and-swap an API server does:
// each write gets the next resourceVersion (one counter for every
// resource), a write or delete that names an older one conflicts and
// changes nothing, one that names none always goes through, and
// subresources are left to the fake.
func TestHonorResourceVersion(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	HonorResourceVersion(c)
	cms := c.CoreV1().ConfigMaps("dev")
	stored := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	want := func(what string, err error, conflict bool, name, rv, value string) {
		t.Helper()
		if conflict != apierrors.IsConflict(err) || !conflict && err != nil {
			t.Errorf("%s: %v, want a conflict %v", what, err, conflict)
		}
		if cm := stored(name); cm.ResourceVersion != rv || cm.Data["k"] != value {
			t.Errorf("%s: stored at %q with %q, want %q with %q", what, cm.ResourceVersion, cm.Data["k"], rv, value)
		}
	}

	got, err := cms.Create(ctx, configMap("a", "", map[string]string{"k": "1"}), metav1.CreateOptions{})
	if err != nil || got.ResourceVersion != "1" {
		t.Fatalf("create: %v %+v", err, got)
	}
	want("create", nil, false, "a", "1", "1")
	if s, err := c.CoreV1().Secrets("dev").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil || s.ResourceVersion != "2" {
		t.Fatalf("a create of another resource: %v %+v", err, s)
	}

	got, err = cms.Update(ctx, configMap("a", "1", map[string]string{"k": "2"}), metav1.UpdateOptions{})
	if err != nil || got.ResourceVersion != "3" {
		t.Fatalf("update: %v %+v", err, got)
	}
	want("update at the current version", nil, false, "a", "3", "2")
	_, err = cms.Update(ctx, configMap("a", "1", map[string]string{"k": "stale"}), metav1.UpdateOptions{})
	want("update at an older version", err, true, "a", "3", "2")
	_, err = cms.Update(ctx, configMap("a", "", map[string]string{"k": "4"}), metav1.UpdateOptions{})
	want("update naming no version", err, false, "a", "4", "4")
	// an update of nothing fails, and its version is used up
	if _, err := cms.Update(ctx, configMap("b", "", nil), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of nothing: %v", err)
	}

	for _, p := range []struct {
		what      string
		typ       types.PatchType
		patch     string
		conflict  bool
		rv, value string
	}{
		{"merge patch at an older version", types.MergePatchType, `{"metadata":{"resourceVersion":"1"},"data":{"k":"x"}}`, true, "4", "4"},
		{"merge patch at the current version", types.MergePatchType, `{"metadata":{"resourceVersion":"4"},"data":{"k":"6"}}`, false, "6", "6"},
		{"strategic patch naming no version", types.StrategicMergePatchType, `{"data":{"k":"7"}}`, false, "7", "7"},
		{"json patch (no version read)", types.JSONPatchType, `[{"op":"replace","path":"/data/k","value":"8"}]`, false, "8", "8"},
	} {
		got, err := cms.Patch(ctx, "a", p.typ, []byte(p.patch), metav1.PatchOptions{})
		want(p.what, err, p.conflict, "a", p.rv, p.value)
		if err == nil && got.ResourceVersion != p.rv {
			t.Errorf("%s: answered with %q, want %q", p.what, got.ResourceVersion, p.rv)
		}
	}
	if _, err := cms.Patch(ctx, "b", types.MergePatchType, []byte(`{"data":{"k":"x"}}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("patch of nothing: %v", err)
	}

	stale, current := "1", "8"
	err = cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
	want("delete at an older version", err, true, "a", "8", "8")
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &current}}); err != nil {
		t.Errorf("delete at the current version: %v", err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after delete: %v", err)
	}
	if err := c.CoreV1().Secrets("dev").Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete naming no version: %v", err)
	}

	// a status update is the fake's own: no version checked or given
	pod, err := c.CoreV1().Pods("dev").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
	if err != nil || pod.ResourceVersion != "9" {
		t.Fatalf("create pod: %v %+v", err, pod)
	}
	pod.ResourceVersion = "1"
	pod.Status.Phase = corev1.PodRunning
	if _, err := c.CoreV1().Pods("dev").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Errorf("status update at an older version: %v", err)
	}
	if p, err := c.CoreV1().Pods("dev").Get(ctx, "p", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning || p.ResourceVersion == "10" {
		t.Errorf("after a status update: %v %q %q", err, p.Status.Phase, p.ResourceVersion)
	}
}
