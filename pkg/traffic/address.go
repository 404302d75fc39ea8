package traffic

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// Address is one place an app answers; its JSON shape is documented in
// docs/output.md.
type Address struct {
	Kind string `json:"kind"` // cluster-ip, dns, node-port, load-balancer, ingress
	URL  string `json:"url"`
	Note string `json:"note,omitempty"`
}

// Addresses lists where an app can be reached (tsuru's routable addresses):
// the Service's cluster IP and in-cluster name, its NodePort on every node's
// address, load-balancer ingress, and the Ingress hosts. Node addresses need
// the cluster-wide right to list nodes; without it they are left out with a
// note rather than failing. With a pool, only the pool's nodes (label
// tug.dev/pool) are listed: those are the nodes that run the app's units.
func Addresses(ctx context.Context, client kubernetes.Interface, namespace, appName, pool string) ([]Address, error) {
	out := []Address{}
	svc, err := client.CoreV1().Services(namespace).Get(ctx, appName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return out, nil
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	if svc.Labels[kube.LabelApp] != appName {
		return out, nil
	}
	var nodePorts []int32
	for _, p := range svc.Spec.Ports {
		if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			out = append(out, Address{Kind: "cluster-ip", URL: fmt.Sprintf("http://%s:%d", svc.Spec.ClusterIP, p.Port)})
		}
		out = append(out, Address{Kind: "dns", URL: fmt.Sprintf("http://%s.%s.svc:%d", svc.Name, svc.Namespace, p.Port), Note: "inside the cluster"})
		if p.NodePort != 0 {
			nodePorts = append(nodePorts, p.NodePort)
		}
	}
	nodes, err := nodePortAddresses(ctx, client, pool, nodePorts)
	if err != nil {
		return nil, err
	}
	out = append(out, nodes...)
	for _, lb := range svc.Status.LoadBalancer.Ingress {
		host := lb.IP
		if host == "" {
			host = lb.Hostname
		}
		out = append(out, Address{Kind: "load-balancer", URL: "http://" + host})
	}
	ing, err := ingressAddresses(ctx, client, namespace, appName)
	if err != nil {
		return nil, err
	}
	return append(out, ing...), nil
}

// nodePortAddresses are the node ports on each node of the pool (every
// node without one); a user who may not list nodes gets a note instead.
func nodePortAddresses(ctx context.Context, client kubernetes.Interface, pool string, nodePorts []int32) ([]Address, error) {
	if len(nodePorts) == 0 {
		return nil, nil
	}
	var sel metav1.ListOptions
	if pool != "" {
		sel.LabelSelector = kube.LabelPool + "=" + pool
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, sel)
	switch {
	case apierrors.IsForbidden(err):
		return []Address{{Kind: "node-port", URL: fmt.Sprintf("http://NODE:%d", nodePorts[0]), Note: "any node's address; listing nodes is not allowed for you"}}, nil
	case err != nil:
		return nil, kube.TranslateError(err)
	}
	var out []Address
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	for _, n := range nodes.Items {
		ip := nodeAddress(n)
		if ip == "" {
			continue
		}
		for _, np := range nodePorts {
			out = append(out, Address{Kind: "node-port", URL: fmt.Sprintf("http://%s:%d", ip, np), Note: "node " + n.Name})
		}
	}
	return out, nil
}

// ingressAddresses are the hosts of the app's Ingress, if it has one.
func ingressAddresses(ctx context.Context, client kubernetes.Interface, namespace, appName string) ([]Address, error) {
	ing, err := client.NetworkingV1().Ingresses(namespace).Get(ctx, appName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, kube.TranslateError(err)
	case ing.Labels[kube.LabelApp] != appName:
		return nil, nil
	}
	tlsHosts := map[string]bool{}
	for _, t := range ing.Spec.TLS {
		for _, h := range t.Hosts {
			tlsHosts[h] = true
		}
	}
	var out []Address
	for _, r := range ing.Spec.Rules {
		scheme := "http"
		if tlsHosts[r.Host] {
			scheme = "https"
		}
		for _, p := range r.HTTP.Paths {
			out = append(out, Address{Kind: "ingress", URL: scheme + "://" + r.Host + p.Path, Note: "through the ingress controller"})
		}
	}
	return out, nil
}

func nodeAddress(n corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP} {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
	}
	return ""
}

// URLAddresses are an app's URLs (app.URLs) as addresses: kind url, through
// the cluster's router.
func URLAddresses(a *app.App) []Address {
	var out []Address
	for i, u := range app.URLs(a) {
		note := "a domain"
		if i == 0 && a.Route != nil && a.Route.Host != "" && a.Route.Gateway != "" {
			note = "the app's own, through Gateway " + a.Route.Gateway
		}
		out = append(out, Address{Kind: "url", URL: u, Note: note})
	}
	return out
}
