package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The local cluster's router (test/cluster/cluster.sh: Traefik on a
// host-only address, serving the Gateway API and Ingress). These tests make
// routes by hand, as an admin would, to prove the router itself.

func (h *H) waitThroughRouter(r router, url string, want int, bodyHas string) {
	h.t.Helper()
	h.Eventually(60*time.Second, fmt.Sprintf("%s answers %d through the router", url, want), func() (bool, error) {
		code, body, _, err := r.get(nil, url)
		if err != nil {
			return false, err
		}
		if code != want || !strings.Contains(body, bodyHas) {
			return false, fmt.Errorf("got %d %q", code, body)
		}
		return true, nil
	})
}

// waitRouteAccepted waits until the router's controller says the route is
// Accepted with its references resolved, on the router's Gateway.
func (h *H) waitRouteAccepted(dyn dynamic.Interface, r router, name string) {
	h.t.Helper()
	h.Eventually(60*time.Second, "HTTPRoute "+name+" Accepted and ResolvedRefs", func() (bool, error) {
		u, err := dyn.Resource(httpRoutes).Namespace(h.NS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
		for _, p := range parents {
			pm, _ := p.(map[string]any)
			ctrl, _, _ := unstructured.NestedString(pm, "controllerName")
			pname, _, _ := unstructured.NestedString(pm, "parentRef", "name")
			pns, _, _ := unstructured.NestedString(pm, "parentRef", "namespace")
			if ctrl != "traefik.io/gateway-controller" || pname != r.gateway || pns != r.gatewayNS {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(pm, "conditions")
			got := map[string]string{}
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				t, _ := cm["type"].(string)
				s, _ := cm["status"].(string)
				got[t] = s
			}
			if got["Accepted"] == "True" && got["ResolvedRefs"] == "True" {
				return true, nil
			}
			return false, fmt.Errorf("conditions %v", conds)
		}
		return false, fmt.Errorf("no status from the router's controller: %v", parents)
	})
}

func TestRouterServesGatewayAndIngress(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	h.mustTug("app", "create", "web")
	h.mustTug("app", "deploy", "web", "--image", sampleV1)

	// The Gateway API: an HTTPRoute made by hand for a name under the apps
	// domain (not "web": that is the route tug made for the app's own URL).
	host := h.NS + "." + r.appsDomain
	if _, err := dyn.Resource(httpRoutes).Namespace(h.NS).Create(ctx, httpRoute(r, "by-hand", host, "web"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the HTTPRoute: %v", err)
	}
	h.waitRouteAccepted(dyn, r, "by-hand")
	h.waitThroughRouter(r, "http://"+host+"/version", 200, "v1")

	// HTTPS on the Gateway's wildcard listener: SNI picks the certificate,
	// which the cluster CA signed for *.<apps domain>.
	roots := clusterCA(t, h.Config)
	h.Eventually(30*time.Second, "https://"+host+"/version answers through the router", func() (bool, error) {
		code, body, chain, err := r.get(roots, "https://"+host+"/version")
		if err != nil || code != 200 || !strings.Contains(body, "v1") {
			return false, fmt.Errorf("%d %q %v", code, body, err)
		}
		if len(chain) == 0 || !slices.Contains(chain[0].DNSNames, "*."+r.appsDomain) {
			return false, fmt.Errorf("the router's certificate for %s is not the apps wildcard (chain of %d)", host, len(chain))
		}
		return true, nil
	})

	// A name outside the Gateway's listeners is not routed.
	if code, body, _, err := r.get(nil, "http://"+h.NS+".elsewhere.test/version"); err != nil || code != 404 {
		t.Fatalf("a host no route names: want 404, got %d %q %v", code, body, err)
	}

	// Ingress with the router's IngressClass, which the cluster names by its
	// controller.
	class := h.routerIngressClass()
	ingHost := "ing-" + host
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web-ingress"},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{
			Host: ingHost,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &pathType,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}},
		}}},
	}
	if _, err := h.Client.NetworkingV1().Ingresses(h.NS).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Ingress: %v", err)
	}
	h.waitThroughRouter(r, "http://"+ingHost+"/version", 200, "v1")
	h.Eventually(30*time.Second, "the Ingress's status names the router", func() (bool, error) {
		got, err := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "web-ingress", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		lb := got.Status.LoadBalancer.Ingress
		return len(lb) == 1 && lb[0].IP == r.ip, fmt.Errorf("status %+v", lb)
	})
}

// The router may only open connections into the pod and service ranges: a
// Service whose endpoint is another address of this machine (the local
// registry, on the first node's host-only address, which answers the test
// itself) gets 502 through the router. The address is local, so nothing
// could leave the machine even if the rule were missing.
func TestRouterForwardsOnlyToClusterRanges(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	ctx := context.Background()
	reg := registryForBuilds(t, false)
	regHost, regPort, err := net.SplitHostPort(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tryGet("http://" + reg + "/v2/"); err != nil {
		t.Fatalf("the registry should answer the test directly: %v", err)
	}
	var port int32
	if _, err := fmt.Sscan(regPort, &port); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "outside"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(port)}}},
	}
	if _, err := h.Client.CoreV1().Services(h.NS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := true
	name, proto := "http", corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "outside-1", Labels: map[string]string{discoveryv1.LabelServiceName: "outside"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{regHost}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	if _, err := h.Client.DiscoveryV1().EndpointSlices(h.NS).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	host := h.NS + "." + r.appsDomain
	if _, err := dyn.Resource(httpRoutes).Namespace(h.NS).Create(ctx, httpRoute(r, "outside", host, "outside"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitRouteAccepted(dyn, r, "outside")
	// 404 until the router has the route; then 502, its answer when it
	// cannot connect to the endpoint (with no endpoint it says 503)
	h.waitThroughRouter(r, "http://"+host+"/v2/", 502, "")
}

// TestClusterSettingsReadableByEveryUser: the cluster's settings are for
// every user of it, not only admins.
func TestClusterSettingsReadableByEveryUser(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	cfg := rest.CopyConfig(h.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "e2e-someone", Groups: []string{"system:authenticated"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "tug-cluster-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("an authenticated user reading the cluster settings: %v", err)
	}
	for _, k := range []string{"gateway", "appsDomain", "buildkitImage", "buildAgentImage", "defaultBuilder"} {
		if cm.Data[k] == "" {
			t.Errorf("cluster settings without %s: %v", k, cm.Data)
		}
	}
	if _, err := c.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "cluster-info", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the reader role should name the settings only; reading kube-public/cluster-info: %v", err)
	}
	// the Gateway the settings name is the router's, and programmed
	dyn, err := dynamic.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).
		Namespace(r.gatewayNS).Get(context.Background(), r.gateway, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the settings' gateway %s/%s: %v", r.gatewayNS, r.gateway, err)
	}
	addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
	if len(addrs) != 1 || addrs[0].(map[string]any)["value"] != r.ip {
		t.Errorf("the Gateway's status addresses should be the router's %s: %v", r.ip, addrs)
	}
}
