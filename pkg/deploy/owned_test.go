package deploy

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// Every kind a release applies goes through one ownership check: an object
// of the release's name that is not the app's stops the rollout before any
// write, with an error naming it, and stays as it was.
func TestRollRefusesObjectsThatAreNotTugs(t *testing.T) {
	foreign := metav1.ObjectMeta{Namespace: ns, Labels: map[string]string{"app.kubernetes.io/managed-by": "helm"}}
	named := func(name string) metav1.ObjectMeta { m := *foreign.DeepCopy(); m.Name = name; return m }
	otherApp := named("shop")
	otherApp.Labels = kube.AppLabels("blog") // tug's, but another app's
	for _, tc := range []struct {
		kind, name string
		obj        runtime.Object
	}{
		{"Deployment", "shop-web", &appsv1.Deployment{ObjectMeta: named("shop-web")}},
		{"Deployment", "shop-worker", &appsv1.Deployment{ObjectMeta: named("shop-worker")}},
		{"Service", "shop", &corev1.Service{ObjectMeta: named("shop")}},
		{"Service", "shop", &corev1.Service{ObjectMeta: otherApp}},
		{"Ingress", "shop", &networkingv1.Ingress{ObjectMeta: named("shop")}},
		{"NetworkPolicy", render.NetworkPolicyName("shop"), &networkingv1.NetworkPolicy{ObjectMeta: named(render.NetworkPolicyName("shop"))}},
		{"HorizontalPodAutoscaler", "shop-worker", &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: named("shop-worker")}},
	} {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			c, s := newFake(tc.obj)
			seedApp(t, s, &app.App{Name: "shop",
				Domains:   []app.Domain{{Host: "shop.example.com"}},
				Allow:     []string{"10.0.0.0/8"},
				Processes: map[string]app.Process{"worker": {Autoscale: &app.Autoscale{Min: 1, Max: 3, CPUPercent: 80}}},
			})
			c.ClearActions()
			_, err := Roll(context.Background(), deps(c), "shop", DeployChange("shop:1", map[string]string{"web": "", "worker": "./w"}, ""), Options{NoWait: true})
			var notOurs *kube.NotOwnedError
			if !errors.As(err, &notOurs) || notOurs.Kind != tc.kind || notOurs.Name != tc.name {
				t.Fatalf("Roll = %v, want a NotOwnedError for %s %s", err, tc.kind, tc.name)
			}
			if !strings.Contains(err.Error(), tc.kind+` "`+tc.name+`"`) {
				t.Errorf("error %q does not name the object", err)
			}
			for _, a := range c.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok {
					t.Errorf("refused rollout applied %s %s", p.GetResource().Resource, p.GetName())
				}
			}
			m, err := metaOf(c, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if m.GetLabels()[kube.LabelApp] != tc.obj.(metav1.Object).GetLabels()[kube.LabelApp] || m.GetLabels()[kube.LabelManagedBy] != tc.obj.(metav1.Object).GetLabels()[kube.LabelManagedBy] {
				t.Errorf("the object was relabelled: %v", m.GetLabels())
			}
		})
	}
}

func metaOf(c interface {
	Tracker() k8stesting.ObjectTracker
}, obj runtime.Object) (metav1.Object, error) {
	o := obj.(metav1.Object)
	var got runtime.Object
	var err error
	switch obj.(type) {
	case *appsv1.Deployment:
		got, err = c.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), o.GetNamespace(), o.GetName())
	case *corev1.Service:
		got, err = c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("services"), o.GetNamespace(), o.GetName())
	case *networkingv1.Ingress:
		got, err = c.Tracker().Get(networkingv1.SchemeGroupVersion.WithResource("ingresses"), o.GetNamespace(), o.GetName())
	case *networkingv1.NetworkPolicy:
		got, err = c.Tracker().Get(networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), o.GetNamespace(), o.GetName())
	case *autoscalingv2.HorizontalPodAutoscaler:
		got, err = c.Tracker().Get(autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), o.GetNamespace(), o.GetName())
	}
	if err != nil {
		return nil, err
	}
	return got.(metav1.Object), nil
}

// A traffic change is checked as changed: a domain that needs an Ingress
// where one that is not tug's stands is refused before any write (the check
// once ran on the record before the change, which had no Ingress, and the
// apply took the foreign one over).
func TestConfigureRefusesObjectsTheChangeWouldTakeOver(t *testing.T) {
	theirs := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: map[string]string{"team": "ops"}}}
	c, s := newFake(theirs)
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(context.Background(), deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()
	_, err := Configure(context.Background(), deps(c), "shop", func(a *app.App) error {
		a.Domains = append(a.Domains, app.Domain{Host: "shop.example.com"})
		return nil
	}, Options{NoWait: true})
	var notOurs *kube.NotOwnedError
	if !errors.As(err, &notOurs) || notOurs.Kind != "Ingress" {
		t.Fatalf("Configure = %v, want a NotOwnedError for the Ingress", err)
	}
	for _, a := range c.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			t.Errorf("refused change applied %s %s", p.GetResource().Resource, p.GetName())
		}
	}
	if got := getApp(t, s, "shop"); len(got.Domains) != 0 {
		t.Errorf("the record took the domain: %+v", got.Domains)
	}
}
