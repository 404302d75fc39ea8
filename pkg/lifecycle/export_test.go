package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

func exportFixture(t *testing.T, cfg app.ConfigMap) *app.Store {
	t.Helper()
	_, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Release: 2, LastRelease: 3, Pool: "gpu",
		Processes: map[string]app.Process{"web": {Replicas: 3}, "worker": {Replicas: 1}}})
	seedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Status: app.StatusDeployed,
		Processes: map[string]string{"web": "./server", "worker": "./work"}}, cfg)
	seedRelease(t, s, &app.Release{Version: 3, Image: "shop:3", Status: app.StatusFailed,
		Processes: map[string]string{"web": "./broken"}}, cfg)
	return s
}

func TestExportWithoutConfig(t *testing.T) {
	s := exportFixture(t, app.ConfigMap{"TOKEN": "export-s3cret"})
	e, err := Export(context.Background(), storeDeps(s), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	objs := e.Objects
	var kinds []string
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			kinds = append(kinds, "Deployment/"+o.Name)
			if o.Namespace != "" {
				t.Errorf("%s has namespace %q", o.Name, o.Namespace)
			}
			c := o.Spec.Template.Spec.Containers[0]
			if c.Image != "shop:2" {
				t.Errorf("%s image %s, want the deployed release's", o.Name, c.Image)
			}
			ref := c.EnvFrom[0].SecretRef
			if ref.Name != "tug-release-shop-v2" || ref.Optional == nil || !*ref.Optional {
				t.Errorf("%s envFrom = %+v, want the v2 secret, optional", o.Name, ref)
			}
		case *corev1.Service:
			kinds = append(kinds, "Service/"+o.Name)
			if o.Namespace != "" {
				t.Errorf("service has namespace %q", o.Namespace)
			}
		default:
			t.Errorf("unexpected object %T", o)
		}
	}
	if got := strings.Join(kinds, " "); got != "Deployment/shop-web Deployment/shop-worker Service/shop" {
		t.Errorf("objects = %s", got)
	}
	b, _ := json.Marshal(objs)
	if strings.Contains(string(b), "export-s3cret") {
		t.Error("export without config shows a config value")
	}
	if strings.Contains(string(b), `"namespace"`) {
		t.Errorf("export names a namespace: %s", b)
	}
}

func TestExportWithConfig(t *testing.T) {
	s := exportFixture(t, app.ConfigMap{"TOKEN": "export-s3cret"})
	e, err := Export(context.Background(), storeDeps(s), "shop", true)
	if err != nil {
		t.Fatal(err)
	}
	objs := e.Objects
	if len(objs) != 4 {
		t.Fatalf("%d objects, want secret, 2 deployments, service", len(objs))
	}
	sec, ok := objs[0].(*corev1.Secret)
	if !ok {
		t.Fatalf("first object is %T, want the Secret (so apply creates it before the units need it)", objs[0])
	}
	if sec.Name != "tug-release-shop-v2" || sec.Namespace != "" || sec.Kind != "Secret" || sec.APIVersion != "v1" ||
		string(sec.Data["TOKEN"]) != "export-s3cret" {
		t.Errorf("secret = %+v", sec)
	}
	for _, o := range objs[1:3] {
		d := o.(*appsv1.Deployment)
		if ref := d.Spec.Template.Spec.Containers[0].EnvFrom[0].SecretRef; ref.Optional != nil && *ref.Optional {
			t.Errorf("%s: the secret is optional although it is exported", d.Name)
		}
	}
}

func TestExportNotDeployed(t *testing.T) {
	_, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	_, err := Export(context.Background(), storeDeps(s), "shop", false)
	if err == nil || err.Error() != `app "shop" has no deployed release to export; deploy it first` {
		t.Fatalf("Export = %v", err)
	}
	if _, err := Export(context.Background(), storeDeps(s), "nope", false); !app.IsNotFound(err) {
		t.Errorf("Export(missing) = %v", err)
	}
}

