package e2e

import (
	"context"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
)

// An Ingress, an HTTPRoute and an autoscaler that kubectl made, named like
// the app's, are not taken over: domain add (through an Ingress), a deploy
// (whose route goes through the cluster's Gateway) and autoscale set
// refuse, naming the object, and it stays as it was (server-side apply with
// force would relabel it).
func TestObjectsThatAreNotTugsBlockAndStay(t *testing.T) {
	h := New(t)
	ctx := context.Background()
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1)
	exposedByHandSurvivesADeploy(t, h)
	theirs := map[string]string{"team": "ops"}
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: theirs},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "ops.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "ops", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		}}}}},
	}
	if _, err := h.Client.NetworkingV1().Ingresses(h.NS).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	minUnits := int32(1)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Labels: theirs},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minUnits, MaxReplicas: 7,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "ops"}},
	}
	if _, err := h.Client.AutoscalingV2().HorizontalPodAutoscalers(h.NS).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// through the Gateway the domain needs no Ingress; one that names the
	// router's IngressClass does
	class := h.routerIngressClass()
	r := h.Tug("domain", "add", "shop", "shop.example.com", "--ingress-class", class)
	if r.Code != 1 || !strings.Contains(r.Stderr, `Ingress "shop"`) || !strings.Contains(r.Stderr, "not tug's") {
		t.Fatalf("domain add over a foreign Ingress: %s", r)
	}
	// an HTTPRoute named like a new app's
	rt := h.localRouter()
	dyn := dynamic.NewForConfigOrDie(h.Config)
	foreign := httpRoute(rt, "blog", "blog-ops.example.com", "ops")
	foreign.SetLabels(theirs)
	if _, err := dyn.Resource(httpRoutes).Namespace(h.NS).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.mustTug("app", "create", "blog")
	if r := h.Tug("app", "deploy", "blog", "--image", sampleV1); r.Code != 1 || !strings.Contains(r.Stderr, `HTTPRoute "blog"`) || !strings.Contains(r.Stderr, "not tug's") {
		t.Fatalf("a deploy over a foreign HTTPRoute: %s", r)
	}
	if gotR, err := dyn.Resource(httpRoutes).Namespace(h.NS).Get(ctx, "blog", metav1.GetOptions{}); err != nil || gotR.GetLabels()["app.kubernetes.io/managed-by"] != "" {
		t.Errorf("the HTTPRoute changed: %v %v", gotR, err)
	}
	if rows := h.releases("blog"); len(rows) != 0 {
		t.Errorf("a refused deploy stored releases: %+v", rows)
	}
	r = h.Tug("app", "autoscale", "set", "shop", "-p", "web", "--min", "1", "--max", "3", "--cpu", "60%")
	if r.Code != 1 || !strings.Contains(r.Stderr, `HorizontalPodAutoscaler "shop-web"`) {
		t.Fatalf("autoscale set over a foreign autoscaler: %s", r)
	}

	got, err := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["app.kubernetes.io/managed-by"] != "" || got.Spec.Rules[0].Host != "ops.example.com" || len(got.Spec.Rules) != 1 {
		t.Errorf("the Ingress changed: labels %v rules %+v", got.Labels, got.Spec.Rules)
	}
	gotH, err := h.Client.AutoscalingV2().HorizontalPodAutoscalers(h.NS).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gotH.Labels["app.kubernetes.io/managed-by"] != "" || gotH.Spec.MaxReplicas != 7 || gotH.Spec.ScaleTargetRef.Name != "ops" {
		t.Errorf("the autoscaler changed: %v %+v", gotH.Labels, gotH.Spec)
	}
	// nothing was recorded either: the domain is not the app's
	if r := h.Tug("domain", "list", "shop", "-o", "json"); r.Code != 0 || strings.Contains(r.Stdout, "shop.example.com") {
		t.Errorf("domain list after the refusal: %s", r)
	}
	// remove leaves them alone
	h.mustTug("app", "remove", "blog", "--yes")
	if _, err := dyn.Resource(httpRoutes).Namespace(h.NS).Get(ctx, "blog", metav1.GetOptions{}); err != nil {
		t.Errorf("app remove deleted the foreign HTTPRoute: %v", err)
	}
	h.mustTug("app", "remove", "shop", "--yes")
	if _, err := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("app remove deleted the foreign Ingress: %v", err)
	}
	if _, err := h.Client.AutoscalingV2().HorizontalPodAutoscalers(h.NS).Get(ctx, "shop-web", metav1.GetOptions{}); err != nil {
		t.Errorf("app remove deleted the foreign autoscaler: %v", err)
	}
}

// exposedByHandSurvivesADeploy: a Service made as 'kubectl expose
// deployment shop-web --name=shop-lb' makes it (the Deployment's labels,
// the app's among them, copied onto it) is not tug's to prune: the next
// deploy keeps it.
func exposedByHandSurvivesADeploy(t *testing.T, h *H) {
	t.Helper()
	ctx := context.Background()
	web, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lb := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-lb", Labels: web.Labels},
		Spec:       corev1.ServiceSpec{Selector: web.Spec.Selector.MatchLabels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := h.Client.CoreV1().Services(h.NS).Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.mustTug("app", "deploy", "shop", "--image", sampleV2)
	if _, err := h.Client.CoreV1().Services(h.NS).Get(ctx, "shop-lb", metav1.GetOptions{}); err != nil {
		t.Errorf("a deploy deleted the Service kubectl expose made: %v", err)
	}
}

// A service account bound to exactly the documented developer Role removes
// an app with a domain, an allow list and an autoscaler, to the end.
func TestAdminRoleRemovesAnApp(t *testing.T) {
	h := New(t)
	ctx := context.Background()
	devConfig := adminRoleKubeconfig(t, h)
	run := func(args ...string) Result {
		t.Helper()
		r := h.TugRun(Run{Args: args, Env: []string{"KUBECONFIG=" + devConfig}})
		if r.Code != 0 {
			t.Fatalf("tug %v as the developer: %s", args, r)
		}
		return r
	}
	run("app", "create", "mine")
	run("app", "deploy", "mine", "--image", sampleV1)
	run("domain", "add", "mine", "mine.example.com")
	run("app", "allow", "add", "mine", "10.0.0.0/8")
	run("app", "autoscale", "set", "mine", "-p", "web", "--min", "1", "--max", "2", "--cpu", "60%")
	run("app", "remove", "mine", "--yes")

	sel := metav1.ListOptions{LabelSelector: "tug.dev/app=mine"}
	left := []string{}
	if l, err := h.Client.AppsV1().Deployments(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "deployments")
	}
	if l, err := h.Client.AutoscalingV2().HorizontalPodAutoscalers(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "autoscalers")
	}
	if l, err := h.Client.NetworkingV1().Ingresses(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "ingresses")
	}
	if l, err := h.Client.NetworkingV1().NetworkPolicies(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "network policies")
	}
	if l, err := h.Client.CoreV1().Services(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "services")
	}
	if l, err := h.Client.CoreV1().Secrets(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "secrets")
	}
	if l, err := h.Client.CoreV1().ConfigMaps(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "configmaps")
	}
	if l, err := h.Client.CoreV1().Pods(h.NS).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "pods")
	}
	if len(left) > 0 {
		t.Fatalf("app remove as the developer left %v", left)
	}
}
