package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
)

func fixture(t *testing.T, classes ...*storagev1.StorageClass) (*provisioner, *fake.Clientset) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range classes {
		if err := idx.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	client := fake.NewClientset()
	return &provisioner{client: client, root: t.TempDir(), classes: storagelisters.NewStorageClassLister(idx)}, client
}

func class(name, prov string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: prov, VolumeBindingMode: &mode}
}

func claim(className string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "1234"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &className,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
}

// A Pending claim of our class gets a world-writable directory and a volume
// whose claimRef names it; claims of other classes, bound ones and ones
// with a selector are left alone.
func TestClaimGetsVolume(t *testing.T) {
	p, client := fixture(t, class("tug-local", Name, storagev1.VolumeBindingImmediate), class("other", "example.com/x", storagev1.VolumeBindingImmediate))
	ctx := context.Background()
	bound := claim("tug-local")
	bound.Spec.VolumeName = "pv-x"
	selected := claim("tug-local")
	selected.Spec.Selector = &metav1.LabelSelector{}
	for _, c := range []*corev1.PersistentVolumeClaim{claim("other"), bound, selected, claim("missing")} {
		p.claim(ctx, c)
	}
	if l, _ := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("volumes made for claims that are not ours to serve: %v", l.Items)
	}

	p.claim(ctx, claim("tug-local"))
	p.claim(ctx, claim("tug-local")) // again: idempotent
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-1234", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != "ns" || ref.Name != "data" || ref.UID != "1234" {
		t.Errorf("claimRef %+v", ref)
	}
	if pv.Spec.StorageClassName != "tug-local" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Spec.Capacity.Storage().String() != "1Gi" || pv.Annotations[annProvisionedBy] != Name {
		t.Errorf("volume %+v", pv)
	}
	want := filepath.Join(p.root, "pvc-1234")
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != want {
		t.Fatalf("hostPath %+v, want %s", pv.Spec.HostPath, want)
	}
	if st, err := os.Stat(want); err != nil || st.Mode().Perm() != 0o777 {
		t.Fatalf("directory %s: %v %v", want, st, err)
	}
}

// WaitForFirstConsumer: no volume until the scheduler picked a node.
func TestWaitForFirstConsumerWaitsForNode(t *testing.T) {
	p, client := fixture(t, class("late", Name, storagev1.VolumeBindingWaitForFirstConsumer))
	ctx := context.Background()
	c := claim("late")
	p.claim(ctx, c)
	if l, _ := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatal("a volume before the scheduler picked a node")
	}
	c.Annotations = map[string]string{annSelectedNode: "node1"}
	p.claim(ctx, c)
	if _, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-1234", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A released volume of ours goes with its directory; anything else, and a
// volume whose path is not a directory this provisioner made, stays.
func TestReleasedVolumeIsRemoved(t *testing.T) {
	p, client := fixture(t, class("tug-local", Name, storagev1.VolumeBindingImmediate))
	ctx := context.Background()
	pv, err := p.provision(claim("tug-local"), class("tug-local", Name, storagev1.VolumeBindingImmediate))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	stray := pv.DeepCopy()
	stray.Name, stray.Spec.HostPath.Path = "pvc-stray", outside
	for _, v := range []*corev1.PersistentVolume{pv, stray} {
		v.Status.Phase = corev1.VolumeBound
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p.volume(ctx, pv) // still bound
	if _, err := os.Stat(pv.Spec.HostPath.Path); err != nil {
		t.Fatalf("a bound volume's directory was removed: %v", err)
	}
	pv.Status.Phase, stray.Status.Phase = corev1.VolumeReleased, corev1.VolumeReleased
	p.volume(ctx, pv)
	p.volume(ctx, stray)
	if _, err := os.Stat(pv.Spec.HostPath.Path); !os.IsNotExist(err) {
		t.Errorf("the released volume's directory is still there: %v", err)
	}
	if _, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{}); err == nil {
		t.Error("the released volume was not deleted")
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a directory the provisioner did not make was removed: %v", err)
	}
	if _, err := client.CoreV1().PersistentVolumes().Get(ctx, stray.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("a volume outside the root was deleted: %v", err)
	}
}
