package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
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

// releaseSecrets are the versions of an app's stored releases: its record
// ConfigMaps, each with its config Secret (a mismatch fails the test).
func (h *H) releaseSecrets(appName string) []int {
	h.t.Helper()
	ctx := context.Background()
	versions := func(items []metav1.ObjectMeta) []int {
		var vs []int
		for _, m := range items {
			var v int
			_, _ = fmt.Sscan(m.Labels["tug.dev/release"], &v)
			vs = append(vs, v)
		}
		slices.Sort(vs)
		return vs
	}
	cms, err := h.Client.CoreV1().ConfigMaps(h.NS).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/managed-by=tug,tug.dev/kind=release,tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	secs, err := h.Client.CoreV1().Secrets(h.NS).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/managed-by=tug,tug.dev/kind in (release,release-config),tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	var records, configs []metav1.ObjectMeta
	for _, cm := range cms.Items {
		records = append(records, cm.ObjectMeta)
	}
	for _, s := range secs.Items {
		configs = append(configs, s.ObjectMeta)
	}
	if r, c := versions(records), versions(configs); !slices.Equal(r, c) {
		h.t.Errorf("release records %v, config Secrets %v: want one of each per release", r, c)
	}
	return versions(records)
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

// webUnits names the app's web pods with their UIDs and release labels:
// a unit that restarted has another name and UID.
func (h *H) webUnits(appName string) map[string]string {
	h.t.Helper()
	l, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName + ",tug.dev/process=web"})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range l.Items {
		out[p.Name] = string(p.UID) + " release " + p.Labels["tug.dev/release"]
	}
	return out
}

