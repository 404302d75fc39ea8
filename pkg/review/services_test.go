package review

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/service"
)

// shopWithServices is app shop deployed with service db (tug's) and
// legacy (external) bound.
func shopWithServices(t *testing.T) (*fake.Clientset, *app.Store) {
	t.Helper()
	ctx := context.Background()
	c := fake.NewClientset()
	s := &app.Store{Client: c, Namespace: "dev"}
	base := &app.App{Name: "shop", Namespace: "dev", Release: 1, LastRelease: 1, Image: "reg/shop@sha256:" + strings.Repeat("a", 64),
		Processes: map[string]app.Process{"web": {Replicas: 1}}}
	if err := s.CreateApp(ctx, base); err != nil {
		t.Fatal(err)
	}
	r := &app.Release{App: "shop", Version: 1, Image: base.Image, Processes: map[string]string{"web": "serve"}, Status: app.StatusDeployed, Kind: app.KindDeploy,
		Services: []app.ServiceBinding{{Service: "db", Prefix: "DATABASE", Type: "postgresql", Keys: []string{"uri"}}, {Service: "legacy", Prefix: "LEGACY", Type: "postgresql", Keys: []string{"uri"}}}}
	if err := s.CreateRelease(ctx, r, app.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	for _, rec := range []service.Record{{Name: "db", Plan: "postgres", Version: "15"}, {Name: "legacy", Plan: "external", External: true}} {
		b, _ := json.Marshal(rec)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName(rec.Name), Namespace: "dev", Labels: service.Labels(rec.Name)},
			Data: map[string]string{"service": string(b)}}
		if _, err := c.CoreV1().ConfigMaps("dev").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return c, s
}

// --fork-service must name a service bound to the app that tug runs: an
// input error otherwise, before anything changes.
func TestCheckServices(t *testing.T) {
	ctx := context.Background()
	_, s := shopWithServices(t)
	base, err := s.GetApp(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, forks := range [][]string{{"nosuch"}, {"legacy"}} {
		if _, err := CheckServices(ctx, s, base, "shop-pr-1", forks); err == nil || !inputerr.Is(err) {
			t.Errorf("--fork-service %v: %v, want an input error", forks, err)
		}
	}
	// a service of the review's copy's name that is not the review's
	b, _ := json.Marshal(service.Record{Name: "shop-pr-3-db", Plan: "postgres"})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName("shop-pr-3-db"), Namespace: "dev", Labels: service.Labels("shop-pr-3-db")},
		Data: map[string]string{"service": string(b)}}
	if _, err := s.Client.CoreV1().ConfigMaps("dev").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckServices(ctx, s, base, "shop-pr-3", nil); err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "is not review app") {
		t.Errorf("a service in the way of the review's copy: %v, want an input error", err)
	}
	svcs, err := CheckServices(ctx, s, base, "shop-pr-1", []string{"db"})
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 2 || svcs[0].Name != "shop-pr-1-db" || !svcs[0].Fork || svcs[0].Plan != "postgres" || svcs[0].Version != "15" ||
		!svcs[1].External || svcs[1].Name != "" || svcs[1].Fork {
		t.Errorf("services: %+v", svcs)
	}
}

// A --review-override of a variable a binding the review app gets sets
// is refused: its database copy's always, an external service's only with
// --copy-config (without it the review app is not bound to it).
func TestCheckOverridesRefusesBindingVariables(t *testing.T) {
	ctx := context.Background()
	_, s := shopWithServices(t)
	base, _ := s.GetApp(ctx, "shop")
	svcs, err := CheckServices(ctx, s, base, "shop-pr-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key        string
		copyConfig bool
		refused    bool
	}{
		{"DATABASE_URL", false, true}, {"DATABASE_URL", true, true},
		{"LEGACY_URL", false, false}, {"LEGACY_URL", true, true},
		{"PAYMENTS_API_KEY", true, false},
	} {
		err := CheckOverrides(svcs, app.ConfigMap{tc.key: "x"}, tc.copyConfig)
		if got := err != nil; got != tc.refused || (err != nil && !inputerr.Is(err)) {
			t.Errorf("--review-override %s (copy config %v): %v; want refused %v, as bad input", tc.key, tc.copyConfig, err, tc.refused)
		}
	}
}

// The review app's first release never binds the app's services; an
// external one only with --copy-config, and that is said either way.
func TestUpNeverBindsTheAppsServices(t *testing.T) {
	ctx := context.Background()
	for _, copyConfig := range []bool{false, true} {
		c, s := shopWithServices(t)
		base, _ := s.GetApp(ctx, "shop")
		svcs, err := CheckServices(ctx, s, base, "shop-pr-1", nil)
		if err != nil {
			t.Fatal(err)
		}
		var notes []string
		// the external service alone: making tug's needs a real cluster (e2e)
		o := UpOptions{Of: "shop", Name: "pr-1", TTL: time.Hour, Now: time.Now(), CopyConfig: copyConfig, Services: svcs[1:],
			Note: func(n string) { notes = append(notes, n) }}
		a, err := Up(ctx, deploy.Deps{Client: c, Namespace: "dev"}, o)
		if err != nil {
			t.Fatal(err)
		}
		a, _ = s.GetApp(ctx, a.Name)
		r, _, err := s.GetRelease(ctx, a.Name, a.LastRelease)
		if err != nil {
			t.Fatal(err)
		}
		var bound []string
		for _, b := range r.Services {
			bound = append(bound, b.Service)
		}
		want := ""
		if copyConfig {
			want = "legacy"
		}
		if strings.Join(bound, ",") != want || !strings.Contains(strings.Join(notes, "\n"), "external service legacy") {
			t.Errorf("--copy-config=%v: the review app binds %v, want %q; notes %q", copyConfig, bound, want, notes)
		}
	}
}

// The sweep removes the services of a review whose app is gone, and no
// other service.
func TestSweepRemovesOrphanedReviewServices(t *testing.T) {
	ctx := context.Background()
	c, _ := shopWithServices(t)
	for _, rec := range []service.Record{
		{Name: "shop-pr-9-db", Plan: "postgres", Spec: service.Builtin()[0], Size: "1Gi", Review: &service.ReviewOwner{Of: "shop", Name: "pr-9", App: "shop-pr-9", Base: "db"}},
	} {
		b, _ := json.Marshal(rec)
		l := service.Labels(rec.Name)
		l[app.LabelReviewOf], l[app.LabelReview] = "shop", "pr-9"
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName(rec.Name), Namespace: "dev", Labels: l},
			Data: map[string]string{"service": string(b)}}
		if _, err := c.CoreV1().ConfigMaps("dev").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := deploy.Deps{Client: c, Namespace: "dev"}
	sd := service.Deps{Client: c, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Namespace: "dev", Progress: progress.Nop{}, Holder: lock.Holder{User: "alice"}}
	if _, err := Sweep(ctx, d, sd, time.Now()); err != nil {
		t.Fatal(err)
	}
	cms, err := c.CoreV1().ConfigMaps("dev").List(ctx, metav1.ListOptions{LabelSelector: service.Selector("")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, cm := range cms.Items {
		left = append(left, cm.Labels[service.LabelService])
	}
	if strings.Join(left, ",") != "db,legacy" {
		t.Errorf("services left after the sweep: %v, want the app's db and legacy", left)
	}
}
