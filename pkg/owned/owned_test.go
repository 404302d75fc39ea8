package owned_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
)

const ns = "dev"

// A table of two typed kinds: ConfigMaps (applied first) and Secrets.
func table() owned.Table {
	return owned.Table{
		{Kind: "ConfigMap", Noun: "config map", Plural: "config maps", GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespaced: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*corev1.ConfigMap, *corev1.ConfigMapList] {
				return c.CoreV1().ConfigMaps(ns)
			})},
		{Kind: "Secret", Noun: "secret", Plural: "secrets", GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Namespaced: true, Optional: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*corev1.Secret, *corev1.SecretList] {
				return c.CoreV1().Secrets(ns)
			})},
	}
}

func cm(name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
}

func secret(name string, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
}

// Apply writes in the table's order whatever the rendering's order, and
// names an object of a kind the table does not declare.
func TestApplyInTheTablesOrder(t *testing.T) {
	c := fake.NewClientset()
	oc := owned.Clients{Typed: c, Namespace: ns}
	objs := []owned.Object{secret("s", kube.AppLabels("shop")), cm("a", kube.AppLabels("shop")), cm("b", kube.AppLabels("shop"))}
	var order []string
	err := owned.Apply(context.Background(), oc, table(), objs, metav1.PatchOptions{FieldManager: "tug"}, func(k *owned.Kind, got runtime.Object) error {
		m, _ := got.(metav1.Object)
		order = append(order, k.Kind+"/"+m.GetName())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ConfigMap/a", "ConfigMap/b", "Secret/s"}; !slices.Equal(order, want) {
		t.Errorf("applied %v, want %v", order, want)
	}
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if err := owned.Apply(context.Background(), oc, table(), []owned.Object{pod}, metav1.PatchOptions{}, nil); err == nil || !strings.Contains(err.Error(), "Pod p: not a kind tug declares") {
		t.Errorf("an undeclared kind: %v", err)
	}
}

// Prune deletes only the owner's objects the rendering no longer holds;
// an Optional kind the user may not list has none while nothing of it is
// kept, and the refusal is the error once something is.
func TestPruneDeletesOnlyTheOwnersStale(t *testing.T) {
	c := fake.NewClientset(
		cm("keep", kube.AppLabels("shop")), cm("stale", kube.AppLabels("shop")),
		cm("theirs", map[string]string{kube.LabelApp: "shop"}), cm("blog", kube.AppLabels("blog")),
	)
	oc := owned.Clients{Typed: c, Namespace: ns}
	ctx := context.Background()
	if err := owned.Prune(ctx, oc, table(), owned.App, "shop", []owned.Object{cm("keep", nil)}); err != nil {
		t.Fatal(err)
	}
	l, _ := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	var left []string
	for _, o := range l.Items {
		left = append(left, o.Name)
	}
	slices.Sort(left)
	if want := []string{"blog", "keep", "theirs"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	c.PrependReactor("list", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("no"))
	})
	if err := owned.Prune(ctx, oc, table(), owned.App, "shop", nil); err != nil {
		t.Errorf("forbidden with nothing kept: %v", err)
	}
	if err := owned.Prune(ctx, oc, table(), owned.App, "shop", []owned.Object{secret("s", nil)}); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden with a secret kept: %v", err)
	}
}

// The guard refuses another tool's object, naming the owner's label: a
// second kind of owner reads its own.
func TestGuardNamesTheOwnersLabel(t *testing.T) {
	service := owned.Owner{Label: "tug.dev/service"}
	c := fake.NewClientset(cm("db", map[string]string{"owner": "helm"}))
	oc := owned.Clients{Typed: c, Namespace: ns}
	mine := map[string]string{kube.LabelManagedBy: kube.ManagedBy, "tug.dev/service": "db"}
	err := owned.Guard(context.Background(), oc, table(), service, []owned.Object{cm("db", mine)})
	var notOwned *kube.NotOwnedError
	if !errors.As(err, &notOwned) || !strings.Contains(err.Error(), "tug.dev/service=db") {
		t.Fatalf("Guard = %v, want it refused naming tug.dev/service", err)
	}
	if err := owned.Guard(context.Background(), oc, table(), service, []owned.Object{cm("cache", mine)}); err != nil {
		t.Errorf("nothing in the way: %v", err)
	}
	if got := service.Selector("db"); got != "app.kubernetes.io/managed-by=tug,tug.dev/service=db" {
		t.Errorf("Selector = %q", got)
	}
}

func TestTableHelpers(t *testing.T) {
	tb := table()
	if r := tb.Reversed(); r[0].Kind != "Secret" || r[1].Kind != "ConfigMap" {
		t.Errorf("Reversed = %v, %v", r[0].Kind, r[1].Kind)
	}
	if o := tb.Only("Secret"); len(o) != 1 || o[0].Kind != "Secret" {
		t.Errorf("Only = %v", o)
	}
	if n := tb[0].ResourceName(); n != "configmaps" {
		t.Errorf("ResourceName = %q", n)
	}
	if tb[0].Resource(owned.Clients{}) != nil {
		t.Error("a typed kind without a clientset has a client")
	}
}

// A kind through the dynamic client: without a client an apply says so,
// a guard and a prune find nothing; a cluster that does not serve it
// refuses an apply with the kind's own words; one that does takes it.
func TestDynamicKind(t *testing.T) {
	gizmos := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}
	k := &owned.Kind{Kind: "Gizmo", Noun: "gizmo", Plural: "gizmos", GVR: gizmos, Namespaced: true, Optional: true,
		Unserved: "this cluster does not serve gizmos"}
	tb := owned.Table{k}
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("example.com/v1")
	g.SetKind("Gizmo")
	g.SetName("shop-gizmo")
	g.SetLabels(kube.AppLabels("shop"))
	ctx := context.Background()
	none := owned.Clients{Namespace: ns}
	if err := owned.Apply(ctx, none, tb, []owned.Object{g}, metav1.PatchOptions{}, nil); err == nil || !strings.Contains(err.Error(), "applying gizmo shop-gizmo: no client for example.com") {
		t.Errorf("without a client: %v", err)
	}
	if err := owned.Guard(ctx, none, tb, owned.App, []owned.Object{g}); err != nil {
		t.Errorf("guard without a client: %v", err)
	}
	if err := owned.Prune(ctx, none, tb, owned.App, "shop", nil); err != nil {
		t.Errorf("prune without a client: %v", err)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gizmos: "GizmoList"})
	dyn.PrependReactor("patch", "gizmos", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(gizmos.GroupResource(), "shop-gizmo")
	})
	oc := owned.Clients{Dynamic: dyn, Namespace: ns}
	if err := owned.Apply(ctx, oc, tb, []owned.Object{g}, metav1.PatchOptions{}, nil); err == nil || !strings.Contains(err.Error(), "this cluster does not serve gizmos") {
		t.Errorf("unserved: %v", err)
	}
	stale := g.DeepCopy()
	stale.SetName("shop-old")
	stale.SetNamespace(ns)
	if _, err := dyn.Resource(gizmos).Namespace(ns).Create(ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := owned.Guard(ctx, oc, tb, owned.App, []owned.Object{stale}); err != nil {
		t.Errorf("guard of the owner's own: %v", err)
	}
	if err := owned.Prune(ctx, oc, tb, owned.App, "shop", []owned.Object{g}); err != nil {
		t.Fatal(err)
	}
	if l, _ := dyn.Resource(gizmos).Namespace(ns).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("left %d gizmos, want the stale one pruned", len(l.Items))
	}
}
