package e2e

// Harness: fault injection through a fault proxy (faulty, killAt,
// startThrough) and the checks that an app is settled and truthful after
// a fault.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/test/faultproxy"
)

// faulty is tug reaching the cluster through a fault-injecting proxy
// (test/faultproxy): the test adds rules, runs tug, and checks that what tug
// says and what the cluster runs agree afterwards.
type faulty struct {
	h          *H
	p          *faultproxy.Proxy
	kubeconfig string
}

func (h *H) faulty() *faulty {
	h.t.Helper()
	p, err := faultproxy.Start(env.config)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(p.Close)
	path := filepath.Join(h.t.TempDir(), "faulty.kubeconfig")
	if err := p.WriteKubeconfig(path, h.NS); err != nil {
		h.t.Fatal(err)
	}
	return &faulty{h: h, p: p, kubeconfig: path}
}

// tug runs tug through the proxy; the rules in force are cleared afterwards.
func (f *faulty) tug(args ...string) Result {
	f.h.t.Helper()
	return f.tugRun(Run{Args: args})
}

func (f *faulty) tugRun(r Run) Result {
	f.h.t.Helper()
	defer f.p.Clear()
	seen := len(f.p.Log())
	r.Env = append(r.Env, "KUBECONFIG="+f.kubeconfig)
	res := f.h.TugRun(r)
	f.h.t.Logf("tug %s: exit %d; faults injected: %q", strings.Join(r.Args, " "), res.Code, f.p.Log()[seen:])
	return res
}

func (f *faulty) must(args ...string) Result {
	f.h.t.Helper()
	r := f.tug(args...)
	if r.Code != 0 {
		f.h.t.Fatalf("tug %s through the fault proxy: %s", strings.Join(args, " "), r)
	}
	return r
}

// injected fails the test unless the proxy injected fault at least once:
// a scenario whose rule never matched tests nothing.
func (f *faulty) injected(fault faultproxy.Fault, before int) {
	f.h.t.Helper()
	if f.p.Injected(fault) <= before {
		f.h.t.Fatalf("the proxy never injected %s; rules did not match any request", fault)
	}
}

// killAt is proxiedContexts.killAt for any proxy: tug runs with extra
// added to the test's environment (the kubeconfig that reaches proxy).
func (h *H) killAt(proxy *faultproxy.Proxy, extra []string, what string, rule faultproxy.Rule, args ...string) string {
	t := h.t
	t.Helper()
	proxy.Clear()
	proxy.Add(rule)
	cmd, exited, stderr := h.startThrough(proxy, extra, rule, what, args...)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	proxy.Clear()
	t.Logf("killed tug %s after %s; its stderr:\n%s", strings.Join(args, " "), what, stderr.String())
	return stderr.String()
}

// startThrough starts tug with args (extra added to the test's
// environment) and waits
// until proxy has injected rule's fault once more (what names that
// point); it fails the test if tug ends by itself first. The caller ends
// tug; exited gets its Wait's error.
func (h *H) startThrough(proxy *faultproxy.Proxy, extra []string, rule faultproxy.Rule, what string, args ...string) (cmd *exec.Cmd, exited chan error, stderr *bytes.Buffer) {
	t := h.t
	t.Helper()
	before := proxy.Injected(rule.Fault)
	cmd = exec.Command(env.tug, args...)
	cmd.Env = h.tugEnv(extra)
	stderr = &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // a test that fails midway leaves no tug running
	h.Eventually(3*time.Minute, "tug "+strings.Join(args, " ")+" reaches: "+what, func() (bool, error) {
		select {
		case err := <-exited:
			t.Fatalf("tug %s ended by itself (%v) before %s; stderr:\n%s", strings.Join(args, " "), err, what, stderr.String())
		default:
		}
		return proxy.Injected(rule.Fault) > before, nil
	})
	return cmd, exited, stderr
}

