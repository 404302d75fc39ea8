package render

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// How traffic reaches an app (docs/guide.md, "Traffic"): the web process's
// Service (NodePort, port 80 to the units' $PORT) is the one entry point;
// domains are rules of one Ingress per app that sends every host to that
// Service. Routable off and maintenance only change the Service's selector,
// so they work the same with any ingress controller, or none.

// MaintenanceImage serves the maintenance page: a 503 with Retry-After on
// $PORT. TUG_MAINTENANCE_IMAGE overrides it (for a mirror, say); the local
// test cluster imports it under this name.
const MaintenanceImage = "ghcr.io/tug-dev/tug-maintenance:v1"

// MaintenanceName is the Deployment that answers while an app is in maintenance.
func MaintenanceName(appName string) string { return appName + "-maintenance" }

// NetworkPolicyName is the policy that admits only the allowed sources.
func NetworkPolicyName(appName string) string { return appName + "-allow" }

const (
	// KindMaintenance is the tug.dev/kind of the maintenance page's
	// Deployment and pods, which the web Service selects while the app is
	// in maintenance.
	KindMaintenance = "maintenance"
	// labelUnroutable is required by the Service's selector while an app is
	// not routable; no pod has it, so the Service has no endpoints.
	labelUnroutable = "tug.dev/unroutable"
)

// maintenanceImage is the page's image for the app: the one recorded when
// maintenance was turned on (deploy.Deps.MaintenanceImage), else the
// default.
func maintenanceImage(a *app.App) string {
	if a.MaintenanceImage != "" {
		return a.MaintenanceImage
	}
	return MaintenanceImage
}

func service(a *app.App) *corev1.Service {
	selector := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelProcess: app.WebProcess}
	switch {
	case a.Unroutable:
		selector[labelUnroutable] = "true"
	case a.Maintenance:
		selector = map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelKind: KindMaintenance}
	default:
		canarySelector(a, selector)
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(a.Name), Namespace: a.Namespace, Labels: processLabels(a.Name, app.WebProcess)},
		Spec: corev1.ServiceSpec{
			// NodePort: reachable on every node's address too, with or
			// without an ingress controller (tsuru's routable addresses).
			Type:     corev1.ServiceTypeNodePort,
			Selector: selector,
			Ports: []corev1.ServicePort{{
				Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	if len(a.Allow) > 0 {
		// With the default Cluster policy a node port forwards with SNAT,
		// so the units see a node's address, not the client's, and the
		// NetworkPolicy's source filter cannot work. Local keeps the
		// client's address (the cost: a node answers its node port only
		// if it runs a web unit).
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	return svc
}

// networkPolicy admits traffic to the web units only from the allowed
// CIDRs (Deis's whitelist). Enforcement is the network plugin's job.
func networkPolicy(a *app.App) *networkingv1.NetworkPolicy {
	if len(a.Allow) == 0 {
		return nil
	}
	var peers []networkingv1.NetworkPolicyPeer
	for _, cidr := range a.Allow {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName(a.Name), Namespace: a.Namespace, Labels: processLabels(a.Name, app.WebProcess)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelProcess: app.WebProcess}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: peers}},
		},
	}
}

// AllowUnenforced names the routed objects of objs (HTTPRoutes, Ingresses)
// whose router does not enforce the app's allow list: none when the app
// has no list (no NetworkPolicy). Through them the units see the router's
// address, so only the NetworkPolicy filters, and only direct traffic.
func (objs Objects) AllowUnenforced() []string {
	if objs.NetworkPolicy == nil {
		return nil
	}
	var out []string
	for _, r := range objs.Routes {
		if !route.RendersAllowFilter(r) {
			out = append(out, "HTTPRoute "+r.GetName())
		}
	}
	for _, ing := range objs.Ingresses {
		if ing.Annotations[route.TraefikMiddlewareAnnotation] == "" && ing.Annotations[route.AllowAnnotations[0]] == "" {
			out = append(out, "Ingress "+ing.Name)
		}
	}
	return out
}

// Maintenance is the small backend the Service switches to while the app
// is in maintenance: it answers every request with a 503 page. It is nil
// when the app is not in maintenance.
func Maintenance(a *app.App) *appsv1.Deployment {
	if !a.Maintenance {
		return nil
	}
	labels := kube.AppLabels(a.Name)
	labels[kube.LabelKind] = KindMaintenance
	selector := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelKind: KindMaintenance}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: MaintenanceName(a.Name), Namespace: a.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					EnableServiceLinks: new(bool),
					Containers: []corev1.Container{{
						Name:            KindMaintenance,
						Image:           maintenanceImage(a),
						ImagePullPolicy: corev1.PullIfNotPresent,
						Env:             []corev1.EnvVar{{Name: "PORT", Value: "8080"}, {Name: "TUG_APP", Value: a.Name}},
						Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
							PeriodSeconds: 1,
						},
						// maintenance off switches the Service back first; the
						// page keeps answering while kube-proxies catch up
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: WebStopDelaySeconds}}},
					}},
				},
			},
		},
	}
}
