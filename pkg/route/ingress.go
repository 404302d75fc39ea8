package route

import (
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
)

// Domains that do not go through a Gateway (every domain of an app routed
// without one, and those ThroughIngress names) are rules of Ingresses.

// AllowAnnotations are ingress-nginx's own source filters: behind an
// ingress the units see the controller's address, so the filter must
// happen there. ingress-nginx reads whitelist- (older) or allowlist-
// (newer) source-range. Only Ingresses of a cluster whose router is
// ingress-nginx (clustersettings.Router) get them.
var AllowAnnotations = []string{"nginx.ingress.kubernetes.io/whitelist-source-range", "nginx.ingress.kubernetes.io/allowlist-source-range"}

// RenderIngresses route the app's domains to Service backend, each Ingress
// with labels; hosts with a certificate get TLS. Through a Gateway (a.Route), only the domains
// throughIngress names are the Ingresses'. One Ingress carries one
// IngressClass, so domains of other classes (domain add --ingress-class)
// get an Ingress of their own: APP for the default class, APP-CLASS for
// the others.
func RenderIngresses(a *app.App, backend string, labels map[string]string) []*networkingv1.Ingress {
	var def string // the class of domains that name none
	gateway := false
	if r := a.Route; r != nil {
		def, gateway = r.IngressClass, r.Gateway != ""
	}
	byClass := map[string][]app.Domain{}
	var classes []string
	for _, d := range a.Domains {
		if gateway && !ThroughIngress(d) {
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
		name := backend
		if class != def {
			name = IngressName(a.Name, class)
		}
		out = append(out, renderIngress(a, ingressShape{name, class, backend, labels, class == def}, byClass[class]))
	}
	return out
}

// IngressName is the Ingress of an app's domains of IngressClass class,
// when that is not the cluster's default.
func IngressName(appName, class string) string {
	return appName + "-" + strings.ReplaceAll(class, ".", "-")
}

// ingressShape is what one Ingress of the app is: its name, IngressClass,
// backend Service and labels; routerClass says its class is the one of the
// router the cluster settings name (the default class), whose controller
// enforces the allow list.
type ingressShape struct {
	name, class, backend string
	labels               map[string]string
	routerClass          bool
}

// renderIngress is one Ingress of the app's domains of one IngressClass.
func renderIngress(a *app.App, s ingressShape, domains []app.Domain) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: a.Namespace, Labels: s.labels},
	}
	if s.class != "" {
		ing.Spec.IngressClassName = new(s.class)
	}
	if len(a.Allow) > 0 && s.routerClass {
		switch Router(a) {
		case clustersettings.RouterTraefik:
			ing.Annotations = map[string]string{TraefikMiddlewareAnnotation: TraefikMiddlewareRef(a)}
		case clustersettings.RouterIngressNginx:
			ing.Annotations = map[string]string{}
			for _, k := range AllowAnnotations {
				ing.Annotations[k] = strings.Join(a.Allow, ",")
			}
		}
	}
	pathType := networkingv1.PathTypePrefix
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
		Name: s.backend, Port: networkingv1.ServiceBackendPort{Name: "http"},
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
