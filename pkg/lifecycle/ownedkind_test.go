package lifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/doctor"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/kube/kubetest"
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
	dyn.PrependReactor("patch", "widgets", kubetest.Applies(dyn, nil))
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
// guarded, applied and pruned by deploy.Roll, exported, removed with the
// app and granted by the developer Role, with no other change: every loop
// is over the table (deploy.Deps.Kinds), and the kind's rendering comes
// through Deps.Render.
func TestAKindAddedToTheTableIsCoveredEverywhere(t *testing.T) {
	ctx := context.Background()
	c, s := removeFixture(t)
	dyn := widgetDynamic(t)
	d := deps(c)
	d.Dynamic = dyn
	d.Kinds = append(deploy.Kinds(), widgetKind())
	withWidget := true
	d.Render = func(a *app.App, r *app.Release, config app.ConfigMap) render.Objects {
		objs := render.Release(a, r, config)
		if withWidget {
			objs.Extra = append(objs.Extra, renderWidget(a, kube.AppLabels(a.Name)))
		}
		return objs
	}
	deployShop := func(image string) error {
		change := deploy.DeployChange(image, map[string]string{"web": "serve"}, "")
		_, err := deploy.Roll(ctx, d, "shop", change, deploy.Options{NoWait: true})
		return err
	}

	// the guard: another tool's widget of that name is never taken over
	theirs := renderWidget(&app.App{Name: "shop"}, map[string]string{"owner": "helm"})
	if _, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var notOwned *kube.NotOwnedError
	if err := deployShop("shop:2"); !errors.As(err, &notOwned) || notOwned.Kind != "Widget" {
		t.Fatalf("deploy with another tool's widget = %v, want it refused", err)
	}
	if err := dyn.Resource(widgets).Namespace(ns).Delete(ctx, theirs.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// a deploy applies it
	if err := deployShop("shop:2"); err != nil {
		t.Fatal(err)
	}
	if got := widgetNames(t, dyn); !slices.Equal(got, []string{"shop-widget"}) {
		t.Fatalf("after deploy: widgets %v, want shop-widget", got)
	}

	// export: in the manifests, without its namespace
	e, err := Export(ctx, d, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(e.Objects, func(o any) bool {
		m, ok := o.(map[string]any)
		return ok && m["kind"] == "Widget" && m["metadata"].(map[string]any)["namespace"] == nil
	}) {
		t.Errorf("export %v has no widget without a namespace", e.Objects)
	}

	// a deploy whose rendering drops it prunes it, and only it
	withWidget = false
	if err := deployShop("shop:3"); err != nil {
		t.Fatal(err)
	}
	if got := widgetNames(t, dyn); len(got) != 0 {
		t.Errorf("after a deploy without it: widgets %v, want none", got)
	}
	if _, err := c.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{}); err != nil {
		t.Errorf("prune took what is still rendered: %v", err)
	}

	// removal of the app: deployed again, then removed with the rest
	withWidget = true
	if err := deployShop("shop:4"); err != nil {
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
