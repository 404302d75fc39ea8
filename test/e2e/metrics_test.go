package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The metrics API (metrics.k8s.io, metrics-server in the local cluster:
// test/cluster/cluster-metrics.sh): what units use, the autoscaler acting on
// it, and a user who may not read it.

type usageRow struct {
	Name        string `json:"name"`
	Process     string `json:"process"`
	CPU         *int64 `json:"cpu"`
	Memory      *int64 `json:"memory"`
	CPULimit    int64  `json:"cpuLimit"`
	MemoryLimit int64  `json:"memoryLimit"`
}

func (h *H) usage(args ...string) []usageRow {
	h.t.Helper()
	r := h.mustTug(append([]string{"unit", "list"}, append(args, "-o", "json")...)...)
	var rows []usageRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		h.t.Fatalf("unit list -o json: %v\n%s", err, r.Stdout)
	}
	return rows
}

// requireMetricsAPI fails the test at once, saying what to do, when the
// cluster does not serve the metrics API to its admin.
func (h *H) requireMetricsAPI() {
	h.t.Helper()
	err := h.Client.Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", h.NS, "pods").Do(context.Background()).Error()
	if err != nil {
		h.t.Fatalf("the cluster does not serve the metrics API (%v): test/cluster/cluster.sh ensure-metrics says why; a cluster started before the apiserver's aggregation flags needs a restart (down, up)", err)
	}
}

func TestUnitListShowsUsageAfterDeploy(t *testing.T) {
	h := New(t)
	h.requireMetricsAPI()
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1)
	h.mustTug("app", "limit", "set", "shop", "-p", "web", "--cpu", "200m", "--memory", "64Mi")
	h.waitUnits("shop", "web", 1, sampleV1)
	deployed := time.Now()
	var rows []usageRow
	// metrics-server scrapes the kubelets every 15 s: within 90 s of the deploy
	h.Eventually(90*time.Second, "unit list shows cpu and memory", func() (bool, error) {
		rows = h.usage("shop")
		for _, u := range rows {
			if u.CPU == nil || u.Memory == nil {
				return false, fmt.Errorf("unit %s: cpu %v, memory %v", u.Name, u.CPU, u.Memory)
			}
		}
		return len(rows) == 1, nil
	})
	t.Logf("usage shown %s after the deploy: %+v", time.Since(deployed).Round(time.Second), rows)
	u := rows[0]
	if *u.Memory <= 0 || u.CPULimit != 200 || u.MemoryLimit != 64<<20 {
		t.Errorf("usage %d bytes, limits %dm %d bytes; want memory > 0, limits 200m and 64Mi", *u.Memory, u.CPULimit, u.MemoryLimit)
	}
	table := h.mustTug("unit", "list", "shop")
	if !strings.Contains(table.Stdout, "%)") || strings.Contains(table.Stderr, "unknown") {
		t.Errorf("the table should show the share of the limits and no hint:\n%s", table)
	}
	top := h.mustTug("unit", "top", "shop", "--once", "--sort", "memory")
	if !strings.Contains(top.Stdout, u.Name) || !strings.Contains(top.Stdout, "Mi (") {
		t.Errorf("unit top --once:\n%s", top)
	}
}

func TestUnitListWithoutMetricsPermission(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1)
	h.waitUnits("shop", "web", 1, sampleV1)
	// a namespace Role that lists units but may not read the metrics API
	cfg := roleKubeconfig(t, h, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"get", "list"}},
	})
	r := h.Tug("unit", "list", "shop", "--kubeconfig", cfg)
	if r.Code != 0 || !strings.Contains(r.Stderr, "you may not read the metrics API") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("unit list without the metrics permission: want exit 0 and one hint line, got %s", r)
	}
	if !strings.Contains(r.Stdout, "started") || !strings.Contains(r.Stdout, "\t-\t-") {
		t.Errorf("want the unit with - for cpu and memory:\n%s", r.Stdout)
	}
	r = h.Tug("unit", "top", "shop", "--once", "--kubeconfig", cfg)
	if r.Code != 1 || !strings.Contains(r.Stderr, "you may not read the metrics API") {
		t.Errorf("unit top without the permission: want exit 1 saying so, got %s", r)
	}
}

