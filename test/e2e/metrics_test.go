package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
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

// roleKubeconfig makes a Role of rules in h's namespace and returns a
// kubeconfig for a service account bound to it.
func roleKubeconfig(t *testing.T, h *H, rules []rbacv1.PolicyRule) string {
	t.Helper()
	if _, err := h.Client.RbacV1().Roles(h.NS).Create(context.Background(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "limited"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return serviceAccountKubeconfig(t, h, "limited", "limited")
}

// serviceAccountKubeconfig binds a new service account name of h's
// namespace to the Role role and returns a kubeconfig for it, with the
// test's namespace.
func serviceAccountKubeconfig(t *testing.T, h *H, name, role string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := h.Client.CoreV1().ServiceAccounts(h.NS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.RbacV1().RoleBindings(h.NS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: h.NS}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := h.Client.CoreV1().ServiceAccounts(h.NS).CreateToken(ctx, name, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(h.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	user := raw.Contexts[raw.CurrentContext].AuthInfo
	raw.AuthInfos[user].ClientCertificate, raw.AuthInfos[user].ClientKey = "", ""
	raw.AuthInfos[user].Token = tok.Status.Token
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		t.Fatal(err)
	}
	return path
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

// withoutUsage is app info's JSON without what the units use, which
// changes from one sample to the next.
func withoutUsage(t *testing.T, info string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(info), &m); err != nil {
		t.Fatalf("app info -o json: %v\n%s", err, info)
	}
	delete(m, "usage")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