// replicaSets names a Deployment's ReplicaSets: a new pod template makes one.
func (h *H) replicaSets(deployment string) []string {
	h.t.Helper()
	l, err := h.Client.AppsV1().ReplicaSets(h.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var names []string
	for _, rs := range l.Items {
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" && o.Name == deployment {
				names = append(names, rs.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// settingsResult is the part of `app settings set -o json` checked here.
type settingsResult struct {
	Release        int   `json:"release"`
	UnitsRestarted *bool `json:"unitsRestarted"`
}

func (h *H) settingsSet(appName string, args ...string) (settingsResult, Result) {
	h.t.Helper()
	r := h.mustTug(append([]string{"app", "settings", "set", appName, "-o", "json"}, args...)...)
	var res settingsResult
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || res.UnitsRestarted == nil {
		h.t.Fatalf("settings set %q -o json: %v\n%s", args, err, r.Stdout)
	}
	return res, r
}

// TestAppSettingsRollout (issue 16): rollout settings reach the
// Deployments and units, travel with the release (a rollback restores
// them), cap the release history, refuse bad input without a trace, and
// the deploy timeout bounds a rollout that makes no progress. Pace,
// history and deploy timeout change in place: the units keep running (the
// same pods, no new ReplicaSet) while the Deployment's strategy changes;
// a grace period change rolls them.
func TestAppSettingsRollout(t *testing.T) {
	h := New(t)
	const name = "roll"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1) // v1
	v1 := h.releaseUnits(name, 1, 1)
	if got := strategyOf(h.deployment("roll-web")); got != "25%/0" {
		t.Fatalf("default strategy %s, want 25%%/0", got)
	}

	// v2: the grace period is part of the pod spec: a release, units replaced
	res, r := h.settingsSet(name, "--grace-period", "5s")
	if res.Release != 2 || !*res.UnitsRestarted || !strings.Contains(r.Stderr, "settings changed; units restarted: roll v2 is running") {
		t.Errorf("--grace-period 5s: want release 2 with units restarted, got %+v\n%s", res, r)
	}
	v2 := h.releaseUnits(name, 2, 1)
	if graceOf(v2[0]) != "5" || v2[0].UID == v1[0].UID {
		t.Errorf("v2 unit %s (grace period %s): want a new unit with grace period 5", v2[0].Name, graceOf(v2[0]))
	}
	h.Eventually(60*time.Second, "roll-web rolled out", func() (bool, error) { return rolledOut(h.deployment("roll-web")), nil })

	// still v2: pace and history change in place, and no unit restarts
	units, rsets := h.webUnits(name), h.replicaSets("roll-web")
	res, r = h.settingsSet(name, "--max-surge", "0", "--max-unavailable", "1", "--history", "3")
	if res.Release != 2 || *res.UnitsRestarted || !strings.Contains(r.Stderr, "settings changed; units not restarted: roll v2 keeps running (web 1)") {
		t.Errorf("--max-surge 0 --max-unavailable 1 --history 3: want v2 with units not restarted, got %+v\n%s", res, r)
	}
	if got := strategyOf(h.deployment("roll-web")); got != "0/1" {
		t.Errorf("strategy after settings set: %s, want 0/1", got)
	}
	// once the Deployment controller has seen the change, a new pod
	// template would have a new ReplicaSet
	h.Eventually(60*time.Second, "roll-web observed the change", func() (bool, error) {
		d := h.deployment("roll-web")
		return d.Status.ObservedGeneration >= d.Generation, nil
	})
	if got := h.replicaSets("roll-web"); !slices.Equal(got, rsets) {
		t.Errorf("ReplicaSets %v -> %v: the pod template changed", rsets, got)
	}
	if got := h.webUnits(name); !maps.Equal(got, units) {
		t.Errorf("units %v -> %v: want the same pods (no restart)", units, got)
	}
	if got := h.releaseSecrets(name); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("releases after an in-place change: %v, want [1 2] (no new release)", got)
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
	if view.MaxSurge != "0" || view.MaxUnavailable != "1" || view.GracePeriodSeconds != 5 || view.History != 3 ||
		!slices.Equal(view.Defaults, []string{"deploy-timeout"}) {
		t.Errorf("settings show -o json: %+v", view)
	}
	info := h.mustTug("release", "info", name, "v2").Stdout
	if !strings.Contains(info, "Rollout:  max-surge 0, max-unavailable 1, grace-period 5s, history 3, deploy-timeout 10m") ||
		!strings.Contains(info, ": settings: max-surge 0, max-unavailable 1, history 3\n") || !strings.Contains(info, "Changed:  ") {
		t.Errorf("release info v2 does not show the settings and their change:\n%s", info)
	}

	// v3: a rollback to v1 brings back v1's settings (tug's defaults)
	h.mustTug("release", "rollback", name, "v1")
	if got := strategyOf(h.deployment("roll-web")); got != "25%/0" {
		t.Errorf("strategy after rollback to v1: %s, want 25%%/0", got)
	}
	if pods := h.releaseUnits(name, 3, 1); graceOf(pods[0]) != "30" { // the cluster's default
		t.Errorf("grace period of a v3 unit: %s, want 30", graceOf(pods[0]))
	}
	// v4: a rollback to v2 brings back the settings changed on it in place
	h.mustTug("release", "rollback", name, "v2")
	if got := strategyOf(h.deployment("roll-web")); got != "0/1" {
		t.Errorf("strategy after rollback to v2: %s, want 0/1", got)
	}
	if pods := h.releaseUnits(name, 4, 1); graceOf(pods[0]) != "5" {
		t.Errorf("grace period of a v4 unit: %s, want 5", graceOf(pods[0]))
	}

	// v4 keeps 3 records; five deploys later (v5..v9) three are left
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
	// a lowered history applies at once, not at the next deploy
	if res, _ := h.settingsSet(name, "--history", "2"); res.Release != 9 || *res.UnitsRestarted {
		t.Errorf("--history 2: %+v, want v9 with units not restarted", res)
	}
	if got := h.releaseSecrets(name); !slices.Equal(got, []int{8, 9}) {
		t.Errorf("release Secrets after --history 2: %v, want [8 9]", got)
	}

	// bad input: exit 2, nothing changed
	h.releaseUnits(name, 9, 1)
	h.Eventually(60*time.Second, "roll-web rolled out", func() (bool, error) { return rolledOut(h.deployment("roll-web")), nil })
	before := h.deployment("roll-web").ResourceVersion
	record := func() string {
		rec, err := h.Client.CoreV1().ConfigMaps(h.NS).Get(context.Background(), "tug-release-roll-v9", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rec.ResourceVersion
	}
	recordBefore := record()
	for _, args := range [][]string{
		{"--max-surge", "0", "--max-unavailable", "0"},
		{"--max-unavailable", "0"}, // with v9's max-surge 0
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
	if after := record(); after != recordBefore {
		t.Errorf("bad input changed v9's record (resourceVersion %s -> %s)", recordBefore, after)
	}
	if got := h.releaseSecrets(name); !slices.Equal(got, []int{8, 9}) {
		t.Errorf("bad input changed the releases: %v", got)
	}

	// still v9, in place: a rollout that makes no progress (a readiness
	// check not tried for 10 minutes) fails after the app's deploy
	// timeout, not the default: the next release started from it
	h.mustTug("app", "settings", "set", name, "--deploy-timeout", "20s")
	stuck := []string{"app", "healthcheck", "set", name, "-p", "web", "--readiness", "tcp:8080", "--initial-delay", "600"}
	r = h.Tug(stuck...)
	if r.Code != 15 || !strings.Contains(r.Stderr, "no progress for 20s") || !strings.Contains(r.Stderr, "rolled back to v9") {
		t.Errorf("a stuck rollout under --deploy-timeout 20s: want exit 15 (timeout) after no progress for 20s, got %s", r)
	}
	// the command's --timeout wins over the setting
	r = h.Tug(append(stuck, "--timeout", "25s")...)
	if r.Code != 15 || !strings.Contains(r.Stderr, "no progress for 25s") {
		t.Errorf("a stuck rollout with --timeout 25s: want exit 15 after no progress for 25s, got %s", r)
	}
	h.releaseUnits(name, 9, 1)
}
