//go:build unix

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
//   - API requests per deploy, counted with -v 6;
//
//   - deploy end to end for an app of -units units (3): `tug app deploy
//     --image` against `kubectl set image` + `kubectl rollout status` (the
//     same Deployment, the same strategy), wall time.
//
//     go run ./bench/deploy -tug bin/tug -kubectl PATH -kubeconfig FILE [-rounds 5]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	rounds = flag.Int("rounds", 5, "deploys to time")
	units  = flag.Int("units", 3, "units of the end-to-end deploy")
	env    *benchkit.Env
)

const ns = "bench-deploy"

func main() {
	env = benchkit.Setup(true)
	benchkit.Check("deploy", run())
}

// run measures, in order on one app: a deploy end to end, how soon a
// rollout's completion is noticed, how soon a failed one is reported, and
// the API requests of one deploy.
func run() error {
	client := env.Client
	ctx := context.Background()
	defer env.Namespace(ctx, ns)()

	if out, err := tugRun("app", "create", "bench"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if out, err := tugRun("app", "deploy", "bench", "--image", "localhost/tug/sample:v1"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if out, err := tugRun("app", "scale", "bench", "web=2"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if err := endToEnd(ctx, client); err != nil {
		return err
	}
	if out, err := tugRun("app", "scale", "bench", "web=2"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if err := completionLag(ctx, client); err != nil {
		return err
	}
	if err := failureReports(); err != nil {
		return err
	}
	return deployRequests()
}

// completionLag compares how long after a Deployment is complete tug and
// kubectl rollout status notice it, over rounds deploys alternating two
// images.
func completionLag(ctx context.Context, client kubernetes.Interface) error {
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
	env.Emit(benchkit.Row{Group: "Deploy", Benchmark: "rollout completion noticed, 2 units",
		Tug: "exits " + benchkit.Ms(median(tugLag)) + " after the Deployment is complete", Kubectl: "kubectl rollout status: " + benchkit.Ms(median(kubectlLag)),
		Ratio: "tug - kubectl " + benchkit.Ms(median(diff)), Goal: "<= 50 ms later", Met: median(diff) <= 50*time.Millisecond, Requests: "-"})
	return nil
}

// failureReports times how soon a deploy that cannot run (an image that
// cannot be pulled, a crash loop) is reported and rolled back.
func failureReports() error {
	for _, c := range []struct{ what, image string }{{"image that cannot be pulled", "localhost/tug/missing:1"}, {"crash loop", "localhost/tug/sample:crash"}} {
		start := time.Now()
		if _, err := tugRun("app", "deploy", "bench", "--image", c.image); err == nil {
			return fmt.Errorf("deploy of %s succeeded", c.image)
		}
		took := time.Since(start)
		fmt.Printf("%s: reported and rolled back in %s (goal: reported within 30s; kubectl waits for the 600s progress deadline)\n",
			c.what, took.Round(100*time.Millisecond))
		env.Emit(benchkit.Row{Group: "Deploy", Benchmark: "failure reported and rolled back: " + c.what,
			Tug: benchkit.Ms(took), Kubectl: "kubectl rollout status: fails at the 600 s progress deadline", Ratio: "-",
			Goal: "reported within 30 s", Met: took <= 30*time.Second, Requests: "-"})
	}
	return nil
}

// deployRequests counts the API requests of one deploy, from its -v 6
// trace, by verb and resource.
func deployRequests() error {
	cmd := env.TugCmd(ns, "app", "deploy", "bench", "--image", "localhost/tug/sample:v2", "-v", "6")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("traced deploy: %v: %s", err, stderr.String())
	}
	total, counts := benchkit.Requests(stderr.Bytes())
	fmt.Printf("API requests for one deploy of 1 process with 2 units: %d\n", total)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %2d  %s\n", counts[k], k)
	}
	env.Emit(benchkit.Row{Group: "Deploy", Benchmark: "API requests of one deploy, 1 process with 2 units",
		Tug: fmt.Sprint(total), Kubectl: "-", Ratio: "-", Goal: "-", Met: true, Requests: fmt.Sprint(total)})
	return nil
}

func tugRun(args ...string) (string, error) {
	out, err := env.TugCmd(ns, args...).CombinedOutput()
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
	tugCmd := env.TugCmd(ns, "app", "deploy", "bench", "--image", image)
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
			k := env.KubectlCmd(ns, "rollout", "status", "deployment/bench-web")
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

func median(ds []time.Duration) time.Duration { return benchkit.Median(ds).Round(time.Millisecond) }

// endToEnd scales the app to -units units and times, in interleaved
// rounds, `tug app deploy --image` against `kubectl set image` followed by
// `kubectl rollout status` on the same Deployment: what the user waits for.
func endToEnd(ctx context.Context, client kubernetes.Interface) error {
	if out, err := tugRun("app", "scale", "bench", fmt.Sprintf("web=%d", *units)); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	d, err := client.AppsV1().Deployments(ns).Get(ctx, "bench-web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	container := d.Spec.Template.Spec.Containers[0].Name
	images := []string{"localhost/tug/sample:v2", "localhost/tug/sample:v1"}
	var tugWall, kubectlWall []time.Duration
	var tugRSS []int64
	for i := 0; i < 4*((*rounds+1)/2); i++ { // as many of each
		img := images[i%2]
		if i%4 < 2 { // tug and kubectl take turns
			r, err := benchkit.Run(env.TugCmd(ns, "app", "deploy", "bench", "--image", img))
			if err != nil {
				return err
			}
			tugWall, tugRSS = append(tugWall, r.Wall), append(tugRSS, r.MaxRSSKiB)
			continue
		}
		start := time.Now()
		if _, err := benchkit.Run(env.KubectlCmd(ns, "set", "image", "deployment/bench-web", container+"="+img)); err != nil {
			return err
		}
		if _, err := benchkit.Run(env.KubectlCmd(ns, "rollout", "status", "deployment/bench-web")); err != nil {
			return err
		}
		kubectlWall = append(kubectlWall, time.Since(start))
	}
	t, k := median(tugWall), median(kubectlWall)
	req, err := benchkit.CountRequests(env.TugCmd(ns, "app", "deploy", "bench", "--image", images[0]))
	if err != nil {
		return err
	}
	r, rs := benchkit.Ratio(t.Seconds(), k.Seconds())
	slices.Sort(tugRSS)
	env.Emit(benchkit.Row{Group: "Deploy", Benchmark: fmt.Sprintf("deploy end to end, %d units (median of %d each, interleaved)", *units, len(tugWall)),
		Tug:     fmt.Sprintf("tug app deploy --image: %s, %s", benchkit.Ms(t), benchkit.MiB(tugRSS[len(tugRSS)/2])),
		Kubectl: "kubectl set image + rollout status: " + benchkit.Ms(k), Ratio: rs, Goal: "<= 1.0x", Met: r <= 1.0,
		Requests: fmt.Sprint(req), Note: fmt.Sprintf("tug also records the release and the app's image, and returns once a request through the router is answered (kubectl returns when the Deployment says complete); the same Deployment and RollingUpdate strategy (readiness probed every second); each run in turn: tug %s, kubectl %s (either tool's runs spread over 2 s or more on this 2-core machine: the medians of so few runs are noisy)", benchkit.MsList(tugWall), benchkit.MsList(kubectlWall))})
	return nil
}
