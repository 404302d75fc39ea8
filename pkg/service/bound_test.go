package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// runningWithBinding is app shop's Deployment whose units read service
// db's binding (a bind rolling out: its release is not the deployed one).
func runningWithBinding(t *testing.T, c *fake.Clientset) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: testNS, Labels: kube.AppLabels("shop")},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web",
			Env: []corev1.EnvVar{{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: BindingSecretName("db")}, Key: "uri"}}}}}}}}}}
	if _, err := c.AppsV1().Deployments(testNS).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pendingRelease is app shop, deployed at release 1 (no service), with
// release 2 binding db not rolled out yet (or left pending by a kill).
func pendingRelease(t *testing.T, c *fake.Clientset) {
	t.Helper()
	ctx := context.Background()
	store := &app.Store{Client: c, Namespace: testNS}
	if err := store.CreateApp(ctx, &app.App{Name: "shop", Namespace: testNS, Release: 1, LastRelease: 2}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*app.Release{{App: "shop", Version: 1, Image: "img"},
		{App: "shop", Version: 2, Image: "img", Services: []app.ServiceBinding{{Service: "db", Prefix: "DATABASE", Type: "postgresql", Keys: []string{"uri"}}}}} {
		if err := store.CreateRelease(ctx, r, app.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRemoveRefusedWhileABindIsRollingOut(t *testing.T) {
	for name, setup := range map[string]func(*testing.T, *fake.Clientset){"units read the binding": runningWithBinding, "newest release binds": pendingRelease} {
		t.Run(name, func(t *testing.T) {
			c, d, _ := postgresService(t, "app", "p1", nil)
			setup(t, c)
			_, err := Remove(context.Background(), d, "db", false)
			var inUse *InUseError
			if !errors.As(err, &inUse) || !slices.Equal(inUse.Apps, []string{"shop"}) {
				t.Fatalf("remove: %v, want refused as bound to shop", err)
			}
			if _, err := readRecord(context.Background(), c, testNS, "db"); err != nil {
				t.Errorf("the record after a refused remove: %v", err)
			}
		})
	}
}

func TestRotateRollsOutAnAppWhoseBindIsRollingOut(t *testing.T) {
	for name, setup := range map[string]func(*testing.T, *fake.Clientset){"units read the binding": runningWithBinding, "newest release binds": pendingRelease} {
		t.Run(name, func(t *testing.T) {
			c, d, _ := postgresService(t, "app", "p1", nil)
			setup(t, c)
			var restarted []string
			res, err := Rotate(context.Background(), d, "db", func(_ context.Context, a string) error {
				restarted = append(restarted, a)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(restarted, []string{"shop"}) || !slices.Equal(res.Apps, []string{"shop"}) {
				t.Errorf("restarted %v (result %v), want shop before the old login is revoked", restarted, res.Apps)
			}
		})
	}
}

// A bind whose variables the app's config already sets is bad input,
// nothing made; with --as another prefix it binds.
func TestBindRefusedWhenTheConfigSetsAVariableOfTheBinding(t *testing.T) {
	ctx := context.Background()
	c, d, _ := postgresService(t, "app", "p1", nil)
	if err := d.writeBinding(ctx, mustRecord(t, c)); err != nil {
		t.Fatal(err)
	}
	a := &app.App{Name: "shop", Release: 1}
	base := &app.Release{App: "shop", Version: 1, Image: "img"}
	config := app.ConfigMap{"DATABASE_URL": "postgres://elsewhere"}
	_, _, err := BindChange(ctx, d, Bind{App: "shop", Service: "db"})(a, base, config)
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "DATABASE_URL") || !strings.Contains(err.Error(), "env unset shop DATABASE_URL") {
		t.Fatalf("bind over the config's DATABASE_URL: %v, want an input error naming it", err)
	}
	r, _, err := BindChange(ctx, d, Bind{App: "shop", Service: "db", Prefix: "ORDERS"})(a, base, config)
	if err != nil || len(r.Services) != 1 {
		t.Fatalf("bind --as ORDERS: %v", err)
	}
}

func mustRecord(t *testing.T, c *fake.Clientset) *Record {
	t.Helper()
	r, err := readRecord(context.Background(), c, testNS, "db")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// remove says it kept the data volume only when there is one.
func TestRemoveSaysKeptOnlyWhatExists(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	d.Dynamic = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	res, err := Remove(context.Background(), d, "db", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kept) != 0 {
		t.Errorf("kept %v of a service that has no volume", res.Kept)
	}
	if _, err := readRecord(context.Background(), c, testNS, "db"); !inputerr.Is(err) {
		t.Errorf("record after remove: %v", err)
	}
}

// A remove without --delete-data refuses, before deleting anything, a
// plan whose volumes it cannot keep: an operator's object owns them, or a
// StatefulSet deletes its claims with it. The built-in plan passes.
func TestRemoveKeepsDataOnlyWhereItCan(t *testing.T) {
	objs, err := Builtin()[0].Render(Params{Name: "db", Namespace: "ns", Object: ObjectName("db"), Version: "15", Image: "reg/pg@sha256:1", Size: "2Gi", Port: 5432, CredentialsSecret: CredentialsSecretName("db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := keepsData("db", objs); err != nil {
		t.Fatalf("the built-in plan keeps its volume: %v", err)
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": map[string]any{"name": "db"}}}
	if err := keepsData("db", append(objs, cluster)); !inputerr.Is(err) || !strings.Contains(err.Error(), "--delete-data") {
		t.Errorf("an operator's Cluster: %v", err)
	}
	for _, o := range objs {
		if o.GetKind() == "StatefulSet" {
			if err := unstructured.SetNestedField(o.Object, "Delete", "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := keepsData("db", objs); !inputerr.Is(err) {
		t.Errorf("a StatefulSet that deletes its claims: %v", err)
	}
}

// The claims a StatefulSet made from its templates are kept, and with
// them the credentials their data was made with.
func TestRemoveKeepsTemplateClaimsAndTheirCredentials(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	d.Dynamic = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-tug-service-db-0", Namespace: testNS, Labels: map[string]string{LabelService: "db"}}}
	if _, err := c.CoreV1().PersistentVolumeClaims(testNS).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := Remove(context.Background(), d, "db", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PersistentVolumeClaim data-tug-service-db-0", "Secret " + CredentialsSecretName("db")}
	if strings.Join(res.Kept, "|") != strings.Join(want, "|") {
		t.Errorf("kept %v, want %v", res.Kept, want)
	}
}

// An app whose only release binding the service never ran (its first
// deploy failed) is not rolled out by a rotate: it has no unit, and its
// first units will read the new login. The rotate finishes.
func TestRotateSkipsAnAppThatNeverRan(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	store := &app.Store{Client: c, Namespace: testNS}
	if err := store.CreateApp(ctx, &app.App{Name: "shop", Namespace: testNS, LastRelease: 1}); err != nil {
		t.Fatal(err)
	}
	r := &app.Release{App: "shop", Version: 1, Image: "img", Status: app.StatusFailed, Services: []app.ServiceBinding{{Service: "db", Prefix: "DATABASE", Type: "postgresql", Keys: []string{"uri"}}}}
	if err := store.CreateRelease(ctx, r, app.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	res, err := Rotate(ctx, d, "db", func(_ context.Context, a string) error {
		return fmt.Errorf("app %s has no release to restart", a)
	})
	if err != nil {
		t.Fatalf("rotate with an app that never ran: %v", err)
	}
	if len(res.Apps) != 0 {
		t.Errorf("rolled out %v", res.Apps)
	}
}
