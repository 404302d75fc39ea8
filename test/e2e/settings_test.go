package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// releaseUnits waits for n ready web units of release v, and for no other
// unit of the app (the previous release's gone).
func (h *H) releaseUnits(appName string, v, n int) []corev1.Pod {
	h.t.Helper()
	h.WaitPods("tug.dev/app="+appName+",tug.dev/process=web", 90*time.Second, fmt.Sprintf("only release %d's units", v), func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.Labels["tug.dev/release"] != fmt.Sprint(v) {
				return false
			}
		}
		return AllReady(n)(pods)
	})
	return h.WaitPods(fmt.Sprintf("tug.dev/app=%s,tug.dev/process=web,tug.dev/release=%d", appName, v), 90*time.Second,
		fmt.Sprintf("%d ready units of release %d", n, v), AllReady(n))
}

func (h *H) deployment(name string) *appsv1.Deployment {
	h.t.Helper()
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

func (h *H) releaseSecrets(appName string) []int {
	h.t.Helper()
	l, err := h.Client.CoreV1().Secrets(h.NS).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/managed-by=tug,tug.dev/kind=release,tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	var vs []int
	for _, s := range l.Items {
		var v int
		_, _ = fmt.Sscan(s.Labels["tug.dev/release"], &v)
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

func strategyOf(d *appsv1.Deployment) string {
	ru := d.Spec.Strategy.RollingUpdate
	if ru == nil || ru.MaxSurge == nil || ru.MaxUnavailable == nil {
		return "none"
	}
	return ru.MaxSurge.String() + "/" + ru.MaxUnavailable.String()
}

func graceOf(p corev1.Pod) string {
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		return fmt.Sprint(*g)
	}
	return "unset"
}

// TestAppSettingsRollout (issue 16): rollout settings reach the
// Deployments and units, travel with the release (a rollback restores
// them), cap the release history, refuse bad input without a trace, and
// the deploy timeout bounds a rollout that makes no progress.
func TestAppSettingsRollout(t *testing.T) {
	h := New(t)
	const name = "roll"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1) // v1
	h.releaseUnits(name, 1, 1)
	if got := strategyOf(h.deployment("roll-web")); got != "25%/0" {
		t.Fatalf("default strategy %s, want 25%%/0", got)
	}

	// v2: pace and grace period on the Deployment and its units
	h.mustTug("app", "settings", "set", name, "--max-surge", "0", "--max-unavailable", "1", "--grace-period", "5s")
	if got := strategyOf(h.deployment("roll-web")); got != "0/1" {
		t.Errorf("strategy after settings set: %s, want 0/1", got)
	}
	if pods := h.releaseUnits(name, 2, 1); graceOf(pods[0]) != "5" {
		t.Errorf("grace period of a v2 unit: %s, want 5", graceOf(pods[0]))
	}
	var view struct {
		MaxSurge, MaxUnavailable string
		GracePeriodSeconds       int64
		History                  int
		Defaults                 []string
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "settings", "show", name, "-o", "json").Stdout), &view); err != nil {
		t.Fatal(err)
	}
	if view.MaxSurge != "0" || view.MaxUnavailable != "1" || view.GracePeriodSeconds != 5 || view.History != 10 ||
		!slices.Equal(view.Defaults, []string{"history", "deploy-timeout"}) {
		t.Errorf("settings show -o json: %+v", view)
	}
	if out := h.mustTug("release", "info", name, "v2").Stdout; !strings.Contains(out, "Rollout:  max-surge 0, max-unavailable 1, grace-period 5s, history 10, deploy-timeout 10m") {
		t.Errorf("release info v2 does not show the settings:\n%s", out)
	}

	// v3: a rollback to v1 brings back v1's settings (tug's defaults)
	h.mustTug("release", "rollback", name, "v1")
	if got := strategyOf(h.deployment("roll-web")); got != "25%/0" {
		t.Errorf("strategy after rollback to v1: %s, want 25%%/0", got)
	}
	if pods := h.releaseUnits(name, 3, 1); graceOf(pods[0]) != "30" { // the cluster's default
		t.Errorf("grace period of a v3 unit: %s, want 30", graceOf(pods[0]))
	}

	// v4 keeps 3 records; five deploys later (v5..v9) three are left
	h.mustTug("app", "settings", "set", name, "--history", "3")
	for i := 0; i < 5; i++ {
		image := []string{sampleV2, sampleV1}[i%2]
		h.mustTug("app", "deploy", name, "--image", image)
	}
	if got := h.releaseSecrets(name); !slices.Equal(got, []int{7, 8, 9}) {
		t.Errorf("release Secrets after --history 3 and five deploys: %v, want [7 8 9]", got)
	}
	rows := h.releases(name)
	if len(rows) != 3 || rows[0].Version != 9 || rows[0].Status != "deployed" || rows[2].Version != 7 {
		t.Errorf("release list after --history 3: %+v", rows)
	}

	// bad input: exit 2, nothing changed
	h.releaseUnits(name, 9, 1)
	h.Eventually(60*time.Second, "roll-web rolled out", func() (bool, error) { return rolledOut(h.deployment("roll-web")), nil })
	before := h.deployment("roll-web").ResourceVersion
	for _, args := range [][]string{
		{"--max-surge", "0", "--max-unavailable", "0"},
		{"--max-surge", "0"}, // with v9's max-unavailable, the default 0
		{"--max-surge", "-1"},
		{"--max-unavailable", "101%"},
		{"--history", "0"},
		{"--history", "100000"},
		{"--grace-period", "0s"},
		{"--grace-period", "soon"},
		{"--deploy-timeout", "1s"},
		{},
	} {
		r := h.Tug(append([]string{"app", "settings", "set", name}, args...)...)
		// (a refusal found under the app's lock follows a progress line)
		if r.Code != 2 || !strings.HasPrefix(r.Stderr, "error: ") && !strings.Contains(r.Stderr, "\nerror: ") {
			t.Errorf("settings set %q: want exit 2 with an error line, got %s", args, r)
		}
	}
	if after := h.deployment("roll-web").ResourceVersion; after != before {
		t.Errorf("bad input changed the Deployment (resourceVersion %s -> %s)", before, after)
	}
	if got := h.releaseSecrets(name); !slices.Equal(got, []int{7, 8, 9}) {
		t.Errorf("bad input changed the releases: %v", got)
	}

	// v10: a rollout that makes no progress (a readiness check not tried
	// for 10 minutes) fails after the app's deploy timeout, not the default
	h.mustTug("app", "settings", "set", name, "--deploy-timeout", "20s")
	stuck := []string{"app", "healthcheck", "set", name, "-p", "web", "--readiness", "tcp:8080", "--initial-delay", "600"}
	r := h.Tug(stuck...)
	if r.Code != 15 || !strings.Contains(r.Stderr, "no progress for 20s") || !strings.Contains(r.Stderr, "rolled back to v10") {
		t.Errorf("a stuck rollout under --deploy-timeout 20s: want exit 15 (timeout) after no progress for 20s, got %s", r)
	}
	// the command's --timeout wins over the setting
	r = h.Tug(append(stuck, "--timeout", "25s")...)
	if r.Code != 15 || !strings.Contains(r.Stderr, "no progress for 25s") {
		t.Errorf("a stuck rollout with --timeout 25s: want exit 15 after no progress for 25s, got %s", r)
	}
	h.releaseUnits(name, 10, 1)
}