// settledAndTruthful checks the end state of a scenario: the units have
// settled on one release, nothing is pending, and app info and the release
// list agree with the units. It returns the units' release.
func (h *H) settledAndTruthful(appName string) (int, string) {
	h.t.Helper()
	units, image := h.settledUnits(appName, 2*time.Minute)
	in, _ := h.assertAgrees(appName, units, image, true)
	if in.Release != units {
		h.t.Errorf("record v%d, units run v%d", in.Release, units)
	}
	return units, image
}

// settledUnits waits until every Deployment of the app has rolled out
// (kubectl rollout status's rule) and returns the release and image their
// pod templates name; "mixed" when they disagree.
func (h *H) settledUnits(appName string, timeout time.Duration) (release int, image string) {
	h.t.Helper()
	h.Eventually(timeout, "the units of "+appName+" settle", func() (bool, error) {
		deps, err := h.Client.AppsV1().Deployments(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName})
		if err != nil {
			return false, err
		}
		release, image = 0, ""
		for _, d := range deps.Items {
			if !rolledOut(&d) {
				return false, fmt.Errorf("%s: %+v", d.Name, d.Status)
			}
			v, _ := strconv.Atoi(d.Spec.Template.Labels["tug.dev/release"])
			if release != 0 && v != release {
				return false, fmt.Errorf("deployments on releases %d and %d", release, v)
			}
			release, image = v, d.Spec.Template.Spec.Containers[0].Image
		}
		return true, nil
	})
	return release, image
}

// assertAgrees checks that `app info` and `release list` tell what the
// units run: no release pending, and either the record names the units'
// release or info's running field does.
func (h *H) assertAgrees(appName string, units int, unitImage string, wantNoPending bool) (infoJSON, []releaseRow) {
	h.t.Helper()
	in := h.appInfo(appName)
	rows := h.releases(appName)
	switch {
	case in.Release == units && in.Running != nil:
		h.t.Errorf("app info: record v%d is what runs, but running = %+v", in.Release, in.Running)
	case in.Release == units && in.Image != unitImage:
		h.t.Errorf("app info: image %s, the units run %s", in.Image, unitImage)
	case in.Release != units && (in.Running == nil || !slices.Equal(in.Running.Releases, []int{units}) || in.Running.Image != unitImage):
		h.t.Errorf("app info: record v%d, units run v%d (%s), running = %+v", in.Release, units, unitImage, in.Running)
	}
	if wantNoPending {
		for _, r := range rows {
			if r.Status == "pending" {
				h.t.Errorf("release v%d still pending after a command took the lock: %+v", r.Version, rows)
			}
		}
	}
	return in, rows
}

// templateRelease is the release and image the app's Deployments' pod
// templates name now, settled or not ("mixed" fails the test).
func (h *H) templateRelease(appName string) (int, string) {
	h.t.Helper()
	deps, err := h.Client.AppsV1().Deployments(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	release, image := 0, ""
	for _, d := range deps.Items {
		v, _ := strconv.Atoi(d.Spec.Template.Labels["tug.dev/release"])
		if release != 0 && v != release {
			h.t.Fatalf("deployments on releases %d and %d", release, v)
		}
		release, image = v, d.Spec.Template.Spec.Containers[0].Image
	}
	return release, image
}

func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

func statusOf(rows []releaseRow, v int) string {
	for _, r := range rows {
		if r.Version == v {
			return r.Status
		}
	}
	return "(pruned)"
}

// dropLease deletes the app's lease, standing in for a killed tug's
// expiry.
func (h *H) dropLease(appName string) {
	h.t.Helper()
	err := h.Client.CoordinationV1().Leases(h.NS).Delete(context.Background(), "tug-lock-"+appName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Fatal(err)
	}
}

// killTable is the Markdown table a kill test logs: a numbered row per
// kill point under header.
func killTable(header []string, rows [][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| # | %s |\n|---|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	for i, r := range rows {
		fmt.Fprintf(&b, "| %d | %s |\n", i+1, strings.Join(r, " | "))
	}
	return b.String()
}
