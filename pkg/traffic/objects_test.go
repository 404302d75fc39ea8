package traffic

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

func forbidden(resource string) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("no"))
	}
}

func service(appName, owner, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: ns, Labels: kube.AppLabels(owner)},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
	}
}

func nodeWith(name string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

func ingress(appName, owner string, tlsHosts []string, rules map[string][]string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: ns, Labels: kube.AppLabels(owner)}}
	if len(tlsHosts) > 0 {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: tlsHosts, SecretName: "tls"}}
	}
	hosts := make([]string, 0, len(rules))
	for h := range rules {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		r := networkingv1.IngressRule{Host: h, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}}
		for _, p := range rules[h] {
			r.HTTP.Paths = append(r.HTTP.Paths, networkingv1.HTTPIngressPath{Path: p})
		}
		ing.Spec.Rules = append(ing.Spec.Rules, r)
	}
	return ing
}

func TestAddresses(t *testing.T) {
	web := corev1.ServicePort{Name: "http", Port: 80}
	webNodePort := corev1.ServicePort{Name: "http", Port: 80, NodePort: 30080}
	lb := service("shop", "shop", "10.96.0.5", web)
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}, {Hostname: "lb.example.net"}}
	tests := []struct {
		name    string
		objs    []runtime.Object
		nodesNo bool // listing nodes is forbidden
		want    []Address
	}{
		{"no service", nil, false, []Address{}},
		{"another app's service", []runtime.Object{service("shop", "blog", "10.96.0.5", web)}, false, []Address{}},
		{"cluster IP", []runtime.Object{service("shop", "shop", "10.96.0.5", web)}, false, []Address{
			{Kind: "cluster-ip", URL: "http://10.96.0.5:80"},
			{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
		}},
		{"headless", []runtime.Object{service("shop", "shop", "None", web)}, false, []Address{
			{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
		}},
		{"node ports on every node with an address, external first", []runtime.Object{
			service("shop", "shop", "", webNodePort),
			nodeWith("n2", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}),
			nodeWith("n1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.1"}),
			nodeWith("n3", corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n3"}),
		}, false, []Address{
			{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
			{Kind: "node-port", URL: "http://198.51.100.1:30080", Note: "node n1"},
			{Kind: "node-port", URL: "http://10.0.0.2:30080", Note: "node n2"},
		}},
		{"node ports without the right to list nodes", []runtime.Object{service("shop", "shop", "", webNodePort)}, true, []Address{
			{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
			{Kind: "node-port", URL: "http://NODE:30080", Note: "any node's address; listing nodes is not allowed for you"},
		}},
		{"load balancer", []runtime.Object{lb}, false, []Address{
			{Kind: "cluster-ip", URL: "http://10.96.0.5:80"},
			{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
			{Kind: "load-balancer", URL: "http://203.0.113.7"},
			{Kind: "load-balancer", URL: "http://lb.example.net"},
		}},
		{"ingress, https where TLS names the host", []runtime.Object{
			service("shop", "shop", "", web),
			ingress("shop", "shop", []string{"shop.example.com"}, map[string][]string{"shop.example.com": {"/"}, "example.com": {"/shop", "/cart"}}),
		}, false, []Address{
			{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
			{Kind: "ingress", URL: "http://example.com/shop", Note: "through the ingress controller"},
			{Kind: "ingress", URL: "http://example.com/cart", Note: "through the ingress controller"},
			{Kind: "ingress", URL: "https://shop.example.com/", Note: "through the ingress controller"},
		}},
		{"another app's ingress", []runtime.Object{
			service("shop", "shop", "", web),
			ingress("shop", "blog", nil, map[string][]string{"blog.example.com": {"/"}}),
		}, false, []Address{
			{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset(tt.objs...)
			if tt.nodesNo {
				c.PrependReactor("list", "nodes", forbidden("nodes"))
			}
			got, err := Addresses(context.Background(), c, ns, "shop", "")
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !slices.Equal(got, tt.want) {
				t.Errorf("Addresses =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestAddressesErrors(t *testing.T) {
	for _, tt := range []struct {
		verb, resource string
		objs           []runtime.Object
	}{
		{"get", "services", nil},
		{"get", "ingresses", []runtime.Object{service("shop", "shop", "10.0.0.1", corev1.ServicePort{Port: 80})}},
	} {
		t.Run(tt.verb+" "+tt.resource, func(t *testing.T) {
			c := fake.NewClientset(tt.objs...)
			c.PrependReactor(tt.verb, tt.resource, forbidden(tt.resource))
			if _, err := Addresses(context.Background(), c, ns, "shop", ""); !apierrors.IsForbidden(err) {
				t.Errorf("Addresses = %v, want the permission error", err)
			}
		})
	}
	t.Run("listing nodes fails otherwise", func(t *testing.T) {
		c := fake.NewClientset(service("shop", "shop", "", corev1.ServicePort{Port: 80, NodePort: 30080}))
		c.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		})
		if _, err := Addresses(context.Background(), c, ns, "shop", ""); err == nil || !strings.Contains(err.Error(), "etcd is down") {
			t.Errorf("Addresses = %v, want the list error", err)
		}
	})
}

func TestValidatePath(t *testing.T) {
	for _, p := range []string{"/", "/api", "/api/v1/", "/a-b_c.d"} {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", "api", "/a b", "/a\tb", "/a?x=1", "/a#top", "/a\nb"} {
		want := `invalid path "` + p + `": want an absolute URL path such as / or /api`
		if err := ValidatePath(p); err == nil || err.Error() != strings.ReplaceAll(strings.ReplaceAll(want, "\t", `\t`), "\n", `\n`) {
			t.Errorf("ValidatePath(%q) = %v, want %q", p, err, want)
		}
	}
}

func TestHostOwner(t *testing.T) {
	c := fake.NewClientset(
		ingress("shop", "shop", nil, map[string][]string{"shop.example.com": {"/"}}),
		ingress("blog", "blog", nil, map[string][]string{"Blog.Example.com": {"/"}, "example.com": {"/blog"}}),
	)
	ctx := context.Background()
	if err := (&app.Store{Client: c, Namespace: ns}).CreateApp(ctx, &app.App{Name: "cart", Namespace: ns, Domains: []app.Domain{{Host: "Routed.example.com"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ app, host, want string }{
		{"shop", "blog.example.com", "blog"}, // case does not matter in host names
		{"shop", "example.com", "blog"},
		{"blog", "blog.example.com", ""}, // its own host
		{"shop", "shop.example.com", ""},
		{"blog", "shop.example.com", "shop"},
		{"shop", "new.example.com", ""},
		{"shop", "routed.example.com", "cart"}, // through a Gateway: only its record says so
	} {
		got, err := HostOwner(ctx, c, ns, tt.app, tt.host)
		if err != nil || got != tt.want {
			t.Errorf("HostOwner(%s, %s) = %q, %v; want %q", tt.app, tt.host, got, err, tt.want)
		}
	}
	c.PrependReactor("list", "ingresses", forbidden("ingresses"))
	if _, err := HostOwner(ctx, c, ns, "shop", "x.example.com"); !apierrors.IsForbidden(err) {
		t.Errorf("HostOwner = %v, want the permission error", err)
	}
}

func TestStoreListDeleteCerts(t *testing.T) {
	ctx := context.Background()
	shopApp := &app.App{Name: "shop", Namespace: ns, Release: 1}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := fake.NewClientset()
	cert1, key1 := pair(t, []string{"shop.example.com", "www.shop.example.com"}, now.Add(-24*time.Hour), now.Add(30*24*time.Hour+time.Hour))
	if err := storeCert(ctx, c, ns, "shop", "shop-tls-a", "shop.example.com", cert1, key1); err != nil {
		t.Fatal(err)
	}
	sec, err := c.CoreV1().Secrets(ns).Get(ctx, "shop-tls-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sec.Type != corev1.SecretTypeTLS || string(sec.Data[corev1.TLSCertKey]) != string(cert1) || string(sec.Data[corev1.TLSPrivateKeyKey]) != string(key1) ||
		sec.Labels[kube.LabelKind] != "tls" || sec.Labels[kube.LabelApp] != "shop" || sec.Annotations["tug.dev/host"] != "shop.example.com" {
		t.Errorf("stored secret %+v", sec)
	}
	// Storing again replaces the pair.
	cert2, key2 := pair(t, []string{"shop.example.com"}, now.Add(-24*time.Hour), now.Add(10*24*time.Hour+time.Hour))
	if err := storeCert(ctx, c, ns, "shop", "shop-tls-a", "shop.example.com", cert2, key2); err != nil {
		t.Fatal(err)
	}
	// A damaged pair is listed without its details; another app's is not listed.
	if err := storeCert(ctx, c, ns, "shop", "shop-tls-b", "api.example.com", []byte("junk"), []byte("junk")); err != nil {
		t.Fatal(err)
	}
	if err := storeCert(ctx, c, ns, "blog", "blog-tls", "blog.example.com", cert1, key1); err != nil {
		t.Fatal(err)
	}

	certs, err := ListCerts(ctx, c, nil, ns, shopApp, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 2 {
		t.Fatalf("certs = %+v, want 2", certs)
	}
	slices.SortFunc(certs, func(a, b Cert) int { return strings.Compare(a.Secret, b.Secret) })
	got := certs[0]
	if got.Host != "shop.example.com" || got.Secret != "shop-tls-a" || got.Subject != "CN=shop.example.com" || got.Issuer != "CN=shop.example.com" ||
		!slices.Equal(got.SANs, []string{"shop.example.com"}) || got.DaysLeft == nil || *got.DaysLeft != 10 || got.NotAfter == nil || !got.NotAfter.Equal(now.Add(10*24*time.Hour+time.Hour)) ||
		got.Source != "user" || got.Status != StatusValid || got.Ready != nil {
		t.Errorf("replaced cert = %+v", got)
	}
	if d := certs[1]; d.Host != "api.example.com" || d.Secret != "shop-tls-b" || d.Subject != "" || d.SANs != nil || d.DaysLeft != nil || d.NotAfter != nil || d.Status != StatusUnreadable {
		t.Errorf("damaged cert = %+v", d)
	}

	if err := DeleteSecret(ctx, c, ns, "shop", "shop-tls-a"); err != nil {
		t.Fatal(err)
	}
	if err := DeleteSecret(ctx, c, ns, "shop", "shop-tls-a"); err != nil {
		t.Errorf("deleting a missing secret = %v, want nil", err)
	}
	if certs, _ := ListCerts(ctx, c, nil, ns, shopApp, now); len(certs) != 1 || certs[0].Secret != "shop-tls-b" {
		t.Errorf("after delete: %+v", certs)
	}

	c.PrependReactor("delete", "secrets", forbidden("secrets"))
	c.PrependReactor("list", "secrets", forbidden("secrets"))
	c.PrependReactor("create", "secrets", forbidden("secrets"))
	if err := DeleteSecret(ctx, c, ns, "shop", "shop-tls-b"); !apierrors.IsForbidden(err) {
		t.Errorf("DeleteSecret = %v, want the permission error", err)
	}
	if _, err := ListCerts(ctx, c, nil, ns, shopApp, now); !apierrors.IsForbidden(err) {
		t.Errorf("ListCerts = %v, want the permission error", err)
	}
	if err := storeCert(ctx, c, ns, "shop", "x", "x.example.com", cert1, key1); !apierrors.IsForbidden(err) {
		t.Errorf("storeCert = %v, want the permission error", err)
	}
}

func TestCertNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    *x509.Certificate
		want []string
	}{
		{"DNS names and IPs", &x509.Certificate{DNSNames: []string{"a.example.com"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
			Subject: pkix.Name{CommonName: "ignored"}}, []string{"a.example.com", "10.0.0.1"}},
		{"common name when nothing else", &x509.Certificate{Subject: pkix.Name{CommonName: "legacy.example.com"}}, []string{"legacy.example.com"}},
		{"nothing at all", &x509.Certificate{}, []string{}},
	} {
		if got := names(tt.c); !slices.Equal(got, tt.want) {
			t.Errorf("%s: names = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckPairNamesWhatTheCertificateCovers(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), DNSNames: []string{"a.example.com", "b.example.com"},
		IPAddresses: []net.IP{net.ParseIP("192.0.2.1")}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	certPEM, keyPEM := encodePair(t, tmpl, key)
	_, err := CheckPair(certPEM, keyPEM, "c.example.com", now)
	want := "the certificate is not for c.example.com (it names a.example.com, b.example.com, 192.0.2.1)"
	if err == nil || err.Error() != want {
		t.Errorf("CheckPair = %v, want %q", err, want)
	}
	if _, err := CheckPair(certPEM, keyPEM, "b.example.com", now.Add(2*time.Hour)); err == nil || err.Error() != "the certificate expired on 2026-03-01" {
		t.Errorf("expired: %v", err)
	}
	if _, err := CheckPair(certPEM, keyPEM, "b.example.com", now.Add(-2*time.Hour)); err == nil || err.Error() != "the certificate is not valid before 2026-03-01 11:00" {
		t.Errorf("not yet valid: %v", err)
	}
	leaf, err := CheckPair(certPEM, keyPEM, "a.example.com", now)
	if err != nil || leaf == nil || leaf.SerialNumber.Int64() != 2 {
		t.Errorf("valid pair: %v, %v", leaf, err)
	}
}

func encodePair(t *testing.T, tmpl *x509.Certificate, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// storeCert writes a certificate Secret as cert add does under its lock.
func storeCert(ctx context.Context, c kubernetes.Interface, namespace, appName, name, host string, certPEM, keyPEM []byte) error {
	_, err := putCert(ctx, c, namespace, appName, name, host, certPEM, keyPEM)
	return err
}

// An app in a pool runs on the pool's nodes: only their addresses are listed.
func TestAddressesInPool(t *testing.T) {
	inPool := func(n *corev1.Node, pool string) *corev1.Node {
		n.Labels = map[string]string{kube.LabelPool: pool}
		return n
	}
	c := fake.NewClientset(
		service("shop", "shop", "", corev1.ServicePort{Name: "http", Port: 80, NodePort: 30080}),
		inPool(nodeWith("n1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}), "gpu"),
		inPool(nodeWith("n2", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}), "web"),
		nodeWith("n3", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.3"}),
	)
	got, err := Addresses(context.Background(), c, ns, "shop", "web")
	if err != nil {
		t.Fatal(err)
	}
	want := []Address{
		{Kind: "dns", URL: "http://shop.team.svc:80", Note: "inside the cluster"},
		{Kind: "node-port", URL: "http://10.0.0.2:30080", Note: "node n2"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Addresses in pool web =\n%+v\nwant\n%+v", got, want)
	}
	if all, _ := Addresses(context.Background(), c, ns, "shop", ""); len(all) != 4 {
		t.Errorf("without a pool every node is listed: %+v", all)
	}
}

// readLeaf judges the Secret's certificate at now: expired, not yet valid,
// valid, or unreadable.
func TestCertReadLeaf(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cert, _ := pair(t, []string{"shop.example.com"}, now.Add(-time.Hour), now.Add(48*time.Hour))
	for _, tt := range []struct {
		name string
		at   time.Time
		data []byte
		want string
	}{
		{"valid", now, cert, StatusValid},
		{"expired", now.Add(72 * time.Hour), cert, StatusExpired},
		{"not yet valid", now.Add(-2 * time.Hour), cert, StatusNotYetValid},
		{"junk", now, []byte("junk"), StatusUnreadable},
	} {
		var c Cert
		c.readLeaf(tt.data, tt.at)
		if c.Status != tt.want {
			t.Errorf("%s: status %q, want %q", tt.name, c.Status, tt.want)
		}
		if (c.NotAfter == nil) != (tt.want == StatusUnreadable) {
			t.Errorf("%s: NotAfter %v", tt.name, c.NotAfter)
		}
	}
}
