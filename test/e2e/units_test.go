package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// waitUnitStatus waits until every unit of the app's process has status.
// waitUnitStatus waits until every unit of the process has status and a
// reason that says reason ("" for any): a status comes before the reason
// for it (pending, then the scheduler's verdict).
func (h *H) waitUnitStatus(appName, proc, status, reason string, timeout time.Duration) []unitRow {
	h.t.Helper()
	var rows []unitRow
	h.Eventually(timeout, fmt.Sprintf("units of %s/%s %s (%s)", appName, proc, status, reason), func() (bool, error) {
		rows = h.units(appName, "-p", proc)
		for _, u := range rows {
			if u.Status != status || !strings.Contains(u.Reason, reason) {
				return false, fmt.Errorf("unit %s is %s (%s)", u.Name, u.Status, u.Reason)
			}
		}
		return len(rows) > 0, nil
	})
	return rows
}

func TestScaleAndUnitList(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample", "--process", "worker=sample worker")
	h.mustTug("app", "scale", "shop", "web=3", "worker=0")
	h.waitUnits("shop", "web", 3, sampleV1)
	h.waitUnits("shop", "worker", 0, sampleV1)
	h.mustTug("app", "scale", "shop", "web-1", "worker+2")
	h.waitUnits("shop", "web", 2, sampleV1)
	h.waitUnits("shop", "worker", 2, sampleV1)
	h.mustTug("unit", "add", "shop", "2", "-p", "web")
	h.mustTug("unit", "remove", "shop", "1", "-p", "worker")
	pods := h.waitUnits("shop", "web", 4, sampleV1)
	h.waitUnits("shop", "worker", 1, sampleV1)

	// unit list -o json agrees with the cluster, unit for pod
	rows := h.units("shop", "-p", "web")
	if len(rows) != len(pods) {
		t.Fatalf("unit list shows %d web units, the cluster has %d", len(rows), len(pods))
	}
	byName := map[string]corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	for _, u := range rows {
		p, ok := byName[u.Name]
		if !ok || u.Node != p.Spec.NodeName || u.IP != p.Status.PodIP || u.Status != "started" || !u.Ready || u.Release != 1 {
			t.Errorf("unit %+v does not match pod %s on %s (%s)", u, p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
	}
	all := h.units("--all")
	if len(all) != 5 {
		t.Fatalf("unit list --all: %d units, want 5", len(all))
	}
	// the table has the columns people look for
	table := h.mustTug("unit", "list", "shop", "-o", "wide").Stdout
	if !strings.HasPrefix(table, "UNIT\tPROCESS\tRELEASE\tSTATUS\tREADY\tRESTARTS\tAGE\tCPU\tMEMORY\tNODE\tIP\tADDRESS\tIMAGE\n") {
		t.Fatalf("wide table header: %q", strings.SplitN(table, "\n", 2)[0])
	}
}

func TestUnitKillIsReplaced(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "kill")
	h.mustTug("app", "deploy", "kill", "--image", sampleV1)
	before := h.waitUnits("kill", "web", 1, sampleV1)[0]
	h.mustTug("unit", "kill", "kill", before.Name, "--force")
	h.WaitPods("tug.dev/app=kill", 60*time.Second, "a replacement unit", func(pods []corev1.Pod) bool {
		return AllReady(1)(pods) && pods[0].Name != before.Name
	})
	r := h.Tug("unit", "kill", "kill", "kill-web-nope")
	if r.Code != 1 || !strings.Contains(r.Stderr, "units of app") {
		t.Fatalf("killing an unknown unit should list the valid ones: %s", r)
	}
}

func TestStopStartRestoresCounts(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "pause")
	h.mustTug("app", "deploy", "pause", "--image", sampleV1)
	h.mustTug("app", "scale", "pause", "web=2")
	h.waitUnits("pause", "web", 2, sampleV1)
	h.mustTug("app", "stop", "pause")
	h.WaitPods("tug.dev/app=pause", 60*time.Second, "no units while stopped", func(p []corev1.Pod) bool { return len(p) == 0 })
	info := h.mustTug("app", "info", "pause").Stdout
	if !strings.Contains(info, "stopped (2 when started)") {
		t.Fatalf("app info of a stopped app:\n%s", info)
	}
	h.mustTug("app", "start", "pause")
	h.waitUnits("pause", "web", 2, sampleV1)
	// restart rolls every unit: new names, same count
	old := h.waitUnits("pause", "web", 2, sampleV1)
	h.mustTug("app", "restart", "pause")
	h.WaitPods("tug.dev/app=pause", 60*time.Second, "restarted units", func(pods []corev1.Pod) bool {
		if !AllReady(2)(pods) {
			return false
		}
		for _, p := range pods {
			for _, o := range old {
				if p.Name == o.Name {
					return false
				}
			}
		}
		return true
	})
}

