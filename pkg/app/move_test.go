package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/kube"
)

func TestCopyTo(t *testing.T) {
	ctx := context.Background()
	src, c := newStore(t)
	if err := src.CreateApp(ctx, &App{Name: "shop", Namespace: src.Namespace, Pool: "pb", Release: 1, LastRelease: 1}); err != nil {
		t.Fatal(err)
	}
	if err := src.CreateRelease(ctx, &Release{App: "shop", Version: 1, Image: "shop:1", Status: StatusDeployed}, ConfigMap{"A": "1"}); err != nil {
		t.Fatal(err)
	}
	reg := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-registry", Namespace: src.Namespace, Labels: kube.AppLabels("shop")},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{}")}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "blog-registry", Namespace: src.Namespace, Labels: kube.AppLabels("blog")}}
	for _, s := range []*corev1.Secret{reg, other} {
		if _, err := c.CoreV1().Secrets(src.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dc := fake.NewClientset()
	dst := &Store{Client: dc, Namespace: "there"}
	mark := &Move{Role: MoveTarget, From: "b", To: "a", Pool: "pa"}
	got, err := src.CopyTo(ctx, dst, "shop", mark)
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != "there" || got.Move == nil || got.Move.Role != MoveTarget || got.Pool != "pb" || got.Release != 1 {
		t.Errorf("copied record %+v move %+v", got, got.Move)
	}
	r, cfg, err := dst.GetRelease(ctx, "shop", 1)
	if err != nil || r.Image != "shop:1" || cfg["A"] != "1" {
		t.Errorf("copied release: %+v %v %v", r, cfg, err)
	}
	if s, err := dc.CoreV1().Secrets("there").Get(ctx, "shop-registry", metav1.GetOptions{}); err != nil || s.Type != corev1.SecretTypeDockerConfigJson {
		t.Errorf("registry credentials not copied: %v", err)
	}
	if _, err := dc.CoreV1().Secrets("there").Get(ctx, "blog-registry", metav1.GetOptions{}); err == nil {
		t.Error("another app's secret was copied")
	}
	// the source is untouched
	if a, _ := src.GetApp(ctx, "shop"); a.Move != nil || a.Namespace != src.Namespace {
		t.Errorf("source record changed: %+v", a)
	}
	// a second copy over the first fails and says what is in the way
	if _, err := src.CopyTo(ctx, dst, "shop", mark); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("copying over a copy: %v", err)
	}
	if !strings.Contains(mark.Describe(), "new copy") || !strings.Contains((&Move{Role: MoveSource, Superseded: true}).Describe(), "superseded") {
		t.Error("Describe does not tell the copies apart")
	}
}

// A copy that meets an object of the same name in the target fails, leaves
// that object alone, and takes back what it made (the record included).
func TestCopyToLeavesWhatIsInTheWayAlone(t *testing.T) {
	ctx := context.Background()
	src, c := newStore(t)
	if err := src.CreateApp(ctx, &App{Name: "shop", Namespace: src.Namespace, Release: 1, LastRelease: 1}); err != nil {
		t.Fatal(err)
	}
	if err := src.CreateRelease(ctx, &Release{App: "shop", Version: 1, Image: "shop:1", Status: StatusDeployed}, ConfigMap{"A": "1"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"shop-a", "shop-z"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: src.Namespace, Labels: kube.AppLabels("shop")}}
		if _, err := c.CoreV1().Secrets(src.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-z", Namespace: "there", Labels: kube.AppLabels("shop")}, Data: map[string][]byte{"k": []byte("theirs")}}
	dc := fake.NewClientset(theirs)
	dst := &Store{Client: dc, Namespace: "there"}
	if _, err := src.CopyTo(ctx, dst, "shop", &Move{Role: MoveTarget, From: "b", To: "a"}); err == nil || !strings.Contains(err.Error(), "left alone") {
		t.Fatalf("CopyTo over a foreign Secret: %v", err)
	}
	secs, _ := dc.CoreV1().Secrets("there").List(ctx, metav1.ListOptions{})
	if len(secs.Items) != 1 || secs.Items[0].Name != "shop-z" || string(secs.Items[0].Data["k"]) != "theirs" {
		t.Errorf("target Secrets after a failed copy: %+v", secs.Items)
	}
	if cms, _ := dc.CoreV1().ConfigMaps("there").List(ctx, metav1.ListOptions{}); len(cms.Items) != 0 {
		t.Errorf("a failed copy left %d ConfigMaps", len(cms.Items))
	}
}

func TestLocateCopy(t *testing.T) {
	for _, c := range []struct {
		move *Move
		want cluster.MoveMark
	}{
		{nil, cluster.MoveNone},
		{&Move{Role: MoveSource, Pool: "pa"}, cluster.MoveNone},
		{&Move{Role: MoveSource, Pool: "pa", Superseded: true}, cluster.MoveSuperseded},
		{&Move{Role: MoveTarget, Pool: "pa"}, cluster.MoveTarget},
	} {
		cp := (&App{Name: "shop", Pool: "pb", Move: c.move}).LocateCopy("ns")
		if !cp.Found || cp.Namespace != "ns" || cp.Pool != "pb" || cp.Move != c.want {
			t.Errorf("move %+v: %+v, want mark %v", c.move, cp, c.want)
		}
		if (c.move != nil) != (cp.Describe != "") || (c.move != nil && cp.MovePool != "pa") {
			t.Errorf("move %+v: describe %q, pool %q", c.move, cp.Describe, cp.MovePool)
		}
	}
}

// A failed copy whose undo cannot delete a Secret it made keeps the marked
// record, so what is left is known and the next move removes it (before,
// the record went and the Secrets, config inside, stayed unknown).
func TestCopyToUndoKeepsTheRecordWhileSomethingIsLeft(t *testing.T) {
	ctx := context.Background()
	src, c := newStore(t)
	if err := src.CreateApp(ctx, &App{Name: "shop", Namespace: src.Namespace, Release: 1, LastRelease: 1}); err != nil {
		t.Fatal(err)
	}
	if err := src.CreateRelease(ctx, &Release{App: "shop", Version: 1, Image: "shop:1", Status: StatusDeployed}, ConfigMap{"A": "1"}); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "zz-shop", Namespace: src.Namespace, Labels: kube.AppLabels("shop")}}
	if _, err := c.CoreV1().Secrets(src.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "zz-shop", Namespace: "there"}}
	dc := fake.NewClientset(theirs)
	dc.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is gone")
	})
	dst := &Store{Client: dc, Namespace: "there"}
	mark := &Move{Role: MoveTarget, From: "b", To: "a"}
	_, err := src.CopyTo(ctx, dst, "shop", mark)
	var left *CopyLeftError
	if !errors.As(err, &left) || !strings.Contains(err.Error(), "Secret "+ReleaseSecretName("shop", 1)) {
		t.Fatalf("CopyTo = %v; want a CopyLeftError naming the release Secret", err)
	}
	a, err := dst.GetApp(ctx, "shop")
	if err != nil || a.Move == nil || !a.Move.SameMove(mark) {
		t.Fatalf("the marked record is gone while its Secrets stay: %+v %v", a, err)
	}
}
