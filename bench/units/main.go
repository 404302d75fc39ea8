// Command units benchmarks `tug unit list` against `kubectl get pods -l` on
// the local cluster with many units, in one run, and prints the ratio and
// tug's request count. The units are real pod objects that stay Pending (a
// node selector no node has), so a thousand of them cost the API server and
// etcd, not the two small nodes.
//
//	go run ./bench/units -tug bin/tug -kubectl PATH [-pods 1000] [-rounds 7]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	tug        = flag.String("tug", "bin/tug", "tug binary")
	kubectl    = flag.String("kubectl", "kubectl", "kubectl binary")
	kubeconfig = flag.String("kubeconfig", "/var/lib/tug-cluster/admin.kubeconfig", "admin kubeconfig of the local cluster")
	pods       = flag.Int("pods", 1000, "units to list")
	rounds     = flag.Int("rounds", 7, "timed runs of each tool")
)

const ns = "bench-units"

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s (left from an earlier run? delete it): %w", ns, err)
	}
	defer client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	if out, err := tugCmd("app", "create", "bench").CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if err := createPods(ctx, client); err != nil {
		return err
	}
	sel := "app.kubernetes.io/managed-by=tug,tug.dev/app=bench,tug.dev/process"
	var tugTimes, kubectlTimes []time.Duration
	for i := 0; i < *rounds; i++ { // interleaved, so load spikes hit both
		d, err := timeIt(tugCmd("unit", "list", "bench", "-o", "json"))
		if err != nil {
			return err
		}
		tugTimes = append(tugTimes, d)
		d, err = timeIt(exec.Command(*kubectl, "--kubeconfig", *kubeconfig, "-n", ns, "get", "pods", "-l", sel, "-o", "json"))
		if err != nil {
			return err
		}
		kubectlTimes = append(kubectlTimes, d)
	}
	t, k := median(tugTimes), median(kubectlTimes)
	fmt.Printf("unit list of %d units (median of %d): tug %s, kubectl get pods -l %s; ratio %.2f (goal: <= 1)\n",
		*pods, *rounds, t, k, float64(t)/float64(k))

	c := tugCmd("unit", "list", "bench", "-o", "json")
	c.Env = append(c.Env, "TUG_TRACE_REQUESTS=1")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Run(); err != nil {
		return err
	}
	n := strings.Count(stderr.String(), "trace: ")
	fmt.Printf("API requests for unit list: %d (goal: <= 2; the record GET and one pod LIST)\n%s", n, stderr.String())
	return nil
}

func tugCmd(args ...string) *exec.Cmd {
	c := exec.Command(*tug, append(args, "-n", ns)...)
	c.Env = append(os.Environ(), "KUBECONFIG="+*kubeconfig)
	return c
}

func timeIt(c *exec.Cmd) (time.Duration, error) {
	c.Stdout = nil
	start := time.Now()
	out, err := c.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %.300s", c.Args[0], err, out)
	}
	return time.Since(start), nil
}

func createPods(ctx context.Context, client kubernetes.Interface) error {
	labels := map[string]string{"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": "bench", "tug.dev/app": "bench", "tug.dev/process": "web", "tug.dev/release": "1"}
	var wg sync.WaitGroup
	errs := make(chan error, *pods)
	sem := make(chan struct{}, 32)
	for i := 0; i < *pods; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-web-%04d", i), Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"tug.dev/pool": "bench-nowhere"},
					Containers:   []corev1.Container{{Name: "web", Image: "localhost/tug/sample:v1"}},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(time.Millisecond)
}
