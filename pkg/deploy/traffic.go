package deploy

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
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
	kindMaintenance = "maintenance"
	// labelUnroutable is required by the Service's selector while an app is
	// not routable; no pod has it, so the Service has no endpoints.
	labelUnroutable = "tug.dev/unroutable"
)

// maintenanceImage is the page's image for the app: the one recorded when
// maintenance was turned on (Deps.MaintenanceImage), else the default.
func maintenanceImage(a *app.App) string {
	if a.MaintenanceImage != "" {
		return a.MaintenanceImage
	}
	return MaintenanceImage
}

func renderService(a *app.App) *corev1.Service {
	selector := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelProcess: app.WebProcess}
	switch {
	case a.Unroutable:
		selector[labelUnroutable] = "true"
	case a.Maintenance:
		selector = map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelKind: kindMaintenance}
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

// AllowAnnotations are ingress-nginx's own source filters: behind an
// ingress the units see the controller's address, so the filter must
// happen there. ingress-nginx reads whitelist- (older) or allowlist-
// (newer) source-range. Only Ingresses of a cluster whose router is
// ingress-nginx (clustersettings.Router) get them.
var AllowAnnotations = []string{"nginx.ingress.kubernetes.io/whitelist-source-range", "nginx.ingress.kubernetes.io/allowlist-source-range"}

// renderIngresses route the app's domains to its Service; hosts with a
// certificate get TLS. Through a Gateway (a.Route), only the domains
// throughIngress names are the Ingresses'. One Ingress carries one
// IngressClass, so domains of other classes (domain add --ingress-class)
// get an Ingress of their own: APP for the default class, APP-CLASS for
// the others.
func renderIngresses(a *app.App) []*networkingv1.Ingress {
	var def string // the class of domains that name none
	gateway := false
	if r := a.Route; r != nil {
		def, gateway = r.IngressClass, r.Gateway != ""
	}
	byClass := map[string][]app.Domain{}
	var classes []string
	for _, d := range a.Domains {
		if gateway && !route.ThroughIngress(d) {
			continue
		}
		class := d.IngressClass
		if class == "" {
			class = def
		}
		if _, ok := byClass[class]; !ok {
			classes = append(classes, class)
		}
		byClass[class] = append(byClass[class], d)
	}
	sort.Strings(classes)
	var out []*networkingv1.Ingress
	for _, class := range classes {
		name := ServiceName(a.Name)
		if class != def {
			name = IngressName(a.Name, class)
		}
		out = append(out, renderIngress(a, name, class, class == def, byClass[class]))
	}
	return out
}

// IngressName is the Ingress of an app's domains of IngressClass class,
// when that is not the cluster's default.
func IngressName(appName, class string) string {
	return appName + "-" + strings.ReplaceAll(class, ".", "-")
}

// renderIngress is one Ingress of the app's domains of IngressClass class;
// routerClass says it is the class of the router the cluster settings name
// (the default class), whose controller enforces the allow list.
func renderIngress(a *app.App, name, class string, routerClass bool, domains []app.Domain) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: processLabels(a.Name, app.WebProcess)},
	}
	if class != "" {
		ing.Spec.IngressClassName = new(class)
	}
	if len(a.Allow) > 0 && routerClass {
		switch route.Router(a) {
		case clustersettings.RouterTraefik:
			ing.Annotations = map[string]string{route.TraefikMiddlewareAnnotation: route.TraefikMiddlewareRef(a)}
		case clustersettings.RouterIngressNginx:
			ing.Annotations = map[string]string{}
			for _, k := range AllowAnnotations {
				ing.Annotations[k] = strings.Join(a.Allow, ",")
			}
		}
	}
	pathType := networkingv1.PathTypePrefix
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
		Name: ServiceName(a.Name), Port: networkingv1.ServiceBackendPort{Name: "http"},
	}}
	rules := map[string]int{} // host -> index in ing.Spec.Rules
	tls := map[string]bool{}
	for _, d := range domains {
		path := d.Path
		if path == "" {
			path = "/"
		}
		i, ok := rules[d.Host]
		if !ok {
			i = len(ing.Spec.Rules)
			rules[d.Host] = i
			ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: d.Host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}})
		}
		http := ing.Spec.Rules[i].HTTP
		http.Paths = append(http.Paths, networkingv1.HTTPIngressPath{Path: path, PathType: &pathType, Backend: backend})
		if d.TLSSecret != "" && !tls[d.Host] {
			tls[d.Host] = true
			ing.Spec.TLS = append(ing.Spec.TLS, networkingv1.IngressTLS{Hosts: []string{d.Host}, SecretName: d.TLSSecret})
		}
	}
	return ing
}

