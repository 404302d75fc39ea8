package clustersettings

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The router key takes the routers tug knows how to give an allow list to,
// and "other"; anything else is a usage error before anything is written.
func TestRouterValues(t *testing.T) {
	for _, v := range []string{RouterTraefik, RouterIngressNginx, RouterOther} {
		if err := (Change{Set: map[string]string{Router: v}}).Validate(); err != nil {
			t.Errorf("router=%s: %v", v, err)
		}
	}
	for _, v := range []string{"", "nginx", "Traefik", "haproxy"} {
		err := (Change{Set: map[string]string{Router: v}}).Validate()
		if err == nil || !strings.Contains(err.Error(), "want traefik, ingress-nginx or other") {
			t.Errorf("router=%q: %v", v, err)
		}
	}
	if s := fromData(map[string]string{"router": "traefik", "pool.edge.router": "other"}); s.For("").Get(Router) != RouterTraefik || s.For("edge").Get(Router) != RouterOther {
		t.Errorf("stored router setting read as %+v", s)
	}
}

// A key this tug does not know (written by a newer tug or cluster-up) is
// kept by a change of the others, not dropped.
func TestWriteKeepsKeysItDoesNotKnow(t *testing.T) {
	client := fake.NewSimpleClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
		Data: map[string]string{"gateway": "infra/router", "fromTheFuture": "x", "pool.edge.fromTheFuture": "y"}})
	if _, err := Write(context.Background(), client, Change{Set: map[string]string{AppsDomain: "apps.example.com"}}); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps(Namespace).Get(context.Background(), Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["fromTheFuture"] != "x" || cm.Data["pool.edge.fromTheFuture"] != "y" || cm.Data["gateway"] != "infra/router" || cm.Data["appsDomain"] != "apps.example.com" {
		t.Errorf("data after the write: %v", cm.Data)
	}
}
