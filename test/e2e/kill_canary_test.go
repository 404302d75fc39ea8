package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"tug.dev/tug/test/faultproxy"
)

// kill -9 at seven points of a canary's life (start, promote, abort): the
// next command that takes the app's lock makes the record, the route's
// weights and the units agree (docs/reliability.md, "Canary"); at no
// point does the record say one release runs while the canary's units do.

// canaryRecord is what the app record says of its canary.
type canaryRecord struct {
	Release int `json:"release"`
	Canary  *struct {
		Release int    `json:"release"`
		Phase   string `json:"phase"`
		Weight  int    `json:"weight"`
	} `json:"canary"`
}

func (h *H) canaryRecord(appName string) canaryRecord {
	h.t.Helper()
	cm, err := h.Client.CoreV1().ConfigMaps(h.NS).Get(context.Background(), "tug-app-"+appName, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var rec canaryRecord
	if err := json.Unmarshal([]byte(cm.Data["app.json"]), &rec); err != nil {
		h.t.Fatal(err)
	}
	return rec
}

// kill9At runs tug with args and kills it (SIGKILL) once at holds; the
// lease it held is deleted, standing in for its expiry.
func (h *H) kill9At(appName, at string, cond func() bool, args ...string) {
	h.t.Helper()
	cmd := exec.Command(env.tug, args...)
	cmd.Env = h.tugEnv(nil)
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	h.Eventually(2*time.Minute, "tug "+strings.Join(args, " ")+" reaches "+at, func() (bool, error) {
		select {
		case err := <-exited:
			h.t.Fatalf("tug %s ended (%v) before %s", strings.Join(args, " "), err, at)
		default:
		}
		return cond(), nil
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	h.dropLease(appName)
}

// routeBackends are the app's HTTPRoute's backendRefs as "name" or
// "name:weight".
func (h *H) routeBackends(dyn dynamic.Interface, appName string) []string {
	h.t.Helper()
	u, err := dyn.Resource(httpRoutes).Namespace(h.NS).Get(context.Background(), appName, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	refs, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "backendRefs")
	var out []string
	for _, r := range refs {
		m := r.(map[string]any)
		s := m["name"].(string)
		if w, ok := m["weight"]; ok {
			s += fmt.Sprintf(":%v", w)
		}
		out = append(out, s)
	}
	return out
}

func TestKill9DuringCanary(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	dyn, err := dynamic.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	const name = "k9can"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)
	ctx := context.Background()
	canaryDeployment := func() bool {
		_, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, name+"-web-canary", metav1.GetOptions{})
		return err == nil
	}
	canaryReady := func() bool {
		d, err := h.Client.AppsV1().Deployments(h.NS).Get(ctx, name+"-web-canary", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas > 0
	}
	phase := func(p string) func() bool {
		return func() bool { c := h.canaryRecord(name).Canary; return c != nil && c.Phase == p }
	}
	image := map[string]string{"v1": sampleV1, "v2": sampleV2}
	other := func() string {
		if h.appInfo(name).Image == sampleV1 {
			return sampleV2
		}
		return sampleV1
	}
	startCanary := func() { h.mustTug("app", "deploy", name, "--image", other(), "--canary", "50%") }
	f := h.faulty()
	// exact kill points, through the fault proxy: once the server has the
	// request (Lost), or before it gets it (Stall)
	webRolled := &faultproxy.Rule{Method: "PATCH", Path: "/deployments/" + name + "-web", Fault: faultproxy.Lost}
	canaryGoing := &faultproxy.Rule{Method: "DELETE", Path: "/deployments/" + name + "-web-canary", Fault: faultproxy.Stall}
	var table []string
	for _, p := range []struct {
		point  string
		before func()
		cond   func() bool
		rule   *faultproxy.Rule // kill there instead of at cond
		args   []string
		next   []string // the next command; tug app scale APP web=1 when nil
	}{
		{"deploy --canary: its Deployment made, no unit ready", nil, canaryDeployment, nil, []string{"app", "deploy", name, "--image", sampleV2, "--canary", "50%"}, nil},
		{"deploy --canary: a canary unit ready", nil, canaryReady, nil, []string{"app", "deploy", name, "--image", sampleV2, "--canary", "50%"}, nil},
		{"release promote: every request to the canary", startCanary, phase("promoting"), nil, []string{"release", "promote", name}, nil},
		{"release promote: the web Deployment rolling to the canary's release", startCanary, func() bool { return webRunsCanary(h, name) }, nil, []string{"release", "promote", name}, nil},
		{"release abort: every request back", startCanary, phase("aborting"), nil, []string{"release", "abort", name}, nil},
		{"release promote: the split ending, the canary's Deployment not yet removed", startCanary, nil, canaryGoing, []string{"release", "promote", name}, nil},
		{"release promote: the web Deployment sent to the canary's release; then release abort", startCanary, nil, webRolled, []string{"release", "promote", name}, []string{"release", "abort", name}},
	} {
		if p.before != nil {
			p.before()
		}
		if p.rule != nil {
			h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, p.point, *p.rule, p.args...)
			h.dropLease(name)
		} else {
			h.kill9At(name, p.point, p.cond, p.args...)
		}
		killed := h.canaryRecord(name)
		if canaryDeployment() && killed.Canary == nil {
			t.Fatalf("%s: the canary's Deployment runs while the record (v%d) names no canary", p.point, killed.Release)
		}
		// the next command that takes the lock settles it: a canary that
		// was running stays, at the weights its record says (and the
		// scale is refused); anything else ends in one release
		settled := "no canary"
		nextArgs := p.next
		if nextArgs == nil {
			nextArgs = []string{"app", "scale", name, "web=1"}
		} else {
			settled = "tug " + strings.Join(nextArgs, " ") + ": no canary"
		}
		if next := h.Tug(nextArgs...); next.Code != 0 {
			c := h.canaryRecord(name).Canary
			if !strings.Contains(next.Stderr, "refused") || c == nil || c.Phase != "running" || !canaryReady() {
				t.Fatalf("%s: the next command: %s (record %+v)", p.point, next, c)
			}
			want := []string{fmt.Sprintf("%s-track-stable:%d", name, 100-c.Weight), fmt.Sprintf("%s-track-canary:%d", name, c.Weight)}
			if b := h.routeBackends(dyn, name); strings.Join(b, " ") != strings.Join(want, " ") {
				t.Fatalf("%s: a running canary's route %v, its record says %v", p.point, b, want)
			}
			settled = fmt.Sprintf("canary running %d%%, route %s; then aborted", c.Weight, strings.Join(want, ", "))
			h.mustTug("release", "abort", name)
		}
		rec := h.canaryRecord(name)
		if rec.Canary != nil {
			t.Fatalf("%s: after the next command the record still names a canary: %+v", p.point, rec.Canary)
		}
		if p.next != nil && rec.Release != killed.Release {
			t.Fatalf("%s: the abort should undo the promote: record v%d, v%d before it", p.point, rec.Release, killed.Release)
		}
		if canaryDeployment() {
			t.Fatalf("%s: the canary's Deployment is left", p.point)
		}
		if b := h.routeBackends(dyn, name); len(b) != 1 || strings.Split(b[0], ":")[0] != name {
			t.Fatalf("%s: the route still splits: %v", p.point, b)
		}
		h.noCanaryLeft(name)
		v := fmt.Sprintf("v%d", rec.Release)
		running := h.appInfo(name).Image
		h.waitUnits(name, "web", 1, running)
		want := "v1"
		if running == sampleV2 {
			want = "v2"
		}
		if got := versions(t, r, url, 50); got[want] != 50 {
			t.Fatalf("%s: every request should reach the record's release %s (%s): %v", p.point, v, image[want], got)
		}
		phaseAt := "-"
		if killed.Canary != nil {
			phaseAt = fmt.Sprintf("%s %d%%", killed.Canary.Phase, killed.Canary.Weight)
		}
		table = append(table, fmt.Sprintf("| %s | v%d, canary %s | %s; record v%d, route to %s only, every request answered by %s |", p.point, killed.Release, phaseAt, settled, rec.Release, name, want))
	}
	t.Log("\n" + strings.Join(table, "\n"))
}

// webRunsCanary says whether the web Deployment's template names the
// release the record's canary runs (a promote under way).
func webRunsCanary(h *H, appName string) bool {
	c := h.canaryRecord(appName).Canary
	if c == nil {
		return false
	}
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), appName+"-web", metav1.GetOptions{})
	return err == nil && d.Spec.Template.Labels["tug.dev/release"] == strconv.Itoa(c.Release)
}
