package service

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

func TestBindValidate(t *testing.T) {
	for name, tt := range map[string]struct {
		b  Bind
		ok bool
	}{
		"plain":       {Bind{App: "shop", Service: "db"}, true},
		"with prefix": {Bind{App: "shop", Service: "db", Prefix: "ORDERS"}, true},
		"bad app":     {Bind{App: "Shop!", Service: "db"}, false},
		"bad service": {Bind{App: "shop", Service: "d b"}, false},
		"bad prefix":  {Bind{App: "shop", Service: "db", Prefix: "orders"}, false},
	} {
		err := tt.b.Validate()
		if tt.ok != (err == nil) || (err != nil && !inputerr.Is(err)) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The values of a binding are shown only when asked for.
func TestReadCredentials(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	if _, err := ReadCredentials(ctx, d, "db", true); err == nil || !strings.Contains(err.Error(), "run its create again") {
		t.Errorf("before the binding is written: %v", err)
	}
	if err := d.writeBinding(ctx, mustRecord(t, c)); err != nil {
		t.Fatal(err)
	}
	hidden, err := ReadCredentials(ctx, d, "db", false)
	if err != nil || hidden.Values != nil || !slices.Contains(hidden.Keys, "password") || hidden.Secret != BindingSecretName("db") {
		t.Errorf("without reveal: %+v %v", hidden, err)
	}
	shown, err := ReadCredentials(ctx, d, "db", true)
	if err != nil || shown.Values["password"] != "p1" || shown.Values["username"] != "app" || !slices.IsSorted(shown.Keys) {
		t.Errorf("revealed: %+v %v", shown, err)
	}
	if _, err := ReadCredentials(ctx, d, "nope", true); !inputerr.Is(err) {
		t.Errorf("a missing service: %v", err)
	}
}

// A new URI of an external service rewrites its binding and rolls out
// each bound app; a tug-run service or a bad URI is refused, unchanged.
func TestUpdateURI(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	if _, err := CreateExternal(ctx, d, "ext", "postgres://u:p@db.example:5432/shop"); err != nil {
		t.Fatal(err)
	}
	runningWithBindingOf(t, c, "ext")
	var restarted []string
	apps, err := UpdateURI(ctx, d, "ext", "postgres://u:NEW@db2.example:5432/shop", func(_ context.Context, a string) error {
		restarted = append(restarted, a)
		return nil
	})
	if err != nil || !slices.Equal(apps, []string{"shop"}) || !slices.Equal(restarted, []string{"shop"}) {
		t.Fatalf("update: %v %v %v", apps, restarted, err)
	}
	if b := bindingURI(t, d); b != "postgres://u:NEW@db2.example:5432/shop" {
		t.Errorf("binding uri %q", b)
	}
	for name, run := range map[string]func() ([]string, error){
		"a tug-run service": func() ([]string, error) { return UpdateURI(ctx, d, "db", "postgres://u:p@x/y", nil) },
		"a bad URI":         func() ([]string, error) { return UpdateURI(ctx, d, "ext", "ftp://x/y", nil) },
		"no such service":   func() ([]string, error) { return UpdateURI(ctx, d, "nope", "postgres://u:p@x/y", nil) },
	} {
		if _, err := run(); !inputerr.Is(err) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	if b := bindingURI(t, d); b != "postgres://u:NEW@db2.example:5432/shop" {
		t.Errorf("a refused update changed the binding: %q", b)
	}
}

// runningWithBindingOf is app shop's Deployment reading service's binding.
func runningWithBindingOf(t *testing.T, c *fake.Clientset, service string) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: testNS, Labels: kube.AppLabels("shop")},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: BindingSecretName(service)}}}}}}}}}}
	if _, err := c.AppsV1().Deployments(testNS).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
