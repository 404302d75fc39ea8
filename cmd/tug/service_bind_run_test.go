package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/service"
)

// boundFixture is app cart deployed at v1 beside service db (its record
// and binding) in namespace dev.
func boundFixture(t *testing.T) (*printerFixture, func(context.Context) (service.Deps, error)) {
	t.Helper()
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "cart", Release: 1, LastRelease: 1, Image: "registry.example/cart:1",
		Processes: map[string]app.Process{"web": {Replicas: 1}}})
	p.mustCreateRelease(t, &app.Release{App: "cart", Version: 1, Image: "registry.example/cart:1", Kind: app.KindDeploy,
		Status: app.StatusDeployed, Processes: map[string]string{"web": ""}}, app.ConfigMap{"A": "1"})
	rec, err := json.Marshal(service.Record{Name: "db", Plan: "postgres", Version: "15", Spec: service.Builtin()[0]})
	if err != nil {
		t.Fatal(err)
	}
	p.add(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName("db"), Namespace: "dev", Labels: service.Labels("db")}, Data: map[string]string{"service": string(rec)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: service.BindingSecretName("db"), Namespace: "dev", Labels: service.Labels("db")}, Type: "servicebinding.io/postgresql",
			Data: map[string][]byte{"type": []byte("postgresql"), "provider": []byte("tug"), "host": []byte("10.0.0.5"), "uri": []byte("postgresql://app:pw@10.0.0.5:5432/app")}})
	return p, func(context.Context) (service.Deps, error) {
		return service.Deps{Client: p.cs, Namespace: "dev", Holder: lock.Holder{User: "bob"}}, nil
	}
}

func lastRelease(t *testing.T, p *printerFixture, name string) *app.Release {
	t.Helper()
	a, err := p.store.GetApp(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := p.store.GetRelease(context.Background(), name, a.LastRelease)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bind rolls the app out with a release that binds the service (its
// variables named by --as); unbind rolls it out without it.
func TestRunServiceBindAndUnbind(t *testing.T) {
	ctx := context.Background()
	p, deps := boundFixture(t)
	ios, _, _, errOut := cli.TestIOStreams()
	roll := rolloutFlags{NoWait: true, Output: cli.OutputTable}
	bind := &serviceBindOptions{Changer: fixtureChanger(p, ios), Deps: deps, Rollout: roll, Bind: service.Bind{App: "cart", Service: "db", Prefix: "ORDERS"}}
	if err := runServiceBind(ctx, bind); err != nil {
		t.Fatalf("bind: %v\n%s", err, errOut)
	}
	r := lastRelease(t, p, "cart")
	if r.Version != 2 || len(r.Services) != 1 || r.Services[0].Service != "db" || r.Services[0].Prefix != "ORDERS" || r.Kind != app.KindService {
		t.Fatalf("release after bind: v%d %+v", r.Version, r.Services)
	}
	if !strings.Contains(errOut.String(), "service db bound") {
		t.Errorf("stderr %q", errOut)
	}
	if err := runServiceBind(ctx, bind); err == nil || !inputerr.Is(err) {
		t.Errorf("bind again: %v, want an input error", err)
	}
	unbind := &serviceUnbindOptions{Changer: fixtureChanger(p, ios), Rollout: roll, App: "cart", Service: "db"}
	if err := runServiceUnbind(ctx, unbind); err != nil {
		t.Fatalf("unbind: %v\n%s", err, errOut)
	}
	if r := lastRelease(t, p, "cart"); r.Version != 3 || len(r.Services) != 0 {
		t.Errorf("release after unbind: v%d %+v", r.Version, r.Services)
	}
	if err := runServiceUnbind(ctx, unbind); !inputerr.Is(err) || !strings.Contains(err.Error(), `service "db" is not bound to app "cart"`) {
		t.Errorf("unbind again: %v", err)
	}
	if r := lastRelease(t, p, "cart"); r.Version != 3 {
		t.Errorf("a refused unbind made v%d", r.Version)
	}
}

// A bind of a service that is not there, or a dry run, makes no release.
func TestRunServiceBindChangesNothingWhenItCannot(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[string]serviceBindOptions{
		"a missing service": {Bind: service.Bind{App: "cart", Service: "nope"}},
		"a dry run":         {Bind: service.Bind{App: "cart", Service: "db"}, Rollout: rolloutFlags{DryRun: true}},
	} {
		t.Run(name, func(t *testing.T) {
			p, deps := boundFixture(t)
			ios, _, _, _ := cli.TestIOStreams()
			o.Changer, o.Deps = fixtureChanger(p, ios), deps
			o.Rollout.NoWait, o.Rollout.Output = true, cli.OutputTable
			err := runServiceBind(ctx, &o)
			if o.Rollout.DryRun && err != nil {
				t.Fatalf("dry run: %v", err)
			}
			if !o.Rollout.DryRun && !inputerr.Is(err) {
				t.Fatalf("bind: %v, want an input error", err)
			}
			if r := lastRelease(t, p, "cart"); r.Version != 1 {
				t.Errorf("made release v%d", r.Version)
			}
		})
	}
}
