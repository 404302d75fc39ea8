package route_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/route/routetest"
)

// A route the router refuses is reported with its reason and exit code
// 18, never as success.
func TestRefusedRouteIsReported(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com"}}
	dyn := routetest.NewDynamic(t, func(u *unstructured.Unstructured) {
		routetest.SetVerdict(u, "False", "NotAllowedByListeners", "no listener admits routes from namespace dev")
	})
	c := route.Client{Namespace: "dev", Dynamic: dyn}
	data, err := json.Marshal(route.Render(a, "shop-web", nil)[0].Object)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(route.HTTPRoutes).Namespace("dev").Patch(context.Background(), "shop", types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "tug"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Confirm(context.Background(), progress.Nop{}, nil, a, []*unstructured.Unstructured{got}, route.ProbeServe)
	var refused *route.RouteError
	if !errors.As(err, &refused) || refused.ExitCode() != 18 || !strings.Contains(err.Error(), "NotAllowedByListeners: no listener admits routes from namespace dev") {
		t.Fatalf("Confirm = %v", err)
	}
}