func TestLimitsAndHealthchecksReachThePodSpec(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "spec")
	h.mustTug("app", "deploy", "spec", "--image", sampleV1)
	h.mustTug("app", "limit", "set", "spec", "-p", "web", "--cpu", "200m", "--memory", "64Mi", "--memory-request", "32Mi")
	h.mustTug("app", "healthcheck", "set", "spec", "-p", "web", "--readiness", "http:8080/healthz", "--liveness", "tcp:8080", "--period", "2")
	pod := h.waitUnits("spec", "web", 1, sampleV1)[0]
	c := pod.Spec.Containers[0]
	if c.Resources.Limits.Cpu().String() != "200m" || c.Resources.Limits.Memory().String() != "64Mi" || c.Resources.Requests.Memory().String() != "32Mi" {
		t.Fatalf("resources in the pod: %+v", c.Resources)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.PeriodSeconds != 2 {
		t.Fatalf("readiness probe in the pod: %+v", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.TCPSocket == nil || c.LivenessProbe.TCPSocket.Port.IntValue() != 8080 {
		t.Fatalf("liveness probe in the pod: %+v", c.LivenessProbe)
	}
	rows := h.releases("spec")
	if rows[0].Kind != "healthcheck" || rows[1].Kind != "limits" {
		t.Fatalf("limits and healthchecks make releases: %+v", rows)
	}
	// a rollback to the first release takes them away again
	h.mustTug("release", "rollback", "spec", "v1")
	h.WaitPods("tug.dev/app=spec", 60*time.Second, "unit without limits", func(pods []corev1.Pod) bool {
		return AllReady(1)(pods) && pods[0].Spec.Containers[0].Resources.Limits == nil
	})
	lim := h.mustTug("app", "limit", "list", "spec", "-o", "json").Stdout
	if strings.Contains(lim, "200m") {
		t.Fatalf("limit list after rollback still shows the limit: %s", lim)
	}
}

func TestUnitStatusesExplainProblems(t *testing.T) {
	h := New(t)
	t.Run("unready", func(t *testing.T) {
		h.mustTug("app", "create", "never")
		r := h.Tug("app", "deploy", "never", "--image", "localhost/tug/sample:unready", "--no-rollback")
		if r.Code != 14 {
			t.Fatalf("want exit 14: %s", r)
		}
		h.waitUnitStatus("never", "web", "unready", "", 60*time.Second)
	})
	t.Run("crashed", func(t *testing.T) {
		h.mustTug("app", "create", "crash")
		r := h.Tug("app", "deploy", "crash", "--image", "localhost/tug/sample:crash", "--no-rollback")
		if r.Code != 11 {
			t.Fatalf("want exit 11: %s", r)
		}
		rows := h.waitUnitStatus("crash", "web", "crashed", "exit code", 60*time.Second)
		if rows[0].LastExitCode == nil || *rows[0].LastExitCode != 3 || !strings.Contains(rows[0].Reason, "exit code 3") {
			t.Fatalf("a crashed unit shows its exit code: %+v", rows[0])
		}
	})
	t.Run("pending in a pool with no nodes", func(t *testing.T) {
		h.mustTug("app", "create", "nowhere", "--pool", "no-such-pool")
		h.mustTug("app", "deploy", "nowhere", "--image", sampleV1, "--no-wait")
		rows := h.waitUnitStatus("nowhere", "web", "pending", "node", 60*time.Second)
		if !strings.Contains(rows[0].Reason, "node") {
			t.Fatalf("a pending unit gives the scheduler's reason: %+v", rows[0])
		}
	})
}

func TestAutoscale(t *testing.T) {
	h := New(t)
	ctx := context.Background()
	h.mustTug("app", "create", "auto")
	h.mustTug("app", "deploy", "auto", "--image", sampleV1)
	h.mustTug("app", "autoscale", "set", "auto", "-p", "web", "--min", "2", "--max", "5", "--cpu", "60%")
	hpa, err := h.Client.AutoscalingV2().HorizontalPodAutoscalers(h.NS).Get(ctx, "auto-web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("autoscaler: %v", err)
	}
	if *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 5 || *hpa.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 {
		t.Fatalf("autoscaler spec: %+v", hpa.Spec)
	}
	h.waitUnits("auto", "web", 2, sampleV1)
	if r := h.Tug("app", "scale", "auto", "web=1"); r.Code == 0 || !strings.Contains(r.Stderr, "autoscales") {
		t.Fatalf("scale of an autoscaled process must refuse: %s", r)
	}
	// the autoscaler's choice (done here by hand: there is no metrics server)
	// survives a deploy. The HPA controller writes the Deployment too (it
	// keeps the count within min and max), so the write retries a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := h.Client.AppsV1().Deployments(h.NS).GetScale(ctx, "auto-web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 3
		_, err = h.Client.AppsV1().Deployments(h.NS).UpdateScale(ctx, "auto-web", scale, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	h.mustTug("app", "deploy", "auto", "--image", sampleV2)
	if n := h.deploymentReplicas("auto-web"); n != 3 {
		t.Fatalf("a deploy reset the autoscaled count to %d, want 3", n)
	}
	h.mustTug("app", "autoscale", "unset", "auto", "-p", "web")
	if _, err := h.Client.AutoscalingV2().HorizontalPodAutoscalers(h.NS).Get(ctx, "auto-web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("autoscaler still there after unset: %v", err)
	}
	if n := h.deploymentReplicas("auto-web"); n != 3 {
		t.Fatalf("unset should keep the count the autoscaler reached; got %d", n)
	}
}

func TestProcessBadInputChangesNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "strict")
	h.mustTug("app", "deploy", "strict", "--image", sampleV1)
	before := h.releases("strict")
	gen := func() int64 {
		d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "strict-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Generation
	}
	g0 := gen()
	for _, args := range [][]string{
		{"app", "scale", "strict", "web=abc"},
		{"app", "scale", "strict", "web=-1"},
		{"app", "scale", "strict", "api=2"},
		{"app", "scale", "strict", "web=1", "web=2"},
		{"unit", "add", "strict", "zero"},
		{"app", "autoscale", "set", "strict", "-p", "web", "--min", "5", "--max", "2"},
		{"app", "autoscale", "set", "strict", "-p", "web", "--max", "3", "--cpu", "lots"},
		{"app", "limit", "set", "strict", "-p", "web", "--cpu", "lots"},
		{"app", "limit", "set", "strict", "-p", "web", "--memory-request", "2Gi", "--memory", "1Gi"},
		{"app", "limit", "set", "strict", "--cpu", "1"},
		{"app", "healthcheck", "set", "strict", "-p", "web", "--readiness", "http:notaport/x"},
		{"app", "healthcheck", "set", "strict", "-p", "web", "--readiness", "ftp:21"},
		{"app", "healthcheck", "set", "strict", "-p", "nope", "--readiness", "tcp:8080"},
		{"app", "pool", "set", "strict", "bad pool!"},
		{"unit", "list", "strict", "-o", "xml"},
	} {
		if r := h.Tug(args...); r.Code != 2 {
			t.Errorf("tug %q: want exit 2, got %s", args, r)
		}
	}
	if after := h.releases("strict"); len(after) != len(before) {
		t.Fatalf("bad input made releases: %+v", after)
	}
	if g := gen(); g != g0 {
		t.Fatalf("bad input changed the Deployment (generation %d -> %d)", g0, g)
	}
}

func TestPoolAndTagsPlaceUnits(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "placed")
	h.mustTug("app", "deploy", "placed", "--image", sampleV1)
	// every node has this label, so the units still run
	h.mustTug("app", "tag", "set", "placed", "kubernetes.io/os=linux")
	pod := h.waitUnits("placed", "web", 1, sampleV1)[0]
	if pod.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Fatalf("node selector after tag set: %v", pod.Spec.NodeSelector)
	}
	// a pool no node is in: unschedulable, explained, rolled back
	r := h.Tug("app", "pool", "set", "placed", "nowhere")
	if r.Code != 13 || !strings.Contains(r.Stderr, "cannot be placed") || !strings.Contains(r.Stderr, "rolled back to") {
		t.Fatalf("pool set to an empty pool: want exit 13 with the scheduler's reason and a rollback, got %s", r)
	}
	pod = h.waitUnits("placed", "web", 1, sampleV1)[0]
	if _, ok := pod.Spec.NodeSelector["tug.dev/pool"]; ok {
		t.Fatalf("the rolled-back unit still asks for a pool: %v", pod.Spec.NodeSelector)
	}
	h.mustTug("app", "tag", "unset", "placed", "kubernetes.io/os")
	h.WaitPods("tug.dev/app=placed", 60*time.Second, "a unit without the tag", func(pods []corev1.Pod) bool {
		return AllReady(1)(pods) && len(pods[0].Spec.NodeSelector) == 0
	})
	if r := h.Tug("app", "tag", "set", "placed", "tug.dev/pool=x"); r.Code != 2 {
		t.Fatalf("the pool label as a tag must be refused: %s", r)
	}
}