func TestAutoscalerAddsUnitUnderLoad(t *testing.T) {
	h := New(t)
	h.requireMetricsAPI()
	h.mustTug("app", "create", "busy")
	// a CPU loop held at its limit: 100% of its request
	h.mustTug("app", "deploy", "busy", "--image", sampleV1, "--process", "worker=sh -c 'while :; do :; done'")
	h.mustTug("app", "limit", "set", "busy", "-p", "worker", "--cpu", "50m", "--cpu-request", "50m")
	h.mustTug("app", "autoscale", "set", "busy", "-p", "worker", "--min", "1", "--max", "2", "--cpu", "50%")
	h.Eventually(150*time.Second, "the autoscaler adds a unit", func() (bool, error) {
		n := h.deploymentReplicas("busy-worker")
		return n == 2, fmt.Errorf("%d replicas", n)
	})
	var list map[string]*struct {
		CPUPercent        int32  `json:"cpuPercent"`
		CurrentCPUPercent *int32 `json:"currentCPUPercent"`
		DesiredUnits      int32  `json:"desiredUnits"`
	}
	r := h.mustTug("app", "autoscale", "list", "busy", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("autoscale list -o json: %v\n%s", err, r.Stdout)
	}
	w := list["worker"]
	if w == nil || w.CPUPercent != 50 || w.CurrentCPUPercent == nil || *w.CurrentCPUPercent <= 50 || w.DesiredUnits != 2 {
		t.Fatalf("autoscale list: want target 50%%, current above it, 2 units desired: %s", r.Stdout)
	}
}

type eventRow struct {
	Time    time.Time `json:"time"`
	Source  string    `json:"source"`
	Object  string    `json:"object"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

func (h *H) appEvents(name string) []eventRow {
	h.t.Helper()
	r := h.mustTug("app", "events", name, "-o", "json")
	var rows []eventRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		h.t.Fatalf("app events -o json: %v\n%s", err, r.Stdout)
	}
	return rows
}

func TestAppEventsShowCrashAndOOMKill(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1)
	if r := h.Tug("app", "deploy", "shop", "--image", "localhost/tug/sample:crash"); r.Code != 11 {
		t.Fatalf("a crashing deploy: want exit 11, got %s", r)
	}
	evs := h.appEvents("shop")
	var crash, started bool
	for i, e := range evs {
		if i > 0 && e.Time.Before(evs[i-1].Time) {
			t.Errorf("not oldest first: %+v before %+v", evs[i-1], e)
		}
		crash = crash || strings.Contains(e.Message, "exit code 3") || strings.Contains(e.Message, "exited with code 3")
		started = started || (e.Source == "kubernetes" && e.Reason == "Started")
	}
	if !crash || !started {
		t.Fatalf("app events: want the crash's exit code 3 and Kubernetes' own events:\n%+v", evs)
	}

	// a unit that passes its memory limit: killed by the kernel, restarted
	h.mustTug("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample", "--process", "hog=sh -c 'sleep 20; tail /dev/zero'")
	h.mustTug("app", "limit", "set", "shop", "-p", "hog", "--memory", "24Mi")
	h.Eventually(90*time.Second, "app events shows the OOM kill", func() (bool, error) {
		for _, e := range h.appEvents("shop") {
			if e.Reason == "OOMKilled" && strings.Contains(e.Message, "memory limit (24Mi)") && strings.Contains(e.Message, "exit code 137") {
				return true, nil
			}
		}
		return false, nil
	})
	r := h.mustTug("app", "events", "shop", "--since", "1h")
	if !strings.Contains(r.Stdout, "OOMKilled") || !strings.Contains(r.Stdout, "REASON") {
		t.Errorf("app events table:\n%s", r)
	}
	if r := h.Tug("app", "events", "shop", "--since", "-5m"); r.Code != 2 {
		t.Errorf("--since -5m: want exit 2, got %s", r)
	}
}
