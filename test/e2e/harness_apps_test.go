package e2e

// Harness: apps, releases, units, run pods and events as tug and the
// cluster show them (the sample images, waitUnits, releases, units,
// appInfo, dryRunState).

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	sampleV1 = "localhost/tug/sample:v1"
	sampleV2 = "localhost/tug/sample:v2"
)

// appPods are the app's units of one process (one-off run pods excluded).
func (h *H) waitUnits(appName, proc string, n int, image string) []corev1.Pod {
	h.t.Helper()
	sel := fmt.Sprintf("tug.dev/app=%s,tug.dev/process=%s", appName, proc)
	return h.WaitPods(sel, 90*time.Second, fmt.Sprintf("%d ready %s units of %s on %s", n, proc, appName, image), func(pods []corev1.Pod) bool {
		if !AllReady(n)(pods) {
			return false
		}
		for _, p := range pods {
			if p.Spec.Containers[0].Image != image {
				return false
			}
		}
		return true
	})
}

// podEnv asks a web unit for the value of a variable through the sample
// app's /env endpoint.
func podEnv(t *testing.T, pod corev1.Pod, key string) string {
	t.Helper()
	body := httpGet(t, fmt.Sprintf("http://%s:8080/env?show=%s", pod.Status.PodIP, key))
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return v
		}
	}
	return ""
}

// assertNoValueInSpecs fails when a config value shows up in any Deployment
// or ReplicaSet of the namespace.
func (h *H) assertNoValueInSpecs(value string) {
	h.t.Helper()
	ctx := context.Background()
	deps, err := h.Client.AppsV1().Deployments(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	rss, err := h.Client.AppsV1().ReplicaSets(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, obj := range []any{deps, rss} {
		b, _ := json.Marshal(obj)
		if strings.Contains(string(b), value) {
			h.t.Fatalf("config value %q appears in a Deployment or ReplicaSet", value)
		}
	}
}

type releaseRow struct {
	Version int    `json:"version"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Image   string `json:"image"`
	Author  string `json:"author"`
}

func (h *H) releases(appName string) []releaseRow {
	h.t.Helper()
	r := h.mustTug("release", "list", appName, "-o", "json")
	var rows []releaseRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		h.t.Fatalf("release list -o json: %v\n%s", err, r.Stdout)
	}
	return rows
}

// releaseCount is how many releases the app has kept.
func (h *H) releaseCount(appName string) int {
	h.t.Helper()
	var rels []json.RawMessage
	if err := json.Unmarshal([]byte(h.mustTug("release", "list", appName, "-o", "json").Stdout), &rels); err != nil {
		h.t.Fatal(err)
	}
	return len(rels)
}

type splitRow struct {
	Version    int    `json:"version"`
	Status     string `json:"status"`
	FailReason string `json:"failReason"`
	Traffic    *int   `json:"traffic"`
}

// releasesByVersion is release list -o json by version, with the traffic
// shares.
func (h *H) releasesByVersion(appName string) map[int]splitRow {
	h.t.Helper()
	var rows []splitRow
	if err := json.Unmarshal([]byte(h.mustTug("release", "list", appName, "-o", "json").Stdout), &rows); err != nil {
		h.t.Fatal(err)
	}
	out := map[int]splitRow{}
	for _, r := range rows {
		out[r.Version] = r
	}
	return out
}

// noCanaryLeft checks that the canary's Deployment and the Services of the
// split are gone and the record names no canary.
func (h *H) noCanaryLeft(appName string) {
	h.t.Helper()
	ctx := context.Background()
	if _, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, appName+"-web-canary", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		h.t.Fatalf("the canary's Deployment is still there: %v", err)
	}
	svcs, err := h.Client.CoreV1().Services(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName + ",tug.dev/track"})
	if err != nil || len(svcs.Items) > 0 {
		h.t.Fatalf("the split's Services are still there: %v %v", svcs, err)
	}
	var in struct {
		Canary *struct{} `json:"canary"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", appName, "-o", "json").Stdout), &in); err != nil || in.Canary != nil {
		h.t.Fatalf("app info still shows a canary: %v", err)
	}
}

type unitRow struct {
	Name         string `json:"name"`
	Process      string `json:"process"`
	Release      int    `json:"release"`
	Status       string `json:"status"`
	Reason       string `json:"reason"`
	Ready        bool   `json:"ready"`
	Node         string `json:"node"`
	IP           string `json:"ip"`
	LastExitCode *int32 `json:"lastExitCode"`
}

func (h *H) units(args ...string) []unitRow {
	h.t.Helper()
	r := h.mustTug(append([]string{"unit", "list"}, append(args, "-o", "json")...)...)
	var rows []unitRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		h.t.Fatalf("unit list -o json: %v\n%s", err, r.Stdout)
	}
	return rows
}

