package clustersettings

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/inputerr"
)

// Settings written once are read back for the cluster and per pool; a
// pool's override wins for its apps only; unset removes a key and a pool
// left with none; keys another (newer) tug wrote survive a write; and
// every user may read the ConfigMap (the Role and RoleBinding).
func TestWriteAndRead(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if s, err := Read(ctx, client); err != nil || s.Found || len(s.Cluster) != 0 {
		t.Fatalf("no settings yet: %+v, %v", s, err)
	}
	if _, err := Write(ctx, client, Change{Set: map[string]string{Gateway: "infra/router", AppsDomain: "apps.example.com"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, client, Change{Pool: "gpu", Set: map[string]string{AppsDomain: "gpu.example.com"}}); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["futureKey"] = "kept"
	cm.Data["pool.gpu.futureKey"] = "kept too"
	if _, err := client.CoreV1().ConfigMaps(Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := Read(ctx, client)
	if err != nil || !s.Found {
		t.Fatalf("read: %+v, %v", s, err)
	}
	if got := s.For("gpu").Get(AppsDomain); got != "gpu.example.com" {
		t.Errorf("gpu apps domain %q", got)
	}
	if got := s.For("web").Get(AppsDomain); got != "apps.example.com" {
		t.Errorf("other pool's apps domain %q", got)
	}
	if ns, name, ok := s.For("").GatewayRef(); !ok || ns != "infra" || name != "router" {
		t.Errorf("gateway ref %q %q %v", ns, name, ok)
	}
	if _, err := Write(ctx, client, Change{Pool: "gpu", Unset: []string{AppsDomain}}); err != nil {
		t.Fatal(err)
	}
	s, _ = Read(ctx, client)
	if _, ok := s.Pools["gpu"]; ok {
		t.Errorf("pool left with no setting is kept: %v", s.Pools)
	}
	cm, _ = client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if cm.Data["futureKey"] != "kept" || cm.Data["pool.gpu.futureKey"] != "kept too" {
		t.Errorf("a newer tug's keys were lost: %v", cm.Data)
	}
	if _, err := client.RbacV1().RoleBindings(Namespace).Get(ctx, readerName, metav1.GetOptions{}); err != nil {
		t.Errorf("reader binding: %v", err)
	}
	role, err := client.RbacV1().Roles(Namespace).Get(ctx, readerName, metav1.GetOptions{})
	if err != nil || len(role.Rules) != 1 || role.Rules[0].ResourceNames[0] != Name || role.Rules[0].Verbs[0] != "get" {
		t.Errorf("reader role %+v, %v", role, err)
	}
}

// A user who may not read the settings has none (tug goes on as before
// any were written); any other failure is an error.
func TestReadForbiddenAndFailing(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, Name, errors.New("no"))
	})
	if s, err := Read(ctx, client); err != nil || !s.Unreadable || s.Found {
		t.Errorf("forbidden: %+v, %v", s, err)
	}
	failing := fake.NewClientset()
	failing.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	if _, err := Read(ctx, failing); err == nil {
		t.Error("a failing read: no error")
	}
}

// Two admins writing at once: a write that loses the compare-and-swap
// retries on the other's, so neither change is lost.
func TestWriteRetriesAConflict(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace}, Data: map[string]string{Router: RouterTraefik}})
	conflicts := 1
	client.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, Name, errors.New("changed"))
		}
		return false, nil, nil
	})
	s, err := Write(ctx, client, Change{Set: map[string]string{IngressClass: "traefik"}})
	if err != nil || s.Cluster[Router] != RouterTraefik || s.Cluster[IngressClass] != "traefik" {
		t.Fatalf("after a conflict: %+v, %v", s, err)
	}
	client.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, Name, errors.New("not an admin"))
	})
	if _, err := Write(ctx, client, Change{Set: map[string]string{IngressClass: "nginx"}}); err == nil || !strings.Contains(err.Error(), "writing the cluster settings") {
		t.Errorf("forbidden write: %v", err)
	}
}

// Bad input is a usage error (exit 2) naming what is wrong, before any
// request.
func TestChangeValidation(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    Change
		want string
	}{
		{"nothing", Change{}, "nothing to change"},
		{"unknown key", Change{Set: map[string]string{"colour": "blue"}}, `unknown setting "colour"`},
		{"unknown unset", Change{Unset: []string{"colour"}}, `unknown setting "colour"`},
		{"set and unset", Change{Set: map[string]string{Router: "traefik"}, Unset: []string{Router}}, "both set and unset"},
		{"gateway", Change{Set: map[string]string{Gateway: "router"}}, "NAMESPACE/NAME"},
		{"domain ip", Change{Set: map[string]string{AppsDomain: "10.0.0.1"}}, "DNS domain"},
		{"domain one label", Change{Set: map[string]string{AppsDomain: "apps"}}, "DNS domain"},
		{"router", Change{Set: map[string]string{Router: "nginx"}}, "traefik, ingress-nginx or other"},
		{"class", Change{Set: map[string]string{IngressClass: "Not_A_Name"}}, "name of a Kubernetes object"},
		{"image", Change{Set: map[string]string{BuildkitImage: "a b"}}, "image reference"},
		{"pool", Change{Pool: "bad pool!", Set: map[string]string{Router: "traefik"}}, "pool"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want a usage error with %q", err, tt.want)
			}
			client := fake.NewClientset()
			if _, err := Write(context.Background(), client, tt.c); err == nil {
				t.Error("Write accepted it")
			}
			if n := len(client.Actions()); n != 0 {
				t.Errorf("%d requests for bad input", n)
			}
		})
	}
	if err := (Change{Set: map[string]string{Gateway: "infra/router", AppsDomain: "apps.example.com", DefaultBuilder: "reg/builder:1"}}).Validate(); err != nil {
		t.Errorf("good change: %v", err)
	}
}

func TestParseAssignments(t *testing.T) {
	got, err := ParseAssignments([]string{"router=traefik", "appsDomain=apps.example.com"})
	if err != nil || got[Router] != "traefik" || got[AppsDomain] != "apps.example.com" {
		t.Errorf("%v, %v", got, err)
	}
	for _, bad := range [][]string{{"router"}, {"=x"}, {"router=a", "router=b"}} {
		if _, err := ParseAssignments(bad); err == nil || !inputerr.Is(err) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if _, err := ParseAssignments([]string{"x"}); err == nil || !strings.Contains(err.Error(), keyNames()) {
		t.Errorf("the error lists the keys: %v", err)
	}
}
