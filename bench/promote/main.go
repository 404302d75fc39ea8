//go:build unix

// Command promote benchmarks `tug app promote` to serving units against
// `kubectl set image` with the same digest plus `kubectl rollout status`,
// on apps of the same image and strategy, in interleaved rounds. Two
// builds of examples/static-site (the local registry) give two digests;
// each round first deploys the other one to the source app (not timed).
//
//	go run ./bench/promote -tug bin/tug -kubectl PATH -kubeconfig FILE -registry HOST:PORT [-rounds 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	registry = flag.String("registry", "", "the local registry's HOST:PORT")
	rounds   = flag.Int("rounds", 5, "promotes to time")
)

const ns = "bench-promote"

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	defer e.Namespace(ctx, ns)()
	images := build(e)
	for _, a := range []string{"prod", "k"} {
		e.MustTug(ns, "app", "create", a)
		e.MustTug(ns, "app", "deploy", a, "--image", images[0], "--timeout", "5m")
	}
	var tugWall, kubectlWall []time.Duration
	var rss []int64
	for i := 0; i < *rounds; i++ {
		img := images[(i+1)%2]
		e.MustTug(ns, "app", "deploy", "stage", "--image", img, "--timeout", "5m")
		c := e.TugCmd(ns, "app", "promote", "stage", "prod", "--yes", "--timeout", "5m")
		r, err := benchkit.Run(c)
		benchkit.Check("promote", err)
		_, kib := benchkit.Usage(c)
		tugWall, rss = append(tugWall, r.Wall), append(rss, kib)
		start := time.Now()
		_, err = benchkit.Run(e.KubectlCmd(ns, "set", "image", "deployment/k-web", "web="+img))
		benchkit.Check("kubectl set image", err)
		_, err = benchkit.Run(e.KubectlCmd(ns, "rollout", "status", "deployment/k-web"))
		benchkit.Check("kubectl rollout status", err)
		kubectlWall = append(kubectlWall, time.Since(start))
	}
	t, k := benchkit.Median(tugWall), benchkit.Median(kubectlWall)
	r, rs := benchkit.Ratio(t.Seconds(), k.Seconds())
	e.Emit(benchkit.Row{Group: "Deploy", Benchmark: fmt.Sprintf("app promote to serving, 1 unit (median of %d each, interleaved)", len(tugWall)),
		Tug:     fmt.Sprintf("tug app promote: %s, %s", benchkit.Ms(t), benchkit.MiB(rss[len(rss)/2])),
		Kubectl: "kubectl set image (the digest) + rollout status: " + benchkit.Ms(k), Ratio: rs, Goal: "<= 1.0x", Met: r <= 1.0,
		Requests: "-", Note: fmt.Sprintf("tug also reads both apps and their releases, shows the differences, records the release with promotedFrom and confirms the route through the router; each run in turn: tug %s, kubectl %s", benchkit.MsList(tugWall), benchkit.MsList(kubectlWall))})
}

// build deploys app stage from source twice (two messages): two digests.
func build(e *benchkit.Env) []string {
	src, err := os.MkdirTemp("", "bench-promote")
	benchkit.Check("tmp", err)
	defer os.RemoveAll(src)
	benchkit.Check("copy", exec.Command("cp", "-r", "examples/static-site/.", src).Run())
	e.MustTug(ns, "app", "create", "stage")
	pushed := regexp.MustCompile(`-----> pushed (\S+@sha256:[0-9a-f]+)`)
	var images []string
	for i := 0; i < 2; i++ {
		benchkit.Check("message", os.WriteFile(filepath.Join(src, "message.txt"), []byte(fmt.Sprintf("build %d\n", i)), 0o644))
		c := e.TugCmd(ns, "app", "deploy", "stage", "--builder", *registry+"/tug/builder-static:v1", "--repository", *registry+"/bench/"+ns+"/stage", "--timeout", "5m")
		c.Dir = src
		abs, err := filepath.Abs(e.Tug)
		benchkit.Check("path", err)
		c.Args[0], c.Path = abs, abs
		out, err := c.CombinedOutput()
		benchkit.Check("deploy from source", err)
		m := pushed.FindStringSubmatch(string(out))
		if m == nil {
			benchkit.Check("deploy from source", fmt.Errorf("no pushed image in its output:\n%s", out))
		}
		images = append(images, m[1])
	}
	return images
}
