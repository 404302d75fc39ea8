package volume

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/render"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"data", "a", "uploads-2", strings.Repeat("a", MaxNameLen)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Data", "2data", "data-", "da_ta", "da.ta", strings.Repeat("a", MaxNameLen+1)} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if err := ValidateMountPath("/data/./x"); err == nil || !strings.Contains(err.Error(), "did you mean /data/x?") {
		t.Errorf("a non-canonical path: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for _, ok := range []string{"1Gi", "500Mi", "10G", "1"} {
		if _, err := ParseSize(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "abc", "1 Gi", "0", "-1Gi", "1GB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestParseAccessMode(t *testing.T) {
	cases := map[string]corev1.PersistentVolumeAccessMode{
		"RWO": corev1.ReadWriteOnce, "rwx": corev1.ReadWriteMany, "ROX": corev1.ReadOnlyMany,
		"ReadWriteMany": corev1.ReadWriteMany, "readwriteonce": corev1.ReadWriteOnce,
	}
	for in, want := range cases {
		got, err := ParseAccessMode(in)
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
		if in == strings.ToUpper(in) && ShortAccessMode(got) != strings.ToUpper(in) {
			t.Errorf("short name of %q: %q", got, ShortAccessMode(got))
		}
	}
	if _, err := ParseAccessMode("RWZ"); err == nil {
		t.Error("RWZ: want an error")
	}
}

func TestValidateMountPath(t *testing.T) {
	for _, ok := range []string{"/data", "/var/lib/app", "/data/", "/srv/my files", "/procdata", "/data/.x", "/sysroot"} {
		if err := ValidateMountPath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "data", "./data", "/", "//", "/a/../b", "/..", "/proc", "/sys/x", "/dev", "/a\nb", "/c:d",
		// issue 12 item 8: judged cleaned, and only canonical paths pass
		"/.", "/./proc", "//sys", "/dev/.", "/proc//x", "/data/./x", "//data", "/data/."} {
		if err := ValidateMountPath(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestBindings(t *testing.T) {
	r := &app.Release{}
	if err := addBinding("shop", r, app.VolumeBinding{Volume: "data", MountPath: "/data"}); err != nil {
		t.Fatal(err)
	}
	// the same volume twice, even elsewhere
	if err := addBinding("shop", r, app.VolumeBinding{Volume: "data", MountPath: "/other", Process: "worker"}); err == nil || !strings.Contains(err.Error(), "already bound") {
		t.Fatalf("second binding of one volume: %v", err)
	}
	// another volume at a path an earlier one uses in the same units
	if err := addBinding("shop", r, app.VolumeBinding{Volume: "logs", MountPath: "/data", Process: "web"}); err == nil || !strings.Contains(err.Error(), "already mounted") {
		t.Fatalf("two volumes at one path: %v", err)
	}
	if err := addBinding("shop", r, app.VolumeBinding{Volume: "logs", MountPath: "/logs", Process: "web"}); err != nil {
		t.Fatal(err)
	}
	// different processes may use one path
	if err := addBinding("shop", r, app.VolumeBinding{Volume: "cache", MountPath: "/logs", Process: "worker"}); err != nil {
		t.Fatal(err)
	}
	base := r.Volumes
	next := &app.Release{Volumes: base}
	if err := removeBinding("shop", next, "logs"); err != nil {
		t.Fatal(err)
	}
	if len(next.Volumes) != 2 || next.Volumes[0].Volume != "data" || next.Volumes[1].Volume != "cache" {
		t.Fatalf("after unbind: %+v", next.Volumes)
	}
	if len(base) != 3 || base[1].Volume != "logs" {
		t.Fatalf("unbind changed the base release's bindings: %+v", base)
	}
	if err := removeBinding("shop", next, "logs"); err == nil {
		t.Fatal("unbind of an unbound volume: want an error")
	}
}

func TestCreateListRemove(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := &app.Store{Client: client, Namespace: "dev"}
	v, err := Create(ctx, client, "dev", CreateOptions{Name: "data", Size: "2Gi", StorageClass: "fast", AccessMode: "rwx"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "data" || v.Size != "2Gi" || v.AccessMode != "RWX" || v.StorageClass != "fast" || v.Status != "Pending" {
		t.Fatalf("created: %+v", v)
	}
	pvc, err := client.CoreV1().PersistentVolumeClaims("dev").Get(ctx, render.VolumeClaimName("data"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Labels["tug.dev/kind"] != "volume" || pvc.Labels[LabelVolume] != "data" || pvc.Labels["app.kubernetes.io/managed-by"] != "tug" {
		t.Fatalf("labels: %v", pvc.Labels)
	}
	if _, err := Create(ctx, client, "dev", CreateOptions{Name: "data", Size: "1Gi"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create twice: %v", err)
	}

	// two apps whose deployed releases mount it
	for _, name := range []string{"web", "api"} {
		if err := store.CreateApp(ctx, &app.App{Name: name, Namespace: "dev", Volumes: []string{"data"}}); err != nil {
			t.Fatal(err)
		}
	}
	vols, err := List(ctx, store)
	if err != nil || len(vols) != 1 || strings.Join(vols[0].Apps, ",") != "api,web" {
		t.Fatalf("list: %+v %v", vols, err)
	}
	err = Remove(ctx, store, "data")
	var inUse *InUseError
	if !errors.As(err, &inUse) || !strings.Contains(err.Error(), "api, web") {
		t.Fatalf("remove while bound: %v", err)
	}
	if _, err := client.CoreV1().PersistentVolumeClaims("dev").Get(ctx, render.VolumeClaimName("data"), metav1.GetOptions{}); err != nil {
		t.Fatal("a refused remove deleted the claim")
	}
	for _, name := range []string{"web", "api"} {
		if _, err := store.UpdateApp(ctx, name, func(a *app.App) error { a.Volumes = nil; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := Remove(ctx, store, "data"); err != nil {
		t.Fatal(err)
	}
	if err := Remove(ctx, store, "data"); !app.IsNotFound(err) {
		t.Fatalf("remove of a missing volume: %v", err)
	}
}

// A claim tug did not make is not a volume, even with tug's name.
func TestForeignClaimIsNotAVolume(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: render.VolumeClaimName("data"), Namespace: "dev"}})
	store := &app.Store{Client: client, Namespace: "dev"}
	if _, err := Get(ctx, store, "data"); !app.IsNotFound(err) {
		t.Fatalf("want not found, got %v", err)
	}
	if vols, err := List(ctx, store); err != nil || len(vols) != 0 {
		t.Fatalf("list: %+v %v", vols, err)
	}
}

// A volume no StorageClass can provision says so at create, not when a
// bind times out; with a default class, nothing is said.
func TestCreateSaysWhenNoStorageClassProvisions(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		classes []runtime.Object
		class   string
		want    string
	}{
		{"no class at all", nil, "", "the cluster has no StorageClass: the volume stays Pending"},
		{"no default", []runtime.Object{&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}}, "", "the cluster has no default StorageClass"},
		{"a missing class", nil, "fast", `the cluster has no StorageClass "fast" to provision it`},
		{"a default", []runtime.Object{&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "std",
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}}}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Create(ctx, fake.NewClientset(tt.classes...), "dev", CreateOptions{Name: "data", Size: "1Gi", StorageClass: tt.class})
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && v.Warning != "" || !strings.Contains(v.Warning, tt.want) {
				t.Errorf("warning %q, want %q", v.Warning, tt.want)
			}
		})
	}
}
