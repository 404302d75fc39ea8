package review

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/service"
	"tug.dev/tug/pkg/session"
)

// dumpExec is the services' units: pg_dump prints a dump, pg_restore
// keeps what it was fed, and each command's pod is kept.
type dumpExec struct {
	mu       sync.Mutex
	pods     []string
	restored string
}

func (e *dumpExec) Exec(_ context.Context, t session.Target, argv []string, s session.Streams) error {
	cmd := strings.Join(argv, " ")
	switch {
	case strings.Contains(cmd, "pg_dump"):
		_, _ = io.WriteString(s.Stdout, "PGDMP of db")
	case strings.Contains(cmd, "pg_restore"):
		b, _ := io.ReadAll(s.Stdin)
		e.mu.Lock()
		e.restored = string(b)
		e.mu.Unlock()
	}
	e.mu.Lock()
	e.pods = append(e.pods, t.Pod)
	e.mu.Unlock()
	return nil
}

func (e *dumpExec) Attach(context.Context, session.Target, session.Streams) error { return nil }

// runningService gives service name a ready unit and a Service with a
// cluster IP, as its StatefulSet and the cluster would.
func runningService(t *testing.T, c *fake.Clientset, name, ip string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName(name) + "-0", Namespace: "dev", Labels: service.Labels(name)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName(name), Namespace: "dev"}, Spec: corev1.ServiceSpec{ClusterIP: ip}}
	if _, err := c.CoreV1().Pods("dev").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Services("dev").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A review up with --fork-service makes the review app's own database,
// fills it with a dump of the app's, and binds it with the app's prefix;
// a second up keeps the data the review app wrote and binds nothing again.
func TestUpMakesForksAndBindsTheReviewsOwnDatabase(t *testing.T) {
	ctx := context.Background()
	c, s := shopWithServices(t)
	// the app's db as tug runs it: with its plan, a unit and a Service
	b, _ := json.Marshal(service.Record{Name: "db", Plan: "postgres", Version: "15", Spec: service.Builtin()[0]})
	cm, _ := c.CoreV1().ConfigMaps("dev").Get(ctx, service.ObjectName("db"), metav1.GetOptions{})
	cm.Data = map[string]string{"service": string(b)}
	if _, err := c.CoreV1().ConfigMaps("dev").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningService(t, c, "db", "10.0.0.5")
	runningService(t, c, "shop-pr-1-db", "10.0.0.6")
	base, _ := s.GetApp(ctx, "shop")
	svcs, err := CheckServices(ctx, s, base, "shop-pr-1", []string{"db"})
	if err != nil {
		t.Fatal(err)
	}
	ex := &dumpExec{}
	var notes []string
	holder := lock.Holder{User: "alice"}
	d := deploy.Deps{Client: c, Namespace: "dev", Progress: progress.Nop{}, Holder: holder}
	o := UpOptions{Of: "shop", Name: "pr-1", TTL: time.Hour, Now: time.Now(), Services: svcs[:1],
		ServiceDeps: service.Deps{Client: c, Dynamic: kubetest.ApplyingDynamic(), Namespace: "dev", Progress: progress.Nop{}, Exec: ex, Holder: holder},
		Note:        func(n string) { notes = append(notes, n) }}
	if _, err := Up(ctx, d, o); err != nil {
		t.Fatal(err)
	}
	rec, err := service.Lookup(ctx, c, "dev", "shop-pr-1-db")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Review == nil || rec.Review.App != "shop-pr-1" || rec.Review.Base != "db" || rec.Review.ForkedFrom == nil || rec.Review.ForkedFrom.Service != "db" {
		t.Errorf("the review's copy: %+v", rec.Review)
	}
	if ex.restored != "PGDMP of db" || strings.Join(ex.pods, ",") != "tug-service-db-0,tug-service-shop-pr-1-db-0" {
		t.Errorf("restored %q, ran in %v", ex.restored, ex.pods)
	}
	binding := func() (int, []app.ServiceBinding) {
		a, err := s.GetApp(ctx, "shop-pr-1")
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := s.GetRelease(ctx, a.Name, a.LastRelease)
		if err != nil {
			t.Fatal(err)
		}
		return a.LastRelease, r.Services
	}
	last, bound := binding()
	if len(bound) != 1 || bound[0].Service != "shop-pr-1-db" || bound[0].Prefix != "DATABASE" || bound[0].BindingDir() != "db" {
		t.Errorf("the review app binds %+v", bound)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "service shop-pr-1-db forked from a dump of service db") {
		t.Errorf("notes %q", notes)
	}

	notes = nil
	ex.pods = nil
	if _, err := Up(ctx, d, o); err != nil {
		t.Fatal(err)
	}
	if len(ex.pods) != 0 || !strings.Contains(strings.Join(notes, "\n"), "keeps its data") {
		t.Errorf("a second up forked again: ran in %v, notes %q", ex.pods, notes)
	}
	if again, _ := binding(); again != last {
		t.Errorf("a second up made release %d over %d", again, last)
	}

	// down removes the review app's copy, never the app's db
	removed, err := Down(ctx, d, o.ServiceDeps, "shop", "pr-1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"shop-pr-1-db"}) {
		t.Errorf("down says it removed services %v, want the review's copy", removed)
	}
	if _, err := service.Lookup(ctx, c, "dev", "shop-pr-1-db"); err == nil {
		t.Errorf("the review's copy is left after down (removed %v)", removed)
	}
	if _, err := service.Lookup(ctx, c, "dev", "db"); err != nil {
		t.Errorf("the app's db after down: %v", err)
	}
}
