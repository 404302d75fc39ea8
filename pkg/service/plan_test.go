package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
)

func TestBuiltinPostgresRendersNonRootStatefulSetPVCAndService(t *testing.T) {
	p := Builtin()[0]
	objs, err := p.Render(Params{Name: "db", Namespace: "ns", Object: ObjectName("db"), Version: "15", Image: "reg/pg@sha256:1", Size: "2Gi", Port: 5432, CredentialsSecret: CredentialsSecretName("db")})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, o := range objs {
		kinds[o.GetKind()] = o.GetName()
		if o.GetNamespace() != "ns" || o.GetLabels()[LabelService] != "db" || o.GetLabels()["app.kubernetes.io/managed-by"] != "tug" {
			t.Errorf("%s %s: namespace %q labels %v", o.GetKind(), o.GetName(), o.GetNamespace(), o.GetLabels())
		}
	}
	if kinds["StatefulSet"] != "tug-service-db" || kinds["Service"] != "tug-service-db" || kinds["PersistentVolumeClaim"] != "tug-service-db-data" {
		t.Fatalf("objects %v", kinds)
	}
	for _, o := range objs {
		if o.GetKind() != "StatefulSet" {
			continue
		}
		y := toYAML(t, o.Object)
		for _, want := range []string{"runAsNonRoot: true", "image: reg/pg@sha256:1", "pg_isready", "memory: 512Mi", "name: tug-service-db"} {
			if !strings.Contains(y, want) {
				t.Errorf("StatefulSet lacks %q:\n%s", want, y)
			}
		}
		if strings.Contains(y, "password:") {
			t.Errorf("a credential value in the spec:\n%s", y)
		}
	}
}

func TestBindingLayoutAndVariables(t *testing.T) {
	p := Builtin()[0]
	b, err := p.RenderBinding(BindingData{Name: "db", Host: "10.0.0.9", Port: 5432, Credentials: map[string]string{"username": "app", "password": "p@ss/w", "database": "app"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"type": "postgresql", "provider": "tug", "host": "10.0.0.9", "port": "5432", "username": "app", "database": "app",
		"password": "p@ss/w", "uri": "postgresql://app:p%40ss%2Fw@10.0.0.9:5432/app"}
	for k, v := range want {
		if b[k] != v {
			t.Errorf("%s = %q, want %q", k, b[k], v)
		}
	}
	if render.ServiceVariable("DATABASE", "uri") != "DATABASE_URL" || render.ServiceVariable("ORDERS", "host") != "ORDERS_HOST" || render.ServiceVariable("X", "type") != "" {
		t.Error("variable names")
	}
}

func TestParsePlanRefusesWhatCannotWork(t *testing.T) {
	good := string(postgresPlan)
	for name, data := range map[string]string{
		"unknown field":   good + "\nbogus: 1\n",
		"bad name":        strings.Replace(good, "name: postgres", "name: Post_gres", 1),
		"no versions":     strings.Replace(good, `versions: ["15", "16"]`, "versions: []", 1),
		"bad prefix":      strings.Replace(good, "envPrefix: DATABASE", "envPrefix: database", 1),
		"template error":  strings.Replace(good, "{{.Object}}-data\n  spec", "{{.Nope}}-data\n  spec", 1),
		"binding unknown": strings.Replace(good, `host: "{{.Host}}"`, `host: "{{.Credentials.nope}}"`, 1),
		"namespace given": strings.Replace(good, "name: {{.Object}}-data", "name: {{.Object}}-data\n    namespace: other", 1),
		"no kind":         strings.Replace(good, "kind: PersistentVolumeClaim", "", 1),
	} {
		_, err := ParsePlan([]byte(data))
		if err == nil || !inputerr.Is(err) {
			t.Errorf("%s: got %v, want an input error", name, err)
		}
	}
	if _, err := ParsePlan([]byte(good)); err != nil {
		t.Fatal(err)
	}
}

func TestVersionAndPrefix(t *testing.T) {
	p := Builtin()[0]
	if v, _ := p.Version(""); v != "15" {
		t.Errorf("default version %q", v)
	}
	if _, err := p.Version("9"); err == nil || !strings.Contains(err.Error(), "versions: 15, 16") {
		t.Errorf("got %v", err)
	}
	for _, bad := range []string{"orders", "1DB", "A-B", ""} {
		if ValidatePrefix(bad) == nil {
			t.Errorf("--as %q accepted", bad)
		}
	}
	if ValidatePrefix("ORDERS_DB") != nil {
		t.Error("ORDERS_DB refused")
	}
}

// A service named as another's objects end would collide with them.
func TestValidateNameRefusesObjectSuffixes(t *testing.T) {
	for _, bad := range []string{"db-binding", "db-data", "db-backup", "db-backups"} {
		if err := ValidateName(bad); !inputerr.Is(err) || !strings.Contains(err.Error(), `"db"`) {
			t.Errorf("ValidateName(%q) = %v, want an input error naming db", bad, err)
		}
	}
	if err := ValidateName("binding"); err != nil {
		t.Errorf("ValidateName(binding) = %v", err)
	}
}

// A user who may not read the published plans is told so, not that the
// plan does not exist.
func TestPlanOfAForbiddenCatalogSaysSo(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), PlansName, errors.New("no"))
	})
	cat, err := ReadCatalog(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Plan("redis"); !inputerr.Is(err) || !strings.Contains(err.Error(), "may not read") {
		t.Errorf("plan redis, catalog forbidden: %v", err)
	}
}
