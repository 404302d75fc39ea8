package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// localStorage makes a PersistentVolume in a directory of this machine, in a
// StorageClass of its own (the test's namespace name) so that only this
// test's volume binds it: a volume an admin made, not one the local
// cluster's provisioner (class tug-local) makes. Both nodes run on this
// machine, so a hostPath serves a unit on either. It returns the class and
// the directory.
func (h *H) localStorage() (string, string) {
	h.t.Helper()
	dir, err := os.MkdirTemp("", "tug-e2e-pv-")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		h.t.Fatal(err)
	}
	class := h.NS
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: h.NS, Labels: map[string]string{"tug.dev/e2e": "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: new(corev1.HostPathDirectory)},
			},
		},
	}
	if _, err := h.Client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("creating the local PersistentVolume: %v", err)
	}
	h.t.Cleanup(func() {
		err := h.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			h.t.Errorf("removing PersistentVolume %s: %v", pv.Name, err)
		}
		_ = os.RemoveAll(dir)
	})
	return class, dir
}

type volumeRow struct {
	Name         string   `json:"name"`
	Size         string   `json:"size"`
	AccessMode   string   `json:"accessMode"`
	StorageClass string   `json:"storageClass"`
	Status       string   `json:"status"`
	Apps         []string `json:"apps"`
}

func (h *H) volumes() []volumeRow {
	h.t.Helper()
	r := h.mustTug("volume", "list", "-o", "json")
	var rows []volumeRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		h.t.Fatalf("volume list -o json: %v\n%s", err, r.Stdout)
	}
	return rows
}

// mountOf is where pod spec mounts claim in its first container ("" if not).
func mountOf(spec corev1.PodSpec, claim string) string {
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim {
			continue
		}
		for _, m := range spec.Containers[0].VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath
			}
		}
	}
	return ""
}

