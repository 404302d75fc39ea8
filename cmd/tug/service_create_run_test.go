package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/service"
)

// applying has the fixture's dynamic client server-side-apply by making
// or replacing the object (the fake tracker applies only what exists).
func (f *serviceFixture) applying(t *testing.T) {
	t.Helper()
	dyn := kubetest.ApplyingDynamic()
	d, _ := f.deps(context.Background())
	d.Dynamic = dyn
	f.deps = func(context.Context) (service.Deps, error) { return d, nil }
}

func TestRunServiceCreateExternal(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	o := &serviceCreateOptions{IO: f.ios, Deps: f.deps, CommandName: "tug", URI: "postgres://u:pw@db.example:5432/shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	o.Name = "legacy"
	if err := runServiceCreate(ctx, o); err != nil {
		t.Fatal(err)
	}
	if f.out.String() != "service \"legacy\" is ready; bind it to an app with 'tug service bind APP legacy'\n" || !strings.Contains(f.errOut.String(), "service legacy (external, postgresql) recorded") {
		t.Errorf("stdout %q stderr %q", f.out, f.errOut)
	}
	b, err := f.client.CoreV1().Secrets("dev").Get(ctx, service.BindingSecretName("legacy"), metav1.GetOptions{})
	if err != nil || string(b.Data["host"]) != "db.example" {
		t.Fatalf("binding %v", err)
	}
	o.URI = "postgres://u:other@db.example:5432/shop"
	if err := runServiceCreate(ctx, o); !inputerr.Is(err) || !strings.Contains(err.Error(), "service update legacy --uri") {
		t.Errorf("create again with another URI: %v", err)
	}
}

// A service whose unit crashes fails the create with the unit's last log
// lines on stderr, and nothing on stdout.
func TestRunServiceCreateShowsACrashsLogs(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	f.applying(t)
	crashing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-orders-0", Namespace: "dev", Labels: service.Labels("orders")},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres", RestartCount: 3,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}}}
	if _, err := f.client.CoreV1().Pods("dev").Create(ctx, crashing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := &serviceCreateOptions{IO: f.ios, Deps: f.deps, CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}
	o.CreateOptions = service.CreateOptions{Name: "orders", Plan: "postgres", Timeout: time.Minute}
	err := runServiceCreate(ctx, o)
	var failed *rollout.Failure
	if !errors.As(err, &failed) || failed.Class != rollout.ClassCrash {
		t.Fatalf("create of a crashing service: %v", err)
	}
	if !strings.Contains(f.errOut.String(), "  | fake logs") || !strings.Contains(f.errOut.String(), "service orders did not start") || f.out.String() != "" {
		t.Errorf("stdout %q stderr %q", f.out, f.errOut)
	}
}

// An update of an external service's URI with no app bound rewrites the
// binding and rolls out nothing; of a tug-run service it is refused.
func TestRunServiceUpdate(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	d, _ := f.deps(ctx)
	if _, err := service.CreateExternal(ctx, d, "legacy", "postgres://u:pw@db.example:5432/shop"); err != nil {
		t.Fatal(err)
	}
	o := &serviceUpdateOptions{IO: f.ios, Deps: f.deps, Name: "legacy", URI: "postgres://u:new@db.example:5432/shop"}
	if err := runServiceUpdate(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.errOut.String(), "service legacy has its new URI; no app is bound") {
		t.Errorf("stderr %q", f.errOut)
	}
	b, _ := f.client.CoreV1().Secrets("dev").Get(ctx, service.BindingSecretName("legacy"), metav1.GetOptions{})
	if string(b.Data["password"]) != "new" {
		t.Errorf("binding %v", b.Data)
	}
	o.Name = "db"
	if err := runServiceUpdate(ctx, o); !inputerr.Is(err) || !strings.Contains(err.Error(), "tug service rotate db") {
		t.Errorf("update of a tug-run service: %v", err)
	}
}

func TestRunServiceRotateWithNoAppBound(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	for _, obj := range []runtime.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: service.CredentialsSecretName("db"), Namespace: "dev", Labels: service.Labels("db")},
			Data: map[string][]byte{"username": []byte("app"), "password": []byte("s3cret"), "database": []byte("app")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName("db"), Namespace: "dev"}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.5"}},
	} {
		if err := f.client.Tracker().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	o := &serviceRotateOptions{IO: f.ios, Deps: f.deps, Name: "db", Rollout: rolloutFlags{Output: cli.OutputTable}}
	if err := runServiceRotate(ctx, o); err != nil {
		t.Fatal(err)
	}
	if f.out.String() != "service \"db\" has new credentials; no app was bound\n" {
		t.Errorf("stdout %q", f.out)
	}
	b, _ := f.client.CoreV1().Secrets("dev").Get(ctx, service.BindingSecretName("db"), metav1.GetOptions{})
	if string(b.Data["password"]) == "s3cret" {
		t.Error("the binding still holds the old password")
	}
	if !strings.Contains(f.errOut.String(), "service db: apps use login") {
		t.Errorf("stderr %q", f.errOut)
	}
}