func (h *H) deploymentReplicas(name string) int32 {
	h.t.Helper()
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// infoJSON is the part of `app info -o json` these tests compare with the
// cluster.
type infoJSON struct {
	Release int    `json:"release"`
	Image   string `json:"image"`
	Running *struct {
		Releases   []int  `json:"releases"`
		Image      string `json:"image"`
		RollingOut bool   `json:"rollingOut"`
		Note       string `json:"note"`
	} `json:"running"`
}

func (h *H) appInfo(appName string) infoJSON {
	h.t.Helper()
	r := h.mustTug("app", "info", appName, "-o", "json")
	var in infoJSON
	if err := json.Unmarshal([]byte(r.Stdout), &in); err != nil {
		h.t.Fatalf("app info -o json: %v\n%s", err, r.Stdout)
	}
	return in
}

const runSelector = "tug.dev/kind=run"

// deployShop creates app name with a web process of the sample image and
// the given config, and waits for n ready web units.
func (h *H) deployShop(name string, n int, env ...string) []corev1.Pod {
	h.t.Helper()
	h.mustTug("app", "create", name)
	if len(env) > 0 {
		h.mustTug(append([]string{"env", "set", name, "--no-restart"}, env...)...)
	}
	h.mustTug("app", "deploy", name, "--image", sampleV1, "--process", "web=sample")
	if n != 1 {
		h.mustTug("app", "scale", name, fmt.Sprintf("web=%d", n))
	}
	return h.waitUnits(name, "web", n, sampleV1)
}

// waitNoRunPods waits until every run pod of the namespace is gone.
func (h *H) waitNoRunPods(timeout time.Duration) {
	h.t.Helper()
	h.WaitPods(runSelector, timeout, "no run pods left", func(pods []corev1.Pod) bool { return len(pods) == 0 })
}

// events returns the namespace's events with reason, oldest first.
func (h *H) events(reason string) []corev1.Event {
	h.t.Helper()
	list, err := h.Client.CoreV1().Events(h.NS).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// waitEvent waits for an event with reason on an object whose name starts
// with prefix and whose message contains text.
func (h *H) waitEvent(reason, prefix, text string) corev1.Event {
	h.t.Helper()
	var found corev1.Event
	h.Eventually(30*time.Second, fmt.Sprintf("a %s event on %s* saying %q", reason, prefix, text), func() (bool, error) {
		for _, e := range h.events(reason) {
			if strings.HasPrefix(e.InvolvedObject.Name, prefix) && strings.Contains(e.Message, text) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// dryRunState is what a dry run must leave as it found it: the release
// history and the app record as tug shows them, the units (by UID), the
// Deployment's generation, and every Secret, ConfigMap and Lease in the
// namespace (release records, config, the app record, the deploy lock).
type dryRunState struct {
	releases, info string
	units          []string
	generation     int64
	objects        []string
}

func (h *H) dryRunState(appName string) dryRunState {
	h.t.Helper()
	ctx := context.Background()
	s := dryRunState{
		releases: h.mustTug("release", "list", appName, "-o", "json").Stdout,
		info:     withoutUsage(h.t, h.mustTug("app", "info", appName, "-o", "json").Stdout),
	}
	pods, err := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, p := range pods.Items {
		s.units = append(s.units, p.Name+"/"+string(p.UID))
	}
	dep, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, appName+"-web", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	s.generation = dep.Generation
	secrets, err := h.Client.CoreV1().Secrets(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, o := range secrets.Items {
		s.objects = append(s.objects, fmt.Sprintf("Secret/%s@%s", o.Name, o.ResourceVersion))
	}
	cms, err := h.Client.CoreV1().ConfigMaps(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, o := range cms.Items {
		s.objects = append(s.objects, fmt.Sprintf("ConfigMap/%s@%s", o.Name, o.ResourceVersion))
	}
	leases, err := h.Client.CoordinationV1().Leases(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, o := range leases.Items {
		s.objects = append(s.objects, fmt.Sprintf("Lease/%s@%s", o.Name, o.ResourceVersion))
	}
	sort.Strings(s.units)
	sort.Strings(s.objects)
	return s
}

func (h *H) assertUnchanged(what string, before, after dryRunState) {
	h.t.Helper()
	if before.releases != after.releases {
		h.t.Errorf("%s changed the release list:\n%s\n-> %s", what, before.releases, after.releases)
	}
	if before.info != after.info {
		h.t.Errorf("%s changed app info:\n%s\n-> %s", what, before.info, after.info)
	}
	if strings.Join(before.units, " ") != strings.Join(after.units, " ") {
		h.t.Errorf("%s replaced units: %q -> %q", what, before.units, after.units)
	}
	if before.generation != after.generation {
		h.t.Errorf("%s changed the Deployment: generation %d -> %d", what, before.generation, after.generation)
	}
	if strings.Join(before.objects, " ") != strings.Join(after.objects, " ") {
		h.t.Errorf("%s changed Secrets, ConfigMaps or Leases:\n%q\n-> %q", what, before.objects, after.objects)
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

// desiredUnits is the unit count of the app's one process in its record.
func (h *H) desiredUnits(appName string) int32 {
	h.t.Helper()
	var in struct{ Processes []struct{ Desired int32 } }
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", appName, "-o", "json").Stdout), &in); err != nil || len(in.Processes) != 1 {
		h.t.Fatalf("app info: %v %+v", err, in)
	}
	return in.Processes[0].Desired
}
