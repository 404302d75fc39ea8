package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"tug.dev/tug/test/faultproxy"
)

// extraAPIServer is a second kube-apiserver of the local cluster (same
// etcd, certificates and flags: `cluster.sh apiserver start PORT`), for a
// test to stop and start while the rest of the suite keeps using the
// cluster's own.
type extraAPIServer struct {
	h      *H
	port   int
	Config *rest.Config // reaches it with the admin's credentials
}

// extraAPIServer starts one on a free loopback port; it is killed when
// the test ends.
func (h *H) extraAPIServer() *extraAPIServer {
	h.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	a := &extraAPIServer{h: h, port: port, Config: rest.CopyConfig(env.config)}
	a.Config.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	h.t.Cleanup(func() { a.run("kill") })
	a.run("start")
	return a
}

// run is `cluster.sh apiserver VERB PORT`; start returns once the
// apiserver is ready, kill once it is gone.
func (a *extraAPIServer) run(verb string) {
	a.h.t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(), "test", "cluster", "cluster.sh"), "apiserver", verb, fmt.Sprint(a.port))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		a.h.t.Fatalf("cluster.sh apiserver %s %d: %v\n%s", verb, a.port, err, out.String())
	}
}

// The API server restarts in the middle of a deploy. tug talks only to a
// second kube-apiserver of the local cluster, through the fault proxy; the
// proxy holds the server's answer to the request of each point (Hold: the
// server has done it, tug has not heard yet), the test kills that
// apiserver (SIGKILL), takes the proxy down with it (connections reset,
// new ones refused, as a dead server's), lets the held answer go or drops
// it, starts the apiserver again and brings the proxy back. The cluster's
// own apiserver, which the rest of the suite uses, never stops.
//
// Afterwards: tug has ended (exit 0, or a failure that says it could not
// reach the cluster), `app info` agrees with what the Deployments run at
// once, the next command that takes the app's lock is not blocked for good
// (a lease tug could not delete expires), and after it no release is
// pending and the record, `release list` and the units agree.
func TestAPIServerRestartDuringDeploy(t *testing.T) {
	h := New(t)
	api := h.extraAPIServer()
	proxy, err := faultproxy.Start(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig-extra-apiserver")
	if err := proxy.WriteKubeconfig(kubeconfig, h.NS); err != nil {
		t.Fatal(err)
	}
	viaExtra := []string{"KUBECONFIG=" + kubeconfig}
	tug := func(args ...string) Result {
		t.Helper()
		return h.TugRun(Run{Args: args, Env: viaExtra})
	}
	must := func(args ...string) Result {
		t.Helper()
		r := tug(args...)
		if r.Code != 0 {
			t.Fatalf("tug %s: %s", strings.Join(args, " "), r)
		}
		return r
	}
	must("app", "create", "shop")
	must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	must("app", "scale", "shop", "web=2")
	h.settledAndTruthful("shop")

	type point struct {
		name string
		rule func(next int) faultproxy.Rule
		// drop: the server did the request and died before answering
		drop bool
	}
	points := []point{
		{"the release record stored (tug hears it was)", func(int) faultproxy.Rule {
			return faultproxy.Rule{Method: "POST", Path: "/namespaces/" + h.NS + "/secrets", Fault: faultproxy.Hold, Count: 1}
		}, false},
		{"the rollout wait begun (its Deployment watch open)", func(int) faultproxy.Rule {
			return faultproxy.Rule{Method: "GET", Path: "/namespaces/" + h.NS + "/deployments", Watch: "yes", Fault: faultproxy.Hold, Count: 1}
		}, false},
		{"the record naming the new release written, the answer lost (marking it deployed)", func(next int) faultproxy.Rule {
			// the record's JSON, as a string of the ConfigMap client-go
			// sends as protobuf (no escaping)
			return faultproxy.Rule{Method: "PUT", Path: "/namespaces/" + h.NS + "/configmaps/tug-app-shop", Body: fmt.Sprintf(`"release":%d,`, next), Fault: faultproxy.Hold, Count: 1}
		}, true},
	}
	type row struct {
		point, exit, down, infoAfter, lockWait, status string
		units, record                                  int
	}
	var table []row
	for _, p := range points {
		before := h.releases("shop")
		next := before[0].Version + 1
		img := sampleV1
		if h.appInfo("shop").Image == sampleV1 {
			img = sampleV2
		}
		proxy.Clear()
		rule := p.rule(next)
		proxy.Add(rule)
		cmd, exited, stderr := h.startThrough(proxy, viaExtra, rule, p.name, "app", "deploy", "shop", "--image", img)
		t.Cleanup(func() { _ = cmd.Process.Kill() })

		// the server has done the request; tug has not heard
		api.run("kill")
		stopped := time.Now()
		proxy.Down()
		if p.drop {
			proxy.Drop()
		} else {
			proxy.Release()
		}
		api.run("start")
		if err := proxy.Up(); err != nil {
			t.Fatal(err)
		}
		r := row{point: p.name, down: time.Since(stopped).Round(100 * time.Millisecond).String()}

		select {
		case <-exited:
		case <-time.After(5 * time.Minute):
			t.Fatalf("tug app deploy still runs 5 minutes after the apiserver came back; stderr:\n%s", stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		r.exit = fmt.Sprintf("exit %d: %s", cmd.ProcessState.ExitCode(), lines[len(lines)-1])
		t.Logf("%s: held %q; tug %s; the apiserver was down %s; stderr:\n%s", p.name, proxy.Log(), r.exit, r.down, stderr.String())
		if code := cmd.ProcessState.ExitCode(); code != 0 && !strings.Contains(stderr.String(), "cannot reach the cluster") &&
			!strings.Contains(stderr.String(), "deploy lock") {
			t.Errorf("%s: tug failed without saying it lost the cluster or the lock: %s", p.name, r.exit)
		}

		// app info at once (it takes no lock) names what the Deployments run
		tmpl, tmplImage := h.templateRelease("shop")
		in, _ := h.assertAgrees("shop", tmpl, tmplImage, false)
		r.infoAfter = fmt.Sprintf("record v%d", in.Release)
		if in.Running != nil {
			r.infoAfter += fmt.Sprintf(", running v%d", in.Running.Releases[len(in.Running.Releases)-1])
		}
		r.infoAfter += fmt.Sprintf("; v%d %s", next, statusOf(h.releases("shop"), next))

		// the next lock taker: refused while a lease tug could not delete
		// lives, then through
		waited := time.Now()
		h.Eventually(2*time.Minute, "app scale takes the lock", func() (bool, error) {
			res := tug("app", "scale", "shop", "web=2")
			if res.Code != 0 && !strings.Contains(res.Stderr, "is being changed by") {
				t.Fatalf("app scale after the restart: %s", res)
			}
			return res.Code == 0, fmt.Errorf("%s", strings.TrimSpace(res.Stderr))
		})
		r.lockWait = time.Since(waited).Round(time.Second).String()

		units, unitImage := h.settledUnits("shop", 2*time.Minute)
		in, rows := h.assertAgrees("shop", units, unitImage, true)
		r.units, r.record, r.status = units, in.Release, statusOf(rows, next)
		if r.status == "(pruned)" {
			r.status = "none stored"
		} else if (r.status == "deployed") != (units == next) {
			t.Errorf("%s: v%d is %s but the units run v%d", p.name, next, r.status, units)
		}
		if !slices.Contains([]string{"deployed", "interrupted", "none stored"}, r.status) {
			t.Errorf("%s: v%d is %s after the next lock taker, want deployed or interrupted", p.name, next, r.status)
		}
		table = append(table, r)
	}
	// and a deploy after all that works, through the restarted apiserver
	must("app", "deploy", "shop", "--image", sampleV2)
	h.settledAndTruthful("shop")

	var b strings.Builder
	fmt.Fprintf(&b, "| # | apiserver killed after | down for | tug | app info right after | next lock taker waited | release after it | units run | record |\n|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range table {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | v%d | v%d |\n", i+1, r.point, r.down, r.exit, r.infoAfter, r.lockWait, r.status, r.units, r.record)
	}
	t.Logf("API server restart table:\n%s", b.String())
}
