//go:build unix

// Command many benchmarks tug with one process of many running units
// (-units, default 200, cut to what the nodes' free pod slots hold next to
// whatever else the shared cluster runs):
//
//	deploy   a rolling deploy of a new image: tug app deploy's CPU seconds
//	         (the whole command: it applies, then watches) against kubectl
//	         rollout status's, started when the Deployment changes, and how
//	         long after the last unit is Ready (the Deployment complete, seen
//	         by this program's watch) each exits;
//	logs -f  time until every unit has a line on screen and the open
//	         sockets at that moment: tug logs -f vs kubectl logs -f -l.
//
// The process is a worker (`sample worker`: no listener, no probe, no stop
// delay) with tiny requests, so the units cost the nodes little.
//
//	go run ./bench/many -tug bin/tug -kubectl PATH -kubeconfig FILE [-units 200]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	units  = flag.Int("units", 200, "units wanted (fewer when the nodes cannot hold them)")
	margin = flag.Int("margin", 20, "pod slots left free for the other users of the cluster")
	trace  = flag.String("trace", "", "file to write the measured tug deploy's -v 6 stderr to")
)

const (
	ns         = "bench-many"
	proc       = "worker"
	deployment = "bench-" + proc
)

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	cleanup := e.Namespace(ctx, ns)
	defer func() { defer benchkit.Phase("deleting the namespace")(); cleanup() }()
	free, nodes, perNode := e.FreePodSlots(ctx)
	room := free - *margin
	// A rollout surges by 25% (rounded up) with none unavailable, and the
	// units it replaces hold their slots until their kubelet has stopped
	// them, which the Deployment controller does not wait for: up to a
	// surge's worth more. A unit that cannot be placed for 10 s fails
	// tug's deploy (exit 13), so the count leaves room for both.
	nDeploy := min(*units, room)
	for nDeploy+2*((nDeploy+3)/4) > room {
		nDeploy--
	}
	if nDeploy < 2 {
		benchkit.Check("capacity", fmt.Errorf("%d free pod slots: too few for the benchmark", free))
	}
	why := func(n int, surge string) string {
		if n == *units {
			return fmt.Sprintf("%d units", n)
		}
		return fmt.Sprintf("%d units (%d wanted: %d nodes of %d pod slots had %d free, less %d left to the cluster's other users%s)",
			n, *units, nodes, perNode, free, *margin, surge)
	}
	fmt.Printf("%d free pod slots: deploy and logs with %d units\n", free, nDeploy)
	started := benchkit.Phase(fmt.Sprintf("starting %d units", nDeploy))
	e.SampleApp(ns, "bench", proc, nDeploy)
	started()
	deployScale := why(nDeploy, " and the rollout's 25% surge twice: new units and the old ones still stopping")
	deploy(ctx, e, "rolling deploy of one process, "+deployScale, benchkit.SampleImage+":v2")
	if bin, name, ok := benchkit.Before("many"); ok {
		// back to v1, by the tug before a fix: the same rollout the other way
		deploy(ctx, e.WithTug(bin), "rolling deploy of one process, "+name+", "+deployScale, benchkit.SampleImage+":v1")
	}
	// logs -f with the deploy's units: scaling up for it (to every free
	// slot) cost make bench a minute, starting and then stopping a third
	// more units, for a row that reads the same per unit
	e.WaitUnits(ns, "bench", proc, nDeploy)
	logs(e, nDeploy, why(nDeploy, ""))
}

