//go:build unix

// Command source benchmarks a deploy from source (examples/static-site,
// builder tug/builder-static:v1 from the local registry) to a serving unit,
// split by the lines tug prints as it goes: build pod start, upload (and
// unpack), build, push, rollout. Against it: the same image (by digest)
// deployed with --image to a fresh app.
//
//	go run ./bench/source -tug bin/tug -kubeconfig FILE -registry HOST:PORT
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

var registry = flag.String("registry", "", "the local registry's HOST:PORT (make -s cluster-registry)")

const ns = "bench-source"

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	defer e.Namespace(ctx, ns)()
	src, err := os.MkdirTemp("", "bench-source")
	benchkit.Check("tmp", err)
	defer os.RemoveAll(src)
	benchkit.Check("copy", exec.Command("cp", "-r", "examples/static-site/.", src).Run())
	e.MustTug(ns, "app", "create", "site")
	c := e.TugCmd(ns, "app", "deploy", "site", "--builder", *registry+"/tug/builder-static:v1", "--repository", *registry+"/bench/"+ns+"/site", "--timeout", "5m")
	c.Dir = src
	c.Args[0], c.Path = mustAbs(e.Tug), mustAbs(e.Tug)
	marks := map[string]time.Duration{}
	steps := []struct{ name, re string }{
		{"start", `build pod \S+ running; uploading`},
		{"upload", `-----> source: `},
		{"build", `-----> pushing `},
		{"push", `-----> pushed `},
	}
	stderr, err := c.StderrPipe()
	benchkit.Check("pipe", err)
	start := time.Now()
	benchkit.Check("deploy", c.Start())
	var image string
	digest := regexp.MustCompile(`-----> pushed (\S+@sha256:[0-9a-f]+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		for _, s := range steps {
			if _, ok := marks[s.name]; !ok && regexp.MustCompile(s.re).MatchString(line) {
				marks[s.name] = time.Since(start)
			}
		}
		if m := digest.FindStringSubmatch(line); m != nil {
			image = m[1]
		}
	}
	benchkit.Check("deploy from source", c.Wait())
	total := time.Since(start)
	_, rss := benchkit.Usage(c)
	var parts []string
	prev := time.Duration(0)
	for _, s := range steps {
		parts = append(parts, fmt.Sprintf("%s %s", s.name, benchkit.Ms(marks[s.name]-prev)))
		prev = marks[s.name]
	}
	parts = append(parts, "rollout "+benchkit.Ms(total-prev))
	if image == "" {
		benchkit.Check("deploy from source", fmt.Errorf("no pushed image in its output"))
	}
	e.MustTug(ns, "app", "create", "img")
	r, err := benchkit.Run(e.TugCmd(ns, "app", "deploy", "img", "--image", image, "--timeout", "5m"))
	benchkit.Check("deploy --image", err)
	_, rs := benchkit.Ratio(total.Seconds(), r.Wall.Seconds())
	e.Emit(benchkit.Row{Group: "Deploy", Benchmark: "deploy from source to a serving unit, examples/static-site",
		Tug:     fmt.Sprintf("%s (%s), %s", benchkit.Ms(total), strings.Join(parts, ", "), benchkit.MiB(rss)),
		Kubectl: "the same image with tug app deploy --image: " + benchkit.Ms(r.Wall),
		Ratio:   rs, Goal: "reported (issue 13)", Met: true, Requests: "-",
		Note: "first build of the app; phases are split by when tug's lines reached its stderr (the agent's lines may arrive together, so build and push can read 0 ms)"})
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	benchkit.Check("path", err)
	return a
}
