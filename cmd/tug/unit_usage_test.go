package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cli/clitest"
	"tug.dev/tug/pkg/metrics/metricstest"
)

// usageFixture is unitsFixture whose cluster serves the metrics API with h;
// the first web unit has limits.
func usageFixture(t *testing.T, h metricstest.Handler) (*printerFixture, *metricstest.Client) {
	t.Helper()
	p := unitsFixture(t)
	ctx := context.Background()
	pod, err := p.cs.CoreV1().Pods("dev").Get(ctx, "shop-web-7d9f-a1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
	}
	if _, err := p.cs.CoreV1().Pods("dev").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return p, metricstest.New(p.cs, h)
}

// runWith is printerFixture.run against client.
func (p *printerFixture) runWith(t *testing.T, client kubernetes.Interface, tty bool, args ...string) result {
	t.Helper()
	isolate(t)
	t.Setenv("TUG_CONFIG", filepath.Join(t.TempDir(), "tug.yaml"))
	ios, _, out, errOut := cli.TestIOStreams()
	ios.SetStdoutTTY(tty)
	ios.SetColorDisabled(true)
	f := cli.NewFactory(ios, "tug")
	f.KubeClientFunc = func() (kubernetes.Interface, error) { return client, nil }
	return executeWith(f, out, errOut, append([]string{"--kubeconfig", p.kubeconfig}, args...)...)
}

func servedUsage(r *http.Request) (int, string) {
	return 200, metricstest.PodMetrics(map[string][2]string{
		"shop-web-7d9f-a1":   {"125m", "64Mi"},
		"shop-web-7d9f-b2":   {"3m", "300Mi"},
		"shop-worker-5c4-x2": {"40m", "12Mi"},
		"blog-web-1":         {"1", "1Gi"}, // another app's: not listed
	})
}

func TestUnitListShowsUsageWithOneMoreRequest(t *testing.T) {
	p, c := usageFixture(t, servedUsage)
	r := p.runWith(t, c, true, "unit", "list", "shop")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	clitest.Golden(t, "unit-list-usage-tty", []byte(p.scrub(r.stdout)))
	if strings.Contains(r.stderr, "unknown") {
		t.Errorf("a served metrics API needs no hint: %q", r.stderr)
	}
	if n := c.Requests.Load(); n != 1 {
		t.Errorf("%d requests to the metrics API, want one LIST", n)
	}
	r = p.runWith(t, c, false, "unit", "list", "shop", "-o", "json")
	for _, want := range []string{`"cpu": 125,`, `"memory": 67108864,`, `"cpuLimit": 500,`, `"memoryLimit": 268435456`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("-o json lacks %s:\n%s", want, r.stdout)
		}
	}
	if strings.Count(r.stdout, `"cpu"`) != 3 {
		t.Errorf("want cpu on the three units the metrics know, got:\n%s", r.stdout)
	}
}

func TestUnitListWithoutMetricsSaysSoAndSucceeds(t *testing.T) {
	for _, c := range []struct {
		code int
		hint string
	}{
		{404, "does not serve the metrics API"},
		{503, "does not serve the metrics API"},
		{403, "you may not read the metrics API"},
	} {
		p, cl := usageFixture(t, func(*http.Request) (int, string) {
			return c.code, metricstest.Status(c.code, "x", "no")
		})
		r := p.runWith(t, cl, false, "unit", "list", "shop")
		if r.code != 0 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.hint) {
			t.Errorf("%d: exit %d, stderr %q; want 0 and one line saying %q", c.code, r.code, r.stderr, c.hint)
		}
		if !strings.Contains(r.stdout, "shop-web-7d9f-a1\tweb\tv2\tstarted\tyes\t0\t3d\t-\t-") {
			t.Errorf("%d: want - for cpu and memory:\n%s", c.code, r.stdout)
		}
	}
}