// deploy measures a rolling deploy of image to the units, as row name.
func deploy(ctx context.Context, e *benchkit.Env, name, image string) {
	d, err := e.Client.AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{})
	benchkit.Check("deployment", err)
	w, err := e.Client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", deployment).String(), ResourceVersion: d.ResourceVersion})
	benchkit.Check("watch", err)
	defer w.Stop()
	tug := e.TugCmd(ns, "app", "deploy", "bench", "--image", image, "--process", benchkit.SampleProcess(proc), "--timeout", "15m", "-v", "6")
	var traced bytes.Buffer
	tug.Stderr = &traced
	tugStart := time.Now()
	benchkit.Check("tug", tug.Start())
	tugDone := make(chan time.Time, 1)
	go func() { _ = tug.Wait(); tugDone <- time.Now() }()
	complete, kubectl, kubectlDone := watchRollout(e, w, image)
	t, k := <-tugDone, <-kubectlDone
	if !tug.ProcessState.Success() {
		benchkit.Check("tug app deploy", fmt.Errorf("exited %d: ...%s", tug.ProcessState.ExitCode(), traced.Bytes()[max(0, traced.Len()-3000):]))
	}
	if !kubectl.ProcessState.Success() {
		benchkit.Check("kubectl rollout status", fmt.Errorf("exited %d", kubectl.ProcessState.ExitCode()))
	}
	if *trace != "" {
		benchkit.Check("trace", os.WriteFile(*trace, traced.Bytes(), 0o644))
		fmt.Printf("rollout complete at %s; tug exited at %s, kubectl at %s\n", complete.Format("15:04:05.000"), t.Format("15:04:05.000"), k.Format("15:04:05.000"))
	}
	requests, _ := benchkit.Requests(traced.Bytes())
	noticed, after := firstRequestAfter(traced.Bytes(), complete)
	tc, trss := benchkit.Usage(tug)
	kc, krss := benchkit.Usage(kubectl)
	_, rs := benchkit.Ratio(tc.Seconds(), kc.Seconds())
	tugLag, kubectlLag := t.Sub(complete), k.Sub(complete)
	noticedLag := noticed.Sub(complete)
	e.Emit(benchkit.Row{Group: "Many units", Benchmark: name,
		Tug: fmt.Sprintf("%.2f CPU s; after the last unit is Ready: notices %s, exits %s; %s",
			tc.Seconds(), benchkit.Ms(noticedLag), benchkit.Ms(tugLag), benchkit.MiB(trss)),
		Kubectl:  fmt.Sprintf("kubectl rollout status: %.2f CPU s; exits %s after; %s", kc.Seconds(), benchkit.Ms(kubectlLag), benchkit.MiB(krss)),
		Ratio:    fmt.Sprintf("CPU %s; noticed tug - kubectl %s", rs, benchkit.Ms(noticedLag-kubectlLag)),
		Goal:     "noticed <= 50 ms after kubectl's exit, as with 2 units (CPU and exit: reported)",
		Met:      !noticed.IsZero() && noticedLag-kubectlLag <= 50*time.Millisecond,
		Requests: fmt.Sprint(requests),
		Note: fmt.Sprintf("one run; the rollout took %s; tug notices the rollout is complete when it makes its next request (its -v 6 trace), then records the release and lets go of its deploy lock: %d sequential requests, the same for any number of units, took it to its exit; tug's CPU is the whole command (apply, record the release, watch the Deployment and its units to explain failures), kubectl's only watches the Deployment",
			benchkit.Ms(complete.Sub(tugStart)), after)})
}

// watchRollout follows the Deployment (w) until the rollout of image is
// complete, starting kubectl rollout status as soon as the Deployment has
// the new template, as a user would after applying it. It returns when
// the rollout completed, and kubectl with when it exited.
func watchRollout(e *benchkit.Env, w watch.Interface, image string) (time.Time, *exec.Cmd, <-chan time.Time) {
	var kubectl *exec.Cmd
	kubectlDone := make(chan time.Time, 1)
	for {
		ev, ok := <-w.ResultChan()
		if !ok {
			benchkit.Check("watch", fmt.Errorf("closed"))
		}
		d, ok := ev.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		if kubectl == nil && d.Spec.Template.Spec.Containers[0].Image == image {
			kubectl = e.KubectlCmd(ns, "rollout", "status", "deployment/"+deployment)
			benchkit.Check("kubectl", kubectl.Start())
			go func() { _ = kubectl.Wait(); kubectlDone <- time.Now() }()
		}
		s := d.Status
		r := *d.Spec.Replicas
		if kubectl != nil && s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r {
			return time.Now(), kubectl, kubectlDone
		}
	}
}

