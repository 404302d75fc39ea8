//go:build unix

// Command scale benchmarks tug's listing commands at ten times the scale of
// a small cluster: NODES registered nodes (Node objects only: no kubelet
// runs them, they are tainted and unschedulable, nothing else lands there)
// and PODS units bound to them, which stay Pending. They cost the API
// server and etcd, not the machine's two cores.
//
//	unit list   tug unit list APP   vs  kubectl get pods -l SELECTOR
//	node list   tug node list       vs  kubectl get nodes -o wide
//
// Each reports median wall time and peak memory over -rounds interleaved
// runs, and API requests (-v 6). -tug-before adds a row for another tug
// binary (the one before a fix) for the before/after.
//
//	go run ./bench/scale -tug bin/tug -kubectl PATH -kubeconfig FILE [-pods 10000] [-nodes 1000]
package main

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	pods   = flag.Int("pods", 10000, "units")
	nodes  = flag.Int("nodes", 1000, "fake nodes the units are bound to")
	rounds = flag.Int("rounds", 5, "timed runs of each command")
	again  = flag.Bool("again", true, "measure unit list a second time, so the two rows show the run's noise")
)

const (
	ns        = "bench-scale"
	nodeLabel = "tug.dev/bench-fake-node"
)

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	cleanup := e.Namespace(ctx, ns)
	defer func() { defer benchkit.Phase("deleting the namespace")(); cleanup() }()
	defer func() { defer benchkit.Phase("deleting the fake nodes")(); deleteNodes(e) }()
	e.MustTug(ns, "app", "create", "bench")
	fmt.Printf("creating %d nodes and %d pods\n", *nodes, *pods)
	made := benchkit.Phase("creating them")
	benchkit.Check("nodes", createNodes(ctx, e))
	benchkit.Check("pods", createPods(ctx, e))
	made()
	defer benchkit.Phase("measuring")()

	sel := "app.kubernetes.io/managed-by=tug,tug.dev/app=bench,tug.dev/process"
	scale := fmt.Sprintf("%d units (Pending, bound to %d fake nodes)", *pods, *nodes)
	unitList := func(bin string) func() *exec.Cmd {
		return func() *exec.Cmd { c := e.TugCmd(ns, "unit", "list", "bench"); c.Path, c.Args[0] = bin, bin; return c }
	}
	kubectlPods := func() *exec.Cmd { return e.KubectlCmd(ns, "get", "pods", "-l", sel) }
	compare(e, "unit list", scale, unitList(e.Tug), kubectlPods, "kubectl get pods -l", 0.2, 0.5, 2,
		"requests: the app record GET and one LIST per page of 500, each page a read from etcd: paging costs ~20 round trips against one LIST, for memory that stays at a page")
	if *again {
		compare(e, "unit list, measured again (the same binary: the two rows differ by this run's noise)", scale, unitList(e.Tug), kubectlPods, "kubectl get pods -l", 0.2, 0.5, 2, "")
	}
	if bin, name, ok := benchkit.Before("unit"); ok {
		compare(e, "unit list, "+name, scale, unitList(bin), kubectlPods, "kubectl get pods -l", 0.2, 0.5, 2, "")
	}

	nodeList := func(bin string) func() *exec.Cmd {
		return func() *exec.Cmd { c := e.TugCmd(ns, "node", "list"); c.Path, c.Args[0] = bin, bin; return c }
	}
	kubectlNodes := func() *exec.Cmd { return e.KubectlCmd(ns, "get", "nodes", "-o", "wide") }
	nscale := fmt.Sprintf("%d nodes, %d units bound to them", *nodes, *pods)
	compare(e, "node list", nscale, nodeList(e.Tug), kubectlNodes, "kubectl get nodes -o wide", 1.0, 0, 0,
		"requests constant per cluster: the node LIST and one pod LIST, a Table of the units' names and nodes without the objects, from the API server's watch cache; the units column is what kubectl does not show")
	if bin, name, ok := benchkit.Before("node"); ok {
		compare(e, "node list, "+name, nscale, nodeList(bin), kubectlNodes, "kubectl get nodes -o wide", 1.0, 0, 0, "")
	}
}

