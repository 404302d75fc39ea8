//go:build unix

// Command many benchmarks tug with one process of many running units
// (-units, default 200, cut to what the nodes' free pod slots hold):
//
//	deploy   a rolling deploy of a new image: tug app deploy's CPU seconds
//	         while it watches against kubectl rollout status's (started at
//	         the same time), and how long after the last unit is Ready
//	         (the Deployment complete, seen by this program's watch) each exits;
//	logs -f  time until every unit has a line on screen and the open
//	         sockets at that moment: tug logs -f vs kubectl logs -f -l.
//
//	go run ./bench/many -tug bin/tug -kubectl PATH -kubeconfig FILE [-units 200]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os/exec"
	"regexp"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"tug.dev/tug/bench/internal/benchkit"
)

var units = flag.Int("units", 200, "units wanted (fewer when the nodes cannot hold them)")

const ns = "bench-many"

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	n, why := fit(ctx, e, *units)
	defer e.Namespace(ctx, ns)()
	e.MustTug(ns, "app", "create", "bench")
	e.MustTug(ns, "env", "set", "bench", "HEARTBEAT=1s", "--no-restart")
	e.MustTug(ns, "app", "deploy", "bench", "--image", "localhost/tug/sample:v1", "--process", "web=sample", "--timeout", "5m")
	e.MustTug(ns, "app", "scale", "bench", fmt.Sprintf("web=%d", n), "--timeout", "15m")
	scale := fmt.Sprintf("%d units", n)
	if why != "" {
		scale += " (" + why + ")"
	}
	deploy(ctx, e, n, scale)
	logs(e, n, scale)
}

// fit is how many units the nodes can run: their pod capacity less the
// pods they have, less a margin.
func fit(ctx context.Context, e *benchkit.Env, want int) (int, string) {
	nodes, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	benchkit.Check("nodes", err)
	free := 0
	for _, nd := range nodes.Items {
		if nd.Spec.Unschedulable {
			continue
		}
		pods, err := e.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nd.Name})
		benchkit.Check("pods", err)
		free += int(nd.Status.Allocatable.Pods().Value()) - len(pods.Items)
	}
	// A rolling update surges by 25%: keep room for it.
	if fits := (free - 5) * 4 / 5; fits < want {
		return fits, fmt.Sprintf("%d wanted: %d nodes of %d pod slots hold %d with the rollout's surge", want, len(nodes.Items), nodes.Items[0].Status.Allocatable.Pods().Value(), fits)
	}
	return want, ""
}

