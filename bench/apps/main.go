//go:build unix

// Command apps benchmarks `tug app list` with many apps against
// `kubectl get cm,deploy -l app.kubernetes.io/managed-by=tug` (what a user
// would read instead: the app records and their Deployments). Apps are made
// with `tug app create`; each gets a Deployment with no units, so the list
// reads a Deployment per app without running anything. Requests are counted
// at -small apps and at -apps apps: a constant count does not grow with them.
//
//	go run ./bench/apps -tug bin/tug -kubectl PATH -kubeconfig FILE [-apps 500]
package main

import (
	"context"
	"flag"
	"fmt"
	"os/exec"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	apps   = flag.Int("apps", 500, "apps")
	small  = flag.Int("small", 50, "apps at the first request count")
	rounds = flag.Int("rounds", 5, "timed runs of each command")
)

const ns = "bench-apps"

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	cleanup := e.Namespace(ctx, ns)
	defer cleanup()

	tug := func() *exec.Cmd { return e.TugCmd(ns, "app", "list") }
	kubectl := func() *exec.Cmd {
		return e.KubectlCmd(ns, "get", "cm,deploy", "-l", "app.kubernetes.io/managed-by=tug")
	}
	make := func(from, to int) {
		fmt.Printf("creating apps %d..%d\n", from, to-1)
		benchkit.Check("apps", benchkit.Parallel(to-from, 6, func(i int) error {
			name := fmt.Sprintf("app%04d", from+i)
			if out, err := e.TugCmd(ns, "app", "create", name).CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return deployment(ctx, e, name)
		}))
	}
	make(0, *small)
	smallReq, err := benchkit.CountRequests(tug())
	benchkit.Check("app list", err)
	make(*small, *apps)
	res, err := benchkit.Rounds(*rounds, tug, kubectl)
	benchkit.Check("app list", err)
	t, k := res[0], res[1]
	tr, err := benchkit.CountRequests(tug())
	benchkit.Check("app list", err)
	kr, err := benchkit.CountRequests(kubectl())
	benchkit.Check("app list", err)
	wr, wrs := benchkit.Ratio(t.Wall.Seconds(), k.Wall.Seconds())
	_, mrs := benchkit.Ratio(float64(t.MaxRSSKiB), float64(k.MaxRSSKiB))
	e.Emit(benchkit.Row{
		Group: "Listing at scale", Benchmark: fmt.Sprintf("app list, %d apps (a Deployment each)", *apps),
		Tug:      fmt.Sprintf("%s, %s", benchkit.Ms(t.Wall), benchkit.MiB(t.MaxRSSKiB)),
		Kubectl:  fmt.Sprintf("kubectl get cm,deploy -l ...: %s, %s", benchkit.Ms(k.Wall), benchkit.MiB(k.MaxRSSKiB)),
		Ratio:    fmt.Sprintf("wall %s, memory %s", wrs, mrs),
		Goal:     "wall <= 0.5x, requests constant",
		Met:      wr <= 0.5 && tr == smallReq,
		Requests: fmt.Sprintf("%d at %d apps, %d at %d apps (kubectl %d)", smallReq, *small, tr, *apps, kr),
	})
}

func deployment(ctx context.Context, e *benchkit.Env, name string) error {
	zero := int32(0)
	labels := map[string]string{"app.kubernetes.io/managed-by": "tug", "tug.dev/app": name, "tug.dev/process": "web"}
	_, err := e.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "localhost/tug/sample:v1"}}},
			},
		},
	}, metav1.CreateOptions{})
	return err
}
