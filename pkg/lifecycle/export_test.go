package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/app"
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
	objs, err := Export(context.Background(), s, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
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
	objs, err := Export(context.Background(), s, "shop", true)
	if err != nil {
		t.Fatal(err)
	}
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
	_, err := Export(context.Background(), s, "shop", false)
	if err == nil || err.Error() != `app "shop" has no deployed release to export; deploy it first` {
		t.Fatalf("Export = %v", err)
	}
	if _, err := Export(context.Background(), s, "nope", false); !app.IsNotFound(err) {
		t.Errorf("Export(missing) = %v", err)
	}
}

// Exported without its config, an app whose config sets PORT gets a web
// container that listens on that port's probe and Service target, but no
// PORT variable at all (it came from the Secret): it never becomes ready.
func TestExportWithoutConfigKeepsPort(t *testing.T) {
	s := exportFixture(t, app.ConfigMap{"PORT": "5000"})
	objs, err := Export(context.Background(), s, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
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
