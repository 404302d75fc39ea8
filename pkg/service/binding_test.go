package service

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
)

// A viewer may not read release records (Secrets): the bound app is still
// named, with its files, and no variables (nil: not known, not none).
func TestBoundAppsOfAViewerNameTheAppWithoutVariables(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := &app.Store{Client: client, Namespace: "ns"}
	if err := store.CreateApp(ctx, &app.App{Name: "shop", Release: 2, Services: []string{"db"}}); err != nil {
		t.Fatal(err)
	}
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "tug-shop-v2",
			errorString(`User "v" cannot get resource "secrets" in API group "" in the namespace "ns"`))
	})
	got, err := boundApps(ctx, Deps{Client: client, Namespace: "ns"}, &Record{Name: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].App != "shop" || got[0].Variables != nil || got[0].Files != "/bindings/db" {
		t.Fatalf("bound apps for a viewer: %+v", got)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