// traceTime is the clock time at the start of a tug -v 6 trace line.
var traceTime = regexp.MustCompile(`(?m)^trace: (\d\d:\d\d:\d\d\.\d\d\d) `)

// firstRequestAfter finds the first request tug's trace shows starting at
// or after t (the trace has the clock time to the millisecond, so one
// that started in t's millisecond counts), and how many followed it.
func firstRequestAfter(trace []byte, t time.Time) (time.Time, int) {
	day := t.Truncate(time.Millisecond)
	for i, m := range traceTime.FindAllSubmatch(trace, -1) {
		c, err := time.ParseInLocation("15:04:05.000", string(m[1]), time.Local)
		if err != nil {
			continue
		}
		at := time.Date(day.Year(), day.Month(), day.Day(), c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), time.Local)
		if !at.Before(day) {
			return at, len(traceTime.FindAllSubmatch(trace, -1)) - i
		}
	}
	return time.Time{}, 0
}

func logs(e *benchkit.Env, n int, scale string) {
	sel := "tug.dev/app=bench,tug.dev/process=" + proc
	t, err := benchkit.FollowLogs(e.TugCmd(ns, "logs", "bench", "-p", proc, "-f", "--tail", "1"), benchkit.TugLogPrefix, n, 5*time.Minute)
	benchkit.Check("tug logs", err)
	k, err := benchkit.FollowLogs(e.KubectlCmd(ns, "logs", "-l", sel, "-f", "--tail", "1", "--prefix", fmt.Sprintf("--max-log-requests=%d", n)), benchkit.KubectlLogPrefix, n, 5*time.Minute)
	benchkit.Check("kubectl logs", err)
	// Requests, from a second run of each at -v 6 (not timed: tracing
	// costs a little).
	tr, err := benchkit.FollowLogs(e.TugCmd(ns, "logs", "bench", "-p", proc, "-f", "--tail", "1", "-v", "6"), benchkit.TugLogPrefix, n, 5*time.Minute)
	benchkit.Check("tug logs -v 6", err)
	kr, err := benchkit.FollowLogs(e.KubectlCmd(ns, "logs", "-l", sel, "-f", "--tail", "1", "--prefix", fmt.Sprintf("--max-log-requests=%d", n), "-v", "6"), benchkit.KubectlLogPrefix, n, 5*time.Minute)
	benchkit.Check("kubectl logs -v 6", err)
	treq, _ := benchkit.Requests(tr.Stderr)
	kreq, _ := benchkit.Requests(kr.Stderr)
	r, rs := benchkit.Ratio(t.All.Seconds(), k.All.Seconds())
	e.Emit(benchkit.Row{Group: "Many units", Benchmark: "logs -f, a line from every unit, " + scale,
		Tug:     fmt.Sprintf("%s, %d open sockets, %s", benchkit.Ms(t.All), t.Sockets, benchkit.MiB(t.MaxRSSKiB)),
		Kubectl: fmt.Sprintf("kubectl logs -l -f --prefix --max-log-requests=%d: %s, %d open sockets, %s", n, benchkit.Ms(k.All), k.Sockets, benchkit.MiB(k.MaxRSSKiB)),
		Ratio:   rs, Goal: "<= 1.0x", Met: r <= 1.0, Requests: fmt.Sprintf("%d (kubectl %d)", treq, kreq),
		Note: "one timed run each; requests counted in a second run at -v 6 until every unit had a line (a log stream is one request); sockets counted in /proc/PID/fd when the last unit's first line arrived; the units log a heartbeat every second"})
}