// renderNetworkPolicy admits traffic to the web units only from the allowed
// CIDRs (Deis's whitelist). Enforcement is the network plugin's job.
func renderNetworkPolicy(a *app.App) *networkingv1.NetworkPolicy {
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

// renderAllowMiddleware is Traefik's ipAllowList Middleware of the app,
// which its HTTPRoutes and Ingresses name when the cluster's router is
// Traefik and the app has an allow list (pkg/route, allow.go): nil
// otherwise. It filters on the connection's source address; no ipStrategy,
// so an X-Forwarded-For header, which any client can send, is not trusted.
func renderAllowMiddleware(a *app.App) *unstructured.Unstructured {
	if len(a.Allow) == 0 || route.Router(a) != clustersettings.RouterTraefik {
		return nil
	}
	ranges := make([]any, len(a.Allow))
	for i, c := range a.Allow {
		ranges[i] = c
	}
	labels := map[string]any{}
	for k, v := range processLabels(a.Name, app.WebProcess) {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": route.Middlewares.GroupVersion().String(),
		"kind":       "Middleware",
		"metadata":   map[string]any{"name": route.AllowMiddlewareName(a.Name), "namespace": a.Namespace, "labels": labels},
		"spec":       map[string]any{"ipAllowList": map[string]any{"sourceRange": ranges}},
	}}
}

// unenforced names the routed objects of objs (HTTPRoutes, Ingresses)
// whose router does not enforce the app's allow list: none when the app
// has no list (no NetworkPolicy). Through them the units see the router's
// address, so only the NetworkPolicy filters, and only direct traffic.
func unenforced(objs Objects) []string {
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
		if ing.Annotations[route.TraefikMiddlewareAnnotation] == "" && ing.Annotations[AllowAnnotations[0]] == "" {
			out = append(out, "Ingress "+ing.Name)
		}
	}
	return out
}

// warnUnenforced tells the user, through d.Warn, that the app's allow list
// is not enforced at the router for objs' routed objects.
func warnUnenforced(d Deps, objs Objects) {
	names := unenforced(objs)
	if len(names) == 0 || d.Warn == nil {
		return
	}
	appName := objs.NetworkPolicy.Labels[kube.LabelApp]
	d.Warn(fmt.Sprintf("app %q: the allow list is not enforced at the router for %s, only by the NetworkPolicy, for traffic straight to the units; tug enforces it at a router the cluster settings name (key router: traefik or ingress-nginx; docs/guide.md, \"Traffic\")",
		appName, strings.Join(names, ", ")))
}

// renderMaintenance is the small backend the Service switches to while the
// app is in maintenance: it answers every request with a 503 page.
func renderMaintenance(a *app.App) *appsv1.Deployment {
	if !a.Maintenance {
		return nil
	}
	labels := kube.AppLabels(a.Name)
	labels[kube.LabelKind] = kindMaintenance
	selector := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelKind: kindMaintenance}
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
						Name:            kindMaintenance,
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

// hostSlug makes a host name fit in an object name: "*.example.com" -> "wildcard-example-com".
func hostSlug(host string) string {
	return strings.ReplaceAll(strings.ReplaceAll(host, "*", "wildcard"), ".", "-")
}

// TLSSecretName is the kubernetes.io/tls Secret holding a host's certificate.
func TLSSecretName(appName, host string) string { return appName + "-tls-" + hostSlug(host) }