func TestVolumeBindSurvivesRestartAndRemove(t *testing.T) {
	h := New(t)
	class, dir := h.localStorage()
	h.mustTug("volume", "create", "data", "--size", "1Gi", "--storage-class", class)
	h.Eventually(60*time.Second, "volume data bound to the local PersistentVolume", func() (bool, error) {
		rows := h.volumes()
		return len(rows) == 1 && rows[0].Status == "Bound", nil
	})
	if v := h.volumes()[0]; v.Name != "data" || v.Size != "1Gi" || v.AccessMode != "RWO" || v.StorageClass != class || len(v.Apps) != 0 {
		t.Fatalf("volume list: %+v", v)
	}

	h.deployShop("shop", 1)
	h.mustTug("volume", "bind", "shop", "data", "--mount-path", "/data")
	units := h.waitUnits("shop", "web", 1, sampleV1)
	if got := mountOf(units[0].Spec, "tug-volume-data"); got != "/data" {
		t.Fatalf("unit %s mounts the volume at %q", units[0].Name, got)
	}
	rels := h.releases("shop")
	if rels[0].Kind != "volume" || rels[0].Status != "deployed" || len(rels) != 2 {
		t.Fatalf("bind should make a deployed release of kind volume: %+v", rels)
	}
	if v := h.volumes()[0]; strings.Join(v.Apps, ",") != "shop" {
		t.Fatalf("volume list should name shop: %+v", v)
	}
	// binding it again is refused, and makes no release
	if r := h.Tug("volume", "bind", "shop", "data", "--mount-path", "/other"); r.Code != 1 || !strings.Contains(r.Stderr, "already bound") {
		t.Fatalf("second bind: %s", r)
	}
	if n := len(h.releases("shop")); n != 2 {
		t.Fatalf("a refused bind made a release: %d releases", n)
	}

	// data one unit writes survives a restart
	writer := units[0].Name
	proof := secretWord(t)
	h.mustTug("app", "exec", "shop", "--unit", writer, "--", "sh", "-c", "echo "+proof+" > /data/proof")
	if b, err := os.ReadFile(filepath.Join(dir, "proof")); err != nil || strings.TrimSpace(string(b)) != proof {
		t.Fatalf("the write did not reach the volume's storage: %q %v", b, err)
	}
	h.mustTug("app", "restart", "shop")
	units = h.waitUnits("shop", "web", 1, sampleV1)
	if units[0].Name == writer {
		t.Fatalf("restart kept unit %s", writer)
	}
	r := h.mustTug("app", "exec", "shop", "--unit", units[0].Name, "--", "cat", "/data/proof")
	if strings.TrimSpace(r.Stdout) != proof {
		t.Fatalf("after restart, /data/proof holds %q, want %q", r.Stdout, proof)
	}

	// removal is refused while bound, naming the app
	r = h.Tug("volume", "remove", "data", "--yes")
	if r.Code != 1 || !strings.Contains(r.Stderr, `"shop"`) || !strings.Contains(r.Stderr, "unbind") {
		t.Fatalf("remove while bound: want exit 1 naming shop, got %s", r)
	}
	if _, err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Get(context.Background(), "tug-volume-data", metav1.GetOptions{}); err != nil {
		t.Fatalf("a refused remove touched the claim: %v", err)
	}

	// unbind is a release; the units no longer mount it
	h.mustTug("volume", "unbind", "shop", "data")
	rels = h.releases("shop")
	if rels[0].Kind != "volume" || rels[0].Status != "deployed" || len(rels) != 3 {
		t.Fatalf("unbind should make a deployed release of kind volume: %+v", rels)
	}
	units = h.waitUnits("shop", "web", 1, sampleV1)
	if got := mountOf(units[0].Spec, "tug-volume-data"); got != "" {
		t.Fatalf("after unbind unit %s still mounts the volume at %s", units[0].Name, got)
	}
	if v := h.volumes()[0]; len(v.Apps) != 0 {
		t.Fatalf("volume list after unbind: %+v", v)
	}

	// then removal needs a yes, and works
	if r := h.Tug("volume", "remove", "data"); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("remove without --yes and without a terminal: %s", r)
	}
	h.mustTug("volume", "remove", "data", "--yes")
	h.Eventually(60*time.Second, "the volume's claim is gone", func() (bool, error) {
		_, err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Get(context.Background(), "tug-volume-data", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if rows := h.volumes(); len(rows) != 0 {
		t.Fatalf("volume list after remove: %+v", rows)
	}
}

// Bad volume input: a clear error, exit 2 (1 for what does not exist), and
// nothing changes: no claim, no release, the same pod template.
func TestVolumeBadInputChangesNothing(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	ctx := context.Background()
	before, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"volume", "create", "data"}, 2, "--size is required"},
		{[]string{"volume", "create", "data", "--size", "lots"}, 2, "not a quantity"},
		{[]string{"volume", "create", "data", "--size", "0"}, 2, "more than zero"},
		{[]string{"volume", "create", "Data", "--size", "1Gi"}, 2, "invalid volume name"},
		{[]string{"volume", "create", "data", "--size", "1Gi", "--access-mode", "RW"}, 2, "--access-mode"},
		{[]string{"volume", "bind", "shop", "data"}, 2, "--mount-path is required"},
		{[]string{"volume", "bind", "shop", "data", "--mount-path", "data"}, 2, "absolute"},
		{[]string{"volume", "bind", "shop", "data", "--mount-path", "/"}, 2, "root"},
		{[]string{"volume", "bind", "shop", "data", "--mount-path", "/srv/../etc"}, 2, "'..'"},
		{[]string{"volume", "bind", "shop", "ghost", "--mount-path", "/data"}, 1, `volume "ghost" not found`},
		{[]string{"volume", "bind", "shop", "ghost", "--mount-path", "/data", "-p", "worker"}, 2, `no process "worker"`},
		{[]string{"volume", "bind", "nope", "ghost", "--mount-path", "/data"}, 1, `app "nope" not found`},
		{[]string{"volume", "unbind", "shop", "ghost"}, 1, "not bound"},
		{[]string{"volume", "remove", "ghost", "--yes"}, 1, `volume "ghost" not found`},
	}
	for _, c := range cases {
		r := h.Tug(c.args...)
		if r.Code != c.code || !strings.Contains(r.Stderr, "error: ") || !strings.Contains(r.Stderr, c.says) {
			t.Errorf("tug %q: want exit %d saying %q, got %s", c.args, c.code, c.says, r)
		}
	}
	claims, _ := h.Client.CoreV1().PersistentVolumeClaims(h.NS).List(ctx, metav1.ListOptions{})
	if len(claims.Items) != 0 {
		t.Fatalf("bad input made %d claims", len(claims.Items))
	}
	if n := len(h.releases("shop")); n != 1 {
		t.Fatalf("bad input made releases: %d", n)
	}
	after, _ := h.Client.AppsV1().Deployments(h.NS).Get(ctx, "shop-web", metav1.GetOptions{})
	if after.Generation != before.Generation || len(after.Spec.Template.Spec.Volumes) != 0 {
		t.Fatalf("bad input changed the deployment: generation %d -> %d, volumes %v", before.Generation, after.Generation, after.Spec.Template.Spec.Volumes)
	}
}