// compare measures tug against kubectl; memGoal 0 means none; the
// requests are judged against reqGoal (0: not judged by count).
func compare(e *benchkit.Env, what, scale string, tug, kubectl func() *exec.Cmd, kname string, wallGoal, memGoal float64, reqGoal int, note string) {
	res, err := benchkit.Rounds(*rounds, tug, kubectl)
	benchkit.Check(what, err)
	t, k := res[0], res[1]
	tr, err := benchkit.CountRequests(tug())
	benchkit.Check(what, err)
	kr, err := benchkit.CountRequests(kubectl())
	benchkit.Check(what, err)
	wr, wrs := benchkit.Ratio(t.Wall.Seconds(), k.Wall.Seconds())
	mr, mrs := benchkit.Ratio(float64(t.MaxRSSKiB), float64(k.MaxRSSKiB))
	met := wr <= wallGoal
	goal := fmt.Sprintf("wall <= %.1fx", wallGoal)
	if memGoal > 0 {
		met = met && mr <= memGoal
		goal += fmt.Sprintf(", memory <= %.1fx", memGoal)
	}
	if reqGoal > 0 {
		goal += ", pages <= 500"
	}
	if note != "" {
		note += "; "
	}
	note += fmt.Sprintf("median of %d interleaved rounds (wall tug %s, kubectl %s)", *rounds, spread(t.Walls), spread(k.Walls))
	e.Emit(benchkit.Row{
		Group: "Listing at scale", Benchmark: what + ", " + scale,
		Tug:     fmt.Sprintf("%s, %s", benchkit.Ms(t.Wall), benchkit.MiB(t.MaxRSSKiB)),
		Kubectl: fmt.Sprintf("%s: %s, %s", kname, benchkit.Ms(k.Wall), benchkit.MiB(k.MaxRSSKiB)),
		Ratio:   fmt.Sprintf("wall %s, memory %s", wrs, mrs),
		Goal:    goal, Met: met,
		Requests: fmt.Sprintf("%d (kubectl %d)", tr, kr), Note: note,
	})
}

// spread is the range of a benchmark's wall times.
func spread(walls []time.Duration) string {
	if len(walls) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s-%s", benchkit.Ms(slices.Min(walls)), benchkit.Ms(slices.Max(walls)))
}

func createNodes(ctx context.Context, e *benchkit.Env) error {
	return benchkit.Parallel(*nodes, 32, func(i int) error {
		_, err := e.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-fake-%04d", i), Labels: map[string]string{nodeLabel: "1"}},
			Spec: corev1.NodeSpec{
				Unschedulable: true,
				Taints:        []corev1.Taint{{Key: nodeLabel, Value: "1", Effect: corev1.TaintEffectNoExecute}},
			},
		}, metav1.CreateOptions{})
		return err
	})
}

func deleteNodes(e *benchkit.Env) {
	err := e.Client.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: nodeLabel})
	if err != nil {
		fmt.Println("bench: deleting the fake nodes:", err)
	}
}

func createPods(ctx context.Context, e *benchkit.Env) error {
	labels := map[string]string{"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": "bench", "tug.dev/app": "bench", "tug.dev/process": "web", "tug.dev/release": "1"}
	return benchkit.Parallel(*pods, 32, func(i int) error {
		_, err := e.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-web-%05d", i), Labels: labels},
			Spec: corev1.PodSpec{
				NodeName: fmt.Sprintf("bench-fake-%04d", i%*nodes),
				// Every taint: the node lifecycle controller taints nodes no
				// kubelet reports for as unreachable (NoExecute), which would
				// evict the units five minutes in.
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "web", Image: "localhost/tug/sample:v1"}},
			},
		}, metav1.CreateOptions{})
		return err
	})
}