func TestUnitTop(t *testing.T) {
	p, c := usageFixture(t, servedUsage)
	r := p.runWith(t, c, false, "unit", "top", "shop")
	want := "shop-web-7d9f-a1\tweb\tstarted\t125m (25%)\t64Mi (25%)\n" +
		"shop-worker-5c4-x2\tworker\terror\t40m\t12Mi\n" +
		"shop-web-7d9f-b2\tweb\tcrashed\t3m\t300Mi\n" +
		"shop-worker-5c4-x1\tworker\tpending\t-\t-\n"
	if r.code != 0 || !strings.HasSuffix(r.stdout, want) {
		t.Errorf("piped top (once, by cpu): exit %d\n%s\nwant rows\n%s", r.code, r.stdout, want)
	}
	r = p.runWith(t, c, false, "unit", "top", "shop", "--sort", "memory", "-p", "web", "--no-headers")
	if r.stdout != "shop-web-7d9f-b2\tweb\tcrashed\t3m\t300Mi\nshop-web-7d9f-a1\tweb\tstarted\t125m (25%)\t64Mi (25%)\n" {
		t.Errorf("by memory, web only:\n%s", r.stdout)
	}
	r = p.runWith(t, c, true, "unit", "top", "shop", "--once")
	if r.code != 0 || strings.Contains(r.stdout, "\x1b[") || !strings.HasPrefix(r.stdout, "UNIT") {
		t.Errorf("--once on a terminal: one plain table, got %q", r.stdout)
	}
}

func TestUnitTopRefusals(t *testing.T) {
	p, c := usageFixture(t, func(*http.Request) (int, string) { return 404, metricstest.Status(404, "NotFound", "no") })
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"unit", "top", "shop", "--sort", "disk"}, 2, `--sort must be cpu or memory, not "disk"`},
		{[]string{"unit", "top", "shop", "--interval", "10ms"}, 2, "--interval must be at least 1s"},
		{[]string{"unit", "top", "shop", "-p", "run"}, 2, "one-off runs are not units"},
		{[]string{"unit", "top", "Bad_Name"}, 2, "Bad_Name"},
		{[]string{"unit", "top", "nope"}, 1, `app "nope" not found`},
		{[]string{"unit", "top", "shop", "-p", "clock"}, 2, `has no process "clock"`},
		{[]string{"unit", "top", "shop"}, 1, "does not serve the metrics API"},
	} {
		r := p.runWith(t, c, false, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

func TestAppInfoShowsProcessTotals(t *testing.T) {
	p, c := usageFixture(t, servedUsage)
	r := p.runWith(t, c, false, "app", "info", "shop")
	// web: a1 (limited) and b2 (unlimited): the total is unbounded
	if r.code != 0 || !strings.Contains(r.stdout, "PROCESS\tCPU\tMEMORY\nweb\t128m\t364Mi\nworker\t40m\t12Mi\n") {
		t.Errorf("app info: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = p.runWith(t, c, false, "app", "info", "shop", "-o", "json")
	if !strings.Contains(r.stdout, `"usage": {`) || !strings.Contains(r.stdout, `"cpu": 128,`) {
		t.Errorf("app info -o json lacks the usage:\n%s", r.stdout)
	}
	// with limits on every unit: the share
	units := []app.Unit{{Process: "web", UnitUsage: app.UnitUsage{CPULimit: 200, MemoryLimit: 64 << 20}}, {Process: "web", UnitUsage: app.UnitUsage{CPULimit: 200, MemoryLimit: 64 << 20}}}
	units[0].SetUsage(50, 16<<20)
	units[1].SetUsage(30, 16<<20)
	got := sumByProcess(units)["web"]
	if got.CPULimit != 400 || ofLimit("80m", "400m", got.CPU, got.CPULimit) != "80m of 400m (20%)" {
		t.Errorf("totals: %+v", got)
	}
	p2, c2 := usageFixture(t, func(*http.Request) (int, string) { return 404, metricstest.Status(404, "NotFound", "no") })
	r = p2.runWith(t, c2, false, "app", "info", "shop")
	if r.code != 0 || r.stderr != "" || strings.Contains(r.stdout, "MEMORY") {
		t.Errorf("app info without metrics: no usage and no hint; exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
}
