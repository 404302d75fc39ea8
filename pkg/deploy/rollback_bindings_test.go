package deploy

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
)

// A rollback to a release binding a service that was removed since is
// refused as bad input, naming the service: its units could not start.
func TestRollbackToAReleaseBindingARemovedServiceIsRefused(t *testing.T) {
	ctx := context.Background()
	c, s := newFake()
	a := &app.App{Name: "shop", Release: 2, LastRelease: 2}
	seedApp(t, s, a)
	for _, r := range []*app.Release{
		{App: "shop", Version: 1, Image: "shop:1", Services: []app.ServiceBinding{{Service: "db", Prefix: "DATABASE", Keys: []string{"uri"}}}},
		{App: "shop", Version: 2, Image: "shop:2"},
	} {
		if err := s.CreateRelease(ctx, r, app.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := RollbackChange(ctx, s, 1)(a, nil, nil)
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "create service db first") {
		t.Fatalf("rollback to v1 without service db: %v, want an input error naming it", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: render.ServiceBindingSecret("db"), Namespace: ns}}
	if _, err := c.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, _, err := RollbackChange(ctx, s, 1)(a, nil, nil); err != nil || r.RollbackOf != 1 {
		t.Fatalf("rollback to v1 with service db: %v", err)
	}
}