func deploy(ctx context.Context, e *benchkit.Env, n int, scale string) {
	d, err := e.Client.AppsV1().Deployments(ns).Get(ctx, "bench-web", metav1.GetOptions{})
	benchkit.Check("deployment", err)
	w, err := e.Client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "bench-web").String(), ResourceVersion: d.ResourceVersion})
	benchkit.Check("watch", err)
	defer w.Stop()
	tug := e.TugCmd(ns, "app", "deploy", "bench", "--image", "localhost/tug/sample:v2", "--timeout", "15m")
	tugStart := time.Now()
	benchkit.Check("tug", tug.Start())
	tugDone := make(chan time.Time, 1)
	go func() { _ = tug.Wait(); tugDone <- time.Now() }()
	var kubectl *exec.Cmd
	kubectlDone := make(chan time.Time, 1)
	var complete time.Time
	for complete.IsZero() {
		ev, ok := <-w.ResultChan()
		if !ok {
			benchkit.Check("watch", fmt.Errorf("closed"))
		}
		d, ok := ev.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		if d.Generation > 0 && kubectl == nil && d.Spec.Template.Spec.Containers[0].Image == "localhost/tug/sample:v2" {
			kubectl = e.KubectlCmd(ns, "rollout", "status", "deployment/bench-web")
			benchkit.Check("kubectl", kubectl.Start())
			go func() { _ = kubectl.Wait(); kubectlDone <- time.Now() }()
		}
		s := d.Status
		r := *d.Spec.Replicas
		if kubectl != nil && s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r {
			complete = time.Now()
		}
	}
	t, k := <-tugDone, <-kubectlDone
	if !tug.ProcessState.Success() {
		benchkit.Check("tug app deploy", fmt.Errorf("exited %d", tug.ProcessState.ExitCode()))
	}
	tc, trss := benchkit.Usage(tug)
	kc, krss := benchkit.Usage(kubectl)
	_, rs := benchkit.Ratio(tc.Seconds(), kc.Seconds())
	e.Emit(benchkit.Row{Group: "Many units", Benchmark: "rolling deploy, " + scale,
		Tug:     fmt.Sprintf("%.2f CPU s, exits %s after the last unit is Ready, %s", tc.Seconds(), benchkit.Ms(t.Sub(complete)), benchkit.MiB(trss)),
		Kubectl: fmt.Sprintf("kubectl rollout status: %.2f CPU s, exits %s after, %s", kc.Seconds(), benchkit.Ms(k.Sub(complete)), benchkit.MiB(krss)),
		Ratio:   "CPU " + rs, Goal: "CPU <= 1.0x (no goal in the issue: reported)", Met: tc <= kc || tc < 2*time.Second,
		Requests: "-", Note: fmt.Sprintf("tug watches the pods too, to report failing units; rollout took %s", benchkit.Ms(complete.Sub(tugStart)))})
}

var (
	tugPrefix     = regexp.MustCompile(`^(\S+)\s+\| `)
	kubectlPrefix = regexp.MustCompile(`^\[pod/([^/\]]+)/`)
)

func logs(e *benchkit.Env, n int, scale string) {
	sel := "tug.dev/app=bench,tug.dev/process=web"
	type res struct {
		all     time.Duration
		sockets int
		rss     int64
	}
	follow := func(c *exec.Cmd, prefix *regexp.Regexp) res {
		out, err := c.StdoutPipe()
		benchkit.Check("logs", err)
		start := time.Now()
		benchkit.Check("logs", c.Start())
		seen := map[string]bool{}
		sc := bufio.NewScanner(out)
		var r res
		for sc.Scan() {
			if m := prefix.FindStringSubmatch(sc.Text()); m != nil && !seen[m[1]] {
				seen[m[1]] = true
				if len(seen) == n {
					r.all = time.Since(start)
					r.sockets = benchkit.Sockets(c.Process.Pid)
					break
				}
			}
		}
		_ = c.Process.Kill()
		_ = c.Wait()
		_, r.rss = benchkit.Usage(c)
		if r.all == 0 {
			benchkit.Check("logs", fmt.Errorf("%s: a line from %d of %d units", c.Args[0], len(seen), n))
		}
		return r
	}
	t := follow(e.TugCmd(ns, "logs", "bench", "-p", "web", "-f", "--tail", "1"), tugPrefix)
	k := follow(e.KubectlCmd(ns, "logs", "-l", sel, "-f", "--tail", "1", "--prefix", fmt.Sprintf("--max-log-requests=%d", n)), kubectlPrefix)
	r, rs := benchkit.Ratio(t.all.Seconds(), k.all.Seconds())
	e.Emit(benchkit.Row{Group: "Many units", Benchmark: "logs -f, a line from every unit, " + scale,
		Tug:     fmt.Sprintf("%s, %d open sockets, %s", benchkit.Ms(t.all), t.sockets, benchkit.MiB(t.rss)),
		Kubectl: fmt.Sprintf("kubectl logs -l -f --prefix: %s, %d open sockets, %s", benchkit.Ms(k.all), k.sockets, benchkit.MiB(k.rss)),
		Ratio:   rs, Goal: "<= 1.0x", Met: r <= 1.0, Requests: "-", Note: "one run each; sockets counted in /proc/PID/fd when the last unit's line arrived"})
}
