// Command deploy benchmarks tug's deploy against kubectl on the local
// cluster, in one run, and prints ratios:
//
//   - rollout completion: when tug exits after a good deploy and when
//     `kubectl rollout status` exits, each measured from the moment the
//     Deployment's own status says the rollout is complete (seen by a watch
//     in this program);
//
//   - failure detection: how long tug takes to report an image that cannot
//     be pulled and a crash loop (kubectl rollout status waits for the
//     Deployment's progress deadline, 600 s by default: it is not run);
//
//   - API requests per deploy, counted with TUG_TRACE_REQUESTS.
//
//     go run ./bench/deploy -tug bin/tug -kubectl PATH -kubeconfig FILE [-rounds 5]
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	tug        = flag.String("tug", "bin/tug", "tug binary")
	kubectl    = flag.String("kubectl", "kubectl", "kubectl binary")
	kubeconfig = flag.String("kubeconfig", "/var/lib/tug-cluster/admin.kubeconfig", "admin kubeconfig of the local cluster")
	rounds     = flag.Int("rounds", 5, "deploys to time")
)

const ns = "bench-deploy"

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
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	_ = client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err := waitGone(ctx, client); err != nil {
		return err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})

	if out, err := tugRun("app", "create", "bench"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if out, err := tugRun("app", "deploy", "bench", "--image", "localhost/tug/sample:v1"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if out, err := tugRun("app", "scale", "bench", "web=2"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}

	var tugLag, kubectlLag, diff []time.Duration
	for i := 0; i < *rounds; i++ {
		img := []string{"localhost/tug/sample:v2", "localhost/tug/sample:v1"}[i%2]
		t, k, err := timeRollout(ctx, client, img)
		if err != nil {
			return err
		}
		tugLag, kubectlLag, diff = append(tugLag, t), append(kubectlLag, k), append(diff, t-k)
	}
	fmt.Printf("rollout noticed after completion (median of %d): tug %s, kubectl rollout status %s; tug - kubectl = %s (goal: <= 50ms)\n",
		*rounds, median(tugLag), median(kubectlLag), median(diff))

	for _, c := range []struct{ what, image string }{{"image that cannot be pulled", "localhost/tug/missing:1"}, {"crash loop", "localhost/tug/sample:crash"}} {
		start := time.Now()
		out, err := tugRun("app", "deploy", "bench", "--image", c.image)
		if err == nil {
			return fmt.Errorf("deploy of %s succeeded", c.image)
		}
		fmt.Printf("%s: reported and rolled back in %s (goal: reported within 30s; kubectl waits for the 600s progress deadline)\n",
			c.what, time.Since(start).Round(100*time.Millisecond))
		_ = out
	}

	cmd := exec.Command(*tug, "app", "deploy", "bench", "--image", "localhost/tug/sample:v2")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+*kubeconfig, "TUG_TRACE_REQUESTS=1")
	cmd.Args = append(cmd.Args, "-n", ns)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("traced deploy: %v: %s", err, stderr.String())
	}
	counts := map[string]int{}
	total := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[0] != "trace:" {
			continue
		}
		path, query, _ := strings.Cut(f[3], "?")
		kind := f[2] + " " + path
		if strings.Contains(query, "watch=true") {
			kind = "WATCH " + path
		}
		counts[kind]++
		total++
	}
	fmt.Printf("API requests for one deploy of 1 process with 2 units: %d\n", total)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %2d  %s\n", counts[k], k)
	}
	return nil
}

func tugRun(args ...string) (string, error) {
	cmd := exec.Command(*tug, append(args, "-n", ns)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+*kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// timeRollout deploys image with tug and, once the Deployment's generation
// moves, starts kubectl rollout status; it returns how long after the
// rollout completed each of them exited.
func timeRollout(ctx context.Context, client kubernetes.Interface, image string) (tugLag, kubectlLag time.Duration, err error) {
	d, err := client.AppsV1().Deployments(ns).Get(ctx, "bench-web", metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	gen := d.Generation
	w, err := client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "bench-web").String(), ResourceVersion: d.ResourceVersion})
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()

	tugDone := make(chan time.Time, 1)
	tugCmd := exec.Command(*tug, "app", "deploy", "bench", "--image", image, "-n", ns)
	tugCmd.Env = append(os.Environ(), "KUBECONFIG="+*kubeconfig)
	if err := tugCmd.Start(); err != nil {
		return 0, 0, err
	}
	go func() { _ = tugCmd.Wait(); tugDone <- time.Now() }()

	kubectlDone := make(chan time.Time, 1)
	var complete time.Time
	started := false
	for complete.IsZero() {
		ev, ok := <-w.ResultChan()
		if !ok {
			return 0, 0, fmt.Errorf("watch closed")
		}
		d, ok := ev.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		if d.Generation > gen && !started {
			started = true
			k := exec.Command(*kubectl, "--kubeconfig", *kubeconfig, "-n", ns, "rollout", "status", "deployment/bench-web")
			if err := k.Start(); err != nil {
				return 0, 0, err
			}
			go func() { _ = k.Wait(); kubectlDone <- time.Now() }()
		}
		s := d.Status
		if started && s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == *d.Spec.Replicas && s.Replicas == *d.Spec.Replicas && s.AvailableReplicas == *d.Spec.Replicas {
			complete = time.Now()
		}
	}
	t, k := <-tugDone, <-kubectlDone
	return t.Sub(complete), k.Sub(complete), nil
}

func waitGone(ctx context.Context, client kubernetes.Interface) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("namespace %s still terminating", ns)
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(time.Millisecond)
}
