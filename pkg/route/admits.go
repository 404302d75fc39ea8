package route

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// Which listeners of a Gateway take an app's HTTPRoute: the rules of the
// Gateway API's allowedRoutes, read once here for the route's discovery
// (discover.go) and for doctor's gateway check.

// Listener is one listener of a Gateway, as a route sees it.
type Listener struct {
	Name     string
	Protocol string
	Hostname string // "" for any host
}

// Admitting are the listeners of Gateway u that take an HTTPRoute from
// namespace, whose labels are nsLabels; all describes every listener's
// allowedRoutes, for a message when none does.
func Admitting(u *unstructured.Unstructured, namespace string, nsLabels map[string]string) (admitting []Listener, all []string) {
	listeners, _, _ := unstructured.NestedSlice(u.Object, "spec", "listeners")
	for _, l := range listeners {
		m, _ := l.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		host, _, _ := unstructured.NestedString(m, "hostname")
		proto, _, _ := unstructured.NestedString(m, "protocol")
		from, _, _ := unstructured.NestedString(m, "allowedRoutes", "namespaces", "from")
		if from == "" {
			from = "Same" // the API's default
		}
		kindOK := takesHTTPRoutes(m, proto)
		nsOK := false
		switch from {
		case "All":
			nsOK = true
		case "Same":
			nsOK = namespace == u.GetNamespace()
		case "Selector":
			nsOK = selects(m, nsLabels)
		}
		desc := fmt.Sprintf("%s: from %s", name, from)
		if from == "Same" {
			desc += " (" + u.GetNamespace() + " only)"
		}
		if !kindOK {
			desc += ", no HTTPRoute"
		}
		all = append(all, desc)
		if kindOK && nsOK {
			admitting = append(admitting, Listener{Name: name, Protocol: proto, Hostname: host})
		}
	}
	return admitting, all
}

// SelectsByLabel says whether a listener of Gateway u admits namespaces by
// a label selector: only then do its namespace's labels matter.
func SelectsByLabel(u *unstructured.Unstructured) bool {
	listeners, _, _ := unstructured.NestedSlice(u.Object, "spec", "listeners")
	for _, l := range listeners {
		m, _ := l.(map[string]any)
		if from, _, _ := unstructured.NestedString(m, "allowedRoutes", "namespaces", "from"); from == "Selector" {
			return true
		}
	}
	return false
}

// NamespaceLabels reads namespace's labels for a listener's selector. A
// user who may not read namespaces (the developer Role is namespaced) gets
// the one label every namespace carries, kubernetes.io/metadata.name, and
// ok false: a selector on any other label then does not match.
func NamespaceLabels(ctx context.Context, client kubernetes.Interface, namespace string) (nsLabels map[string]string, ok bool) {
	if client != nil {
		if ns, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err == nil {
			return ns.Labels, true
		}
	}
	return map[string]string{corev1.LabelMetadataName: namespace}, false
}

// takesHTTPRoutes: a listener's allowedRoutes.kinds names HTTPRoute, or
// names no kind and its protocol is HTTP or HTTPS (whose default kinds
// include HTTPRoute).
func takesHTTPRoutes(m map[string]any, proto string) bool {
	kinds, found, _ := unstructured.NestedSlice(m, "allowedRoutes", "kinds")
	if !found || len(kinds) == 0 {
		return proto == "HTTP" || proto == "HTTPS"
	}
	for _, k := range kinds {
		km, _ := k.(map[string]any)
		kind, _, _ := unstructured.NestedString(km, "kind")
		group, found, _ := unstructured.NestedString(km, "group")
		if kind == "HTTPRoute" && (!found || group == HTTPRoutes.Group) {
			return true
		}
	}
	return false
}

// selects applies a listener's namespace selector to the namespace's
// labels.
func selects(m map[string]any, nsLabels map[string]string) bool {
	raw, found, _ := unstructured.NestedMap(m, "allowedRoutes", "namespaces", "selector")
	if !found {
		return false
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(nsLabels))
}
