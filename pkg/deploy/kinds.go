package deploy

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/route"
)

// Kinds is the table of the kinds of an app's objects (see pkg/owned), in
// the order a change applies them: an object after those it names (the
// Services before the routes that send to them, a Middleware and the
// Certificates before the Ingresses and routes that name them). Deploy
// applies, guards and prunes by it, app removal and export loop over it,
// and the developer Role grants what it needs on each (pkg/doctor).
// Adding a kind is one entry here plus its rendering (render.Objects.List).
func Kinds() owned.Table {
	return owned.Table{
		{Kind: "Deployment", Noun: "deployment", Plural: "deployments", GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Namespaced: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*appsv1.Deployment, *appsv1.DeploymentList] {
				return c.AppsV1().Deployments(ns)
			}),
			Background: true,
			PodSpec:    func(o owned.Object) *corev1.PodSpec { return &o.(*appsv1.Deployment).Spec.Template.Spec }},
		// the web Service and, during a canary, each side's
		{Kind: "Service", Noun: "service", Plural: "services", GVR: corev1.SchemeGroupVersion.WithResource("services"), Namespaced: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*corev1.Service, *corev1.ServiceList] {
				return c.CoreV1().Services(ns)
			})},
		{Kind: "HorizontalPodAutoscaler", Noun: "autoscaler", Plural: "autoscalers", GVR: autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), Namespaced: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList] {
				return c.AutoscalingV2().HorizontalPodAutoscalers(ns)
			})},
		// cert-manager's, of domains whose certificate comes from an issuer
		{Kind: "Certificate", Noun: "certificate", Plural: "certificates", GVR: route.Certificates, Namespaced: true, Optional: true,
			NoClient: "no client for cert-manager's API",
			Unserved: "this cluster does not serve cert-manager's Certificate resource (cert-manager.io/v1), though the domain takes its certificate from an issuer; ask its admin ('tug cluster settings show')",
			Precheck: func(ctx context.Context, c owned.Clients, objs []owned.Object) error {
				rc := route.Client{Dynamic: c.Dynamic, Namespace: c.Namespace}
				return rc.CertificatesServed(ctx, route.IssuerOf(objs[0].(*unstructured.Unstructured)))
			}},
		// the allow list at a Traefik router
		{Kind: "Middleware", Noun: "middleware", Plural: "middlewares", GVR: route.Middlewares, Namespaced: true, Optional: true,
			NoClient: "no client for Traefik's resources",
			Unserved: "this cluster does not serve Traefik's Middleware resource (middlewares.traefik.io), though its settings say its router is traefik; ask its admin ('tug cluster settings show')"},
		{Kind: "Ingress", Noun: "ingress", Plural: "ingresses", GVR: networkingv1.SchemeGroupVersion.WithResource("ingresses"), Namespaced: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*networkingv1.Ingress, *networkingv1.IngressList] {
				return c.NetworkingV1().Ingresses(ns)
			})},
		{Kind: "NetworkPolicy", Noun: "network policy", Plural: "network policies", GVR: networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), Namespaced: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
				return c.NetworkingV1().NetworkPolicies(ns)
			})},
		// Optional: a Role from before jobs may not list them, and an app
		// without jobs deploys as before
		{Kind: "CronJob", Noun: "cron job", Plural: "jobs", GVR: batchv1.SchemeGroupVersion.WithResource("cronjobs"), Namespaced: true, Optional: true,
			Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*batchv1.CronJob, *batchv1.CronJobList] {
				return c.BatchV1().CronJobs(ns)
			}),
			Selector: kube.LabelKind + "=" + render.KindJob, Background: true,
			PodSpec: func(o owned.Object) *corev1.PodSpec { return &o.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template.Spec }},
		// through the cluster's Gateway; last, once what it sends to exists
		{Kind: "HTTPRoute", Noun: "httproute", Plural: "routes", GVR: route.HTTPRoutes, Namespaced: true, Optional: true,
			NoClient: "no client for the Gateway API",
			Unserved: "this cluster does not serve the Gateway API (no HTTPRoute resource), though its settings name a Gateway; ask its admin ('tug cluster settings show')"},
	}
}

// kept are the Deployments a prune keeps though no release renders them
// (a canary's units: render.Objects.Keep).
func kept(objs render.Objects) []owned.Ref {
	out := make([]owned.Ref, 0, len(objs.Keep))
	for _, name := range objs.Keep {
		out = append(out, owned.Ref{Resource: appsv1.SchemeGroupVersion.WithResource("deployments").GroupResource(), Name: name})
	}
	return out
}
