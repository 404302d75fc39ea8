package metrics

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/metrics/metricstest"
)

func TestPodUsageSumsContainersWithOneList(t *testing.T) {
	var path, sel string
	c := metricstest.New(fake.NewClientset(), func(r *http.Request) (int, string) {
		path, sel = r.URL.Path, r.URL.Query().Get("labelSelector")
		return 200, `{"items":[{"metadata":{"name":"a"},"containers":[{"usage":{"cpu":"250m","memory":"10Mi"}},{"usage":{"cpu":"1500000n","memory":"1Ki"}}]},
			{"metadata":{"name":"b"},"containers":[{"usage":{"cpu":"1","memory":"1Gi"}}]}]}`
	})
	got, err := FromClient(c).PodUsage(context.Background(), "dev", "tug.dev/app=shop")
	if err != nil {
		t.Fatal(err)
	}
	if path != "/apis/metrics.k8s.io/v1beta1/namespaces/dev/pods" || sel != "tug.dev/app=shop" || c.Requests.Load() != 1 {
		t.Errorf("asked %s ?labelSelector=%s (%d requests)", path, sel, c.Requests.Load())
	}
	// 1500000n is 1.5m: rounded up to 2m by MilliValue
	if a := got["a"]; a.CPU != 252 || a.Memory != 10<<20+1<<10 {
		t.Errorf("a = %+v", a)
	}
	if b := got["b"]; b.CPU != 1000 || b.Memory != 1<<30 {
		t.Errorf("b = %+v", b)
	}
}

func TestPodUsageSaysWhyUnknown(t *testing.T) {
	for _, c := range []struct {
		code   int
		reason string
		want   string
	}{
		{404, "NotFound", NotServed},
		{503, "ServiceUnavailable", NotServed},
		{403, "Forbidden", Forbidden},
		{500, "InternalError", Failed},
	} {
		cl := metricstest.New(fake.NewClientset(), func(*http.Request) (int, string) {
			return c.code, metricstest.Status(c.code, c.reason, "no")
		})
		_, err := FromClient(cl).PodUsage(context.Background(), "dev", "")
		u, ok := AsUnavailable(err)
		if !ok || u.Reason != c.want || !strings.HasPrefix(u.Hint(), "cpu and memory unknown: ") {
			t.Errorf("%d: %v (%+v), want reason %s", c.code, err, u, c.want)
		}
	}
	// metrics-server refusing the API server's proxied request as anonymous
	cl := metricstest.New(fake.NewClientset(), func(*http.Request) (int, string) {
		return 403, metricstest.Status(403, "Forbidden", `pods.metrics.k8s.io is forbidden: User \"system:anonymous\" cannot list`)
	})
	if _, err := FromClient(cl).PodUsage(context.Background(), "dev", ""); !strings.Contains(err.Error(), "aggregation layer is not set up") {
		t.Errorf("anonymous at metrics-server: %v", err)
	}
	// a fake clientset has no REST client: not served, not a panic
	if _, err := FromClient(fake.NewClientset()).PodUsage(context.Background(), "dev", ""); err == nil {
		t.Error("no REST client: want an error")
	} else if u, _ := AsUnavailable(err); u == nil || u.Reason != NotServed {
		t.Errorf("no REST client: %v", err)
	}
}

func TestFetchAttachesByName(t *testing.T) {
	c := metricstest.New(fake.NewClientset(), func(*http.Request) (int, string) {
		return 200, metricstest.PodMetrics(map[string][2]string{"u1": {"30m", "64Mi"}})
	})
	units := []app.Unit{{Name: "u1", UnitUsage: app.UnitUsage{CPULimit: 200, MemoryLimit: 256 << 20}}, {Name: "u2"}}
	use, stop := Fetch(context.Background(), FromClient(c), "dev", "x")
	defer stop()
	if miss := use(units); miss != nil {
		t.Fatal(miss)
	}
	if CPUCell(units[0].UnitUsage) != "30m (15%)" || MemoryCell(units[0].UnitUsage) != "64Mi (25%)" {
		t.Errorf("u1: %s %s", CPUCell(units[0].UnitUsage), MemoryCell(units[0].UnitUsage))
	}
	if CPUCell(units[1].UnitUsage) != "-" || MemoryCell(units[1].UnitUsage) != "-" {
		t.Errorf("u2 (not in the metrics yet): %s %s", CPUCell(units[1].UnitUsage), MemoryCell(units[1].UnitUsage))
	}
	if MemoryString(512<<10) != "512Ki" {
		t.Error(MemoryString(512 << 10))
	}
}

func TestSelector(t *testing.T) {
	for o, want := range map[app.ListUnitsOptions]string{
		{App: "shop"}:                 "app.kubernetes.io/managed-by=tug,tug.dev/app=shop",
		{App: "shop", Process: "web"}: "app.kubernetes.io/managed-by=tug,tug.dev/app=shop,tug.dev/process=web",
		{App: "shop", Process: "run"}: "app.kubernetes.io/managed-by=tug,tug.dev/app=shop",
		{All: true}:                   "app.kubernetes.io/managed-by=tug",
	} {
		if got := Selector(o); got != want {
			t.Errorf("%+v: %s, want %s", o, got, want)
		}
	}
}