// Exported without its config, an app whose config sets PORT gets a web
// container that listens on that port's probe and Service target, but no
// PORT variable at all (it came from the Secret): it never becomes ready.
func TestExportWithoutConfigKeepsPort(t *testing.T) {
	s := exportFixture(t, app.ConfigMap{"PORT": "5000"})
	e, err := Export(context.Background(), storeDeps(s), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	objs := e.Objects
	web := objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	if web.Ports[0].ContainerPort != 5000 {
		t.Fatalf("container port %d", web.Ports[0].ContainerPort)
	}
	for _, e := range web.Env {
		if e.Name == "PORT" {
			return
		}
	}
	t.Fatal("export.go Export: without includeConfig the web container has containerPort 5000 (from the config's PORT) but no PORT env: render.Release leaves PORT to the Secret, which the export leaves out, so the app listens on its own default and never passes the readiness probe")
}

// routedFixture is app shop in namespace dev routed through Gateway
// infra/router with its own URL and a domain, release 2 deployed and
// release 3 beside it as a canary of the given weight.
func routedFixture(t *testing.T, weight int) *app.Store {
	t.Helper()
	_, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Namespace: "dev", Release: 2, LastRelease: 3,
		Processes: map[string]app.Process{"web": {Replicas: 2}},
		Route:     &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", Token: "s3cret-token"},
		Domains:   []app.Domain{{Host: "shop.example.com"}},
		Canary:    &app.Canary{Release: 3, Weight: weight, Units: 1, Exact: true, Strategy: app.StrategyBlueGreen, Phase: app.CanaryRunning}})
	for v := 2; v <= 3; v++ {
		st := app.StatusDeployed
		if v == 3 {
			st = app.StatusCanary
		}
		seedRelease(t, s, &app.Release{Version: v, Image: fmt.Sprintf("shop:%d", v), Status: st, Processes: map[string]string{"web": "./serve"}}, nil)
	}
	return s
}

// An export is one release, the one that takes the requests, with a
// Service that selects units the export runs; its route carries neither
// the app's own URL nor its route token, so applied beside the app it
// takes nothing of the app's; its header says so.
func TestExportIsTheReleaseThatTakesTheRequests(t *testing.T) {
	for _, tt := range []struct {
		weight int
		want   string // the release exported
	}{{0, "2"}, {25, "2"}, {100, "3"}} {
		e, err := Export(context.Background(), storeDeps(routedFixture(t, tt.weight)), "shop", false)
		if err != nil {
			t.Fatal(err)
		}
		var deps, svcs []string
		var sel map[string]string
		var images []string
		for _, o := range e.Objects {
			switch o := o.(type) {
			case *appsv1.Deployment:
				deps = append(deps, o.Name+"@"+o.Spec.Template.Labels[kube.LabelRelease])
				images = append(images, o.Spec.Template.Spec.Containers[0].Image)
			case *corev1.Service:
				svcs, sel = append(svcs, o.Name), o.Spec.Selector
			case map[string]any:
				b, _ := json.Marshal(o)
				if strings.Contains(string(b), "shop-dev.apps.example.com") || strings.Contains(string(b), "s3cret-token") ||
					strings.Contains(string(b), route.ProbeKey("s3cret-token")) || strings.Contains(string(b), route.AnswerKey("s3cret-token")) {
					t.Errorf("weight %d: the exported route carries the app's own host or its token: %s", tt.weight, b)
				}
				if !strings.Contains(string(b), "shop.example.com") || strings.Contains(string(b), "track") {
					t.Errorf("weight %d: the exported route should keep the domain, to the web Service: %s", tt.weight, b)
				}
			}
		}
		if len(deps) != 1 || deps[0] != "shop-web@"+tt.want || len(svcs) != 1 || svcs[0] != "shop" {
			t.Errorf("weight %d: Deployments %v, Services %v; want shop-web of release %s and the web Service", tt.weight, deps, svcs, tt.want)
		}
		if r, ok := sel[kube.LabelRelease]; ok && r != tt.want {
			t.Errorf("weight %d: the web Service selects release %s, the export runs %s", tt.weight, r, tt.want)
		}
		if images[0] != "shop:"+tt.want {
			t.Errorf("weight %d: image %s", tt.weight, images[0])
		}
		h := strings.Join(e.Header(), "\n")
		if !strings.Contains(h, "release "+tt.want) || !strings.Contains(h, "config") || !strings.Contains(h, "own URL") {
			t.Errorf("weight %d: header\n%s", tt.weight, h)
		}
	}
}

// An app whose only host is its own URL exports no route: one without
// hostnames would take every host of the Gateway.
func TestExportLeavesOutARouteWithNoHostLeft(t *testing.T) {
	_, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Namespace: "dev", Release: 1, LastRelease: 1,
		Processes: map[string]app.Process{"web": {Replicas: 1}},
		Route:     &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", Token: "t"}})
	seedRelease(t, s, &app.Release{Version: 1, Image: "shop:1", Status: app.StatusDeployed, Processes: map[string]string{"web": ""}}, nil)
	e, err := Export(context.Background(), storeDeps(s), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range e.Objects {
		if m, ok := o.(map[string]any); ok && m["kind"] == "HTTPRoute" {
			t.Errorf("exported route %v", m)
		}
	}
	if h := strings.Join(e.Header(), "\n"); !strings.Contains(h, "no HTTPRoute") {
		t.Errorf("header\n%s", h)
	}
}
