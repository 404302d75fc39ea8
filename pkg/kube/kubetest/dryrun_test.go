package kubetest

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// A dry-run create, update or patch answers as a server would and stores
// nothing; Objects and Diff see exactly the writes that were not dry runs.
func TestHonorDryRunAndDiff(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(configMap("kept", "", map[string]string{"a": "1"}))
	HonorDryRun(c)
	cms := c.CoreV1().ConfigMaps("dev")
	before := Objects(t, c, "dev")
	dry := []string{metav1.DryRunAll}

	got, err := cms.Create(ctx, configMap("new", "", nil), metav1.CreateOptions{DryRun: dry})
	if err != nil || got.Name != "new" {
		t.Fatalf("dry-run create: %v, %v", got, err)
	}
	if _, err := cms.Create(ctx, configMap("kept", "", nil), metav1.CreateOptions{DryRun: dry}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("dry-run create of a name in use: %v", err)
	}
	if _, err := cms.Update(ctx, configMap("kept", "", map[string]string{"a": "2"}), metav1.UpdateOptions{DryRun: dry}); err != nil {
		t.Fatal(err)
	}
	p, err := cms.Patch(ctx, "kept", types.MergePatchType, []byte(`{"data":{"a":"3"}}`), metav1.PatchOptions{DryRun: dry})
	if err != nil || p.Data["a"] != "1" {
		t.Errorf("dry-run patch answers the stored object: %v, %v", p, err)
	}
	if _, err := cms.Patch(ctx, "absent", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{DryRun: dry}); err != nil {
		t.Errorf("dry-run patch of nothing: %v", err)
	}
	if d := Diff(before, Objects(t, c, "dev")); len(d) != 0 {
		t.Fatalf("dry runs changed %v", d)
	}

	if _, err := cms.Create(ctx, configMap("new", "", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, configMap("kept", "", map[string]string{"a": "2"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets("dev").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "dev"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	after := Objects(t, c, "dev")
	want := []string{"changed ConfigMap/kept", "created ConfigMap/new", "created Secret/s"}
	if d := Diff(before, after); !slices.Equal(d, want) {
		t.Errorf("Diff = %v, want %v", d, want)
	}
	if err := cms.Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := Diff(after, Objects(t, c, "dev")); !slices.Equal(d, []string{"deleted ConfigMap/kept"}) {
		t.Errorf("Diff after a delete = %v", d)
	}
}
