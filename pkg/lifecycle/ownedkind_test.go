package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/doctor"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/route"
)

// widgets is a kind no tug feature has: the test's.
var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widgetKind is its one declaration, as a feature would add it to
// deploy.Kinds.
func widgetKind() *owned.Kind {
	return &owned.Kind{Kind: "Widget", Noun: "widget", Plural: "widgets", GVR: widgets, Namespaced: true, Optional: true}
}

// renderWidget is its rendering for app a.
func renderWidget(a *app.App, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(widgets.GroupVersion().String())
	u.SetKind("Widget")
	u.SetName(a.Name + "-widget")
	u.SetNamespace(ns)
	u.SetLabels(labels)
	return u
}

// widgetDynamic is a fake dynamic client that serves widgets (and the
// routed kinds) and server-side-applies widgets by creating or replacing.
func widgetDynamic(t *testing.T) *dynamicfake.FakeDynamicClient {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgets: "WidgetList", route.HTTPRoutes: "HTTPRouteList", route.Certificates: "CertificateList", route.Middlewares: "MiddlewareList",
	})
	dyn.PrependReactor("patch", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(p.GetPatch(), &u.Object); err != nil {
			return true, nil, err
		}
		tr := dyn.Tracker()
		if _, err := tr.Get(widgets, p.GetNamespace(), p.GetName()); err == nil {
			return true, u, tr.Update(widgets, u, p.GetNamespace())
		}
		return true, u, tr.Create(widgets, u, p.GetNamespace())
	})
	return dyn
}

func widgetNames(t *testing.T, dyn *dynamicfake.FakeDynamicClient) []string {
	t.Helper()
	l, err := dyn.Resource(widgets).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	return out
}

// A kind added to the table (one entry) and rendered for an app is
// guarded, applied, pruned, exported, removed with the app and granted by
// the developer Role, with no other change: every loop is over the table.
func TestAKindAddedToTheTableIsCoveredEverywhere(t *testing.T) {
	ctx := context.Background()
	c, s := removeFixture(t)
	dyn := widgetDynamic(t)
	d := deps(c)
	d.Dynamic = dyn
	d.Kinds = append(deploy.Kinds(), widgetKind())
	oc := owned.Clients{Typed: c, Dynamic: dyn, Namespace: ns}
	a, err := s.GetApp(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	a.Processes = map[string]app.Process{"web": {Replicas: 1}}
	r := &app.Release{App: "shop", Version: 1, Image: "shop:1", Processes: map[string]string{"web": "serve"}}
	rendered := render.Release(a, r, nil).List()
	objs := append(slices.Clone(rendered), renderWidget(a, kube.AppLabels(a.Name)))

	// the guard: another tool's widget of that name is never taken over
	theirs := renderWidget(a, map[string]string{"owner": "helm"})
	if _, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var notOwned *kube.NotOwnedError
	if err := owned.Guard(ctx, oc, d.OwnedKinds(), owned.App, objs); !errors.As(err, &notOwned) || notOwned.Kind != "Widget" {
		t.Fatalf("Guard with another tool's widget = %v, want it refused", err)
	}
	if err := dyn.Resource(widgets).Namespace(ns).Delete(ctx, theirs.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := owned.Guard(ctx, oc, d.OwnedKinds(), owned.App, objs); err != nil {
		t.Fatalf("Guard: %v", err)
	}

	// apply, then prune: a rendering without it prunes it, and only it
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true)}
	var order []string
	err = owned.Apply(ctx, oc, d.OwnedKinds(), objs, opts, func(k *owned.Kind, _ runtime.Object) error {
		order = append(order, k.Kind)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := widgetNames(t, dyn); !slices.Equal(got, []string{"shop-widget"}) || order[len(order)-1] != "Widget" {
		t.Fatalf("after apply: widgets %v, applied in order %v", got, order)
	}
	if err := owned.Prune(ctx, oc, d.OwnedKinds(), owned.App, "shop", rendered); err != nil {
		t.Fatal(err)
	}
	if got := widgetNames(t, dyn); len(got) != 0 {
		t.Errorf("after prune: widgets %v, want none", got)
	}
	if _, err := c.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{}); err != nil {
		t.Errorf("prune took what is still rendered: %v", err)
	}

	// export: in the manifests, without its namespace
	out, err := exportObjects(d.OwnedKinds(), objs, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out, func(o any) bool {
		m, ok := o.(map[string]any)
		return ok && m["kind"] == "Widget" && m["metadata"].(map[string]any)["namespace"] == nil
	}) {
		t.Errorf("export %v has no widget without a namespace", out)
	}

	// removal of the app: applied again, then removed with the rest
	if err := owned.Apply(ctx, oc, d.OwnedKinds(), objs, opts, nil); err != nil {
		t.Fatal(err)
	}
	if err := RemoveHeld(ctx, d, "shop", RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := widgetNames(t, dyn); len(got) != 0 {
		t.Errorf("after app remove: widgets %v, want none", got)
	}
	if _, err := s.GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("the app's record after remove: %v", err)
	}

	// the developer Role grants what the loops do to it
	role := doctor.RoleFor("tug-developer", ns, d.OwnedKinds())
	var verbs []string
	for _, rule := range role.Rules {
		if slices.Contains(rule.APIGroups, "example.com") && slices.Contains(rule.Resources, "widgets") {
			verbs = append(verbs, rule.Verbs...)
		}
	}
	for _, v := range []string{"get", "list", "create", "patch", "delete"} {
		if !slices.Contains(verbs, v) {
			t.Errorf("the Role does not grant %s on widgets (grants %v)", v, verbs)
		}
	}
}
