//go:build unix

// Command cnb benchmarks a Cloud Native Buildpacks build (the local
// cluster's test builder, tug/cnb-builder:v1, by digest):
//
//   - a deploy from source through tug (the builder read, the build pod,
//     the upload, the lifecycle's creator, the rollout) against the same
//     creator pod run by hand with kubectl: apply, wait until it runs,
//     attach with the job header and the source on stdin, wait until it
//     ends, logs. Both build into a repository of their own with no cache.
//   - the second build of an unchanged app against its first.
//
// A warm-up deploy first puts the builder, the run image and the agent on
// the nodes; its build pod is the spec the hand run applies.
//
//	go run ./bench/cnb -tug bin/tug -kubectl KUBECTL -kubeconfig FILE -registry HOST:PORT
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"tug.dev/tug/bench/internal/benchkit"
	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/imagebuild/protocol"
)

var registry = flag.String("registry", "", "the local registry's HOST:PORT (make -s cluster-registry)")

const ns = "bench-cnb"

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	defer e.Namespace(ctx, ns)()
	builder := builderByDigest()
	src, err := os.MkdirTemp("", "bench-cnb")
	benchkit.Check("tmp", err)
	defer os.RemoveAll(src)
	benchkit.Check("source", os.WriteFile(filepath.Join(src, "message.txt"), []byte("Built by buildpacks\n"), 0o644))
	repo := func(app string) string {
		return *registry + "/bench/" + ns + "/" + app + fmt.Sprint(time.Now().UnixNano())
	}
	deploy := func(app string, extra ...string) benchkit.Result {
		c := e.TugCmd(ns, append([]string{"app", "deploy", app, "--timeout", "5m"}, extra...)...)
		c.Dir = src
		r, err := benchkit.Run(c)
		benchkit.Check("tug app deploy "+app, err)
		return r
	}

	// the warm-up, whose build pod the hand run copies
	warmRepo := repo("warm")
	spec := warmUp(ctx, e, func() { deploy("warm", "--builder", builder, "--repository", warmRepo) })

	// by hand: the same pod into a repository of its own
	byHand := runByHand(ctx, e, spec, src, warmRepo, repo("hand"))

	// through tug: a fresh app and repository, then the same source again
	e.MustTug(ns, "app", "create", "site")
	siteRepo := repo("site")
	first := deploy("site", "--builder", builder, "--repository", siteRepo)
	second := deploy("site")
	for _, want := range []string{"Reusing layer 'tug.test/shell:tools'", "reusing the cached tools layer", "nothing new to deploy"} {
		if !bytes.Contains(second.Stderr, []byte(want)) {
			benchkit.Check("the second build", fmt.Errorf("its output lacks %q:\n%s", want, second.Stderr))
		}
	}

	emitRows(e, first, second, byHand)
}

// warmUp deploys the warm-up app (deploy) and returns the spec of the
// build pod it ran: the creator's, not the one that inspects the builder.
func warmUp(ctx context.Context, e *benchkit.Env, deploy func()) *corev1.Pod {
	pods := buildPods(ctx, e)
	e.MustTug(ns, "app", "create", "warm")
	deploy()
	var spec *corev1.Pod
	for _, p := range pods() {
		if !strings.Contains(strings.Join(p.Spec.Containers[0].Command, " "), " inspect ") {
			spec = p
		}
	}
	if spec == nil {
		benchkit.Check("warm-up", fmt.Errorf("saw no build pod (%d pods)", len(pods())))
	}
	return spec
}

// emitRows reports the first build against the same pod run by hand, and
// the second build of unchanged source against the first.
func emitRows(e *benchkit.Env, first, second benchkit.Result, byHand time.Duration) {
	r, rs := benchkit.Ratio(first.Wall.Seconds(), byHand.Seconds())
	e.Emit(benchkit.Row{Group: "Deploy", Benchmark: "CNB deploy from source to a serving unit (test builder, first build, no cache)",
		Tug:     fmt.Sprintf("%s, %s", benchkit.Ms(first.Wall), benchkit.MiB(first.MaxRSSKiB)),
		Kubectl: "the same creator pod by hand (apply, wait, attach the source, wait, logs): " + benchkit.Ms(byHand),
		Ratio:   rs, Goal: "<= 1.2x (issue 25)", Met: r <= 1.2, Requests: "-",
		Note: "tug reads what the warm-up app remembers of the builder (one pinned by digest is read once per namespace) and rolls the app out; the hand run only builds"})
	r, rs = benchkit.Ratio(second.Wall.Seconds(), first.Wall.Seconds())
	e.Emit(benchkit.Row{Group: "Deploy", Benchmark: "CNB deploy of an unchanged app, second build against the first",
		Tug:     fmt.Sprintf("second %s, first %s", benchkit.Ms(second.Wall), benchkit.Ms(first.Wall)),
		Kubectl: "-",
		Ratio:   rs, Goal: "<= 0.7x (issue 25)", Met: r <= 0.7, Requests: "-",
		Note: "the second build restores the cache image and reuses the first image's layers; the builder pinned by digest is read once; it makes the same digest (a reproducible build), so no release is made and no unit restarts (docs/builders.md)"})
}

// runByHand runs the build pod spec the warm-up made, into repository
// handRepo, with kubectl as a user would (apply, wait, attach the source,
// wait, logs), and returns how long that took.
func runByHand(ctx context.Context, e *benchkit.Env, spec *corev1.Pod, src, warmRepo, handRepo string) time.Duration {
	hand := handPod(spec, warmRepo, handRepo)
	manifest, err := json.Marshal(hand)
	benchkit.Check("pod", err)
	source, err := imagebuild.Pack(src, 0)
	benchkit.Check("pack", err)
	stdin := append(protocol.EncodeJob(protocol.Job{}), source.Data...)
	kubectl := func(in []byte, args ...string) []byte {
		c := e.KubectlCmd(ns, args...)
		c.Stdin = bytes.NewReader(in)
		out, err := c.CombinedOutput()
		benchkit.Check("kubectl "+strings.Join(args, " "), withOut(err, out))
		return out
	}
	start := time.Now()
	kubectl(manifest, "apply", "-f", "-")
	kubectl(nil, "wait", "--for=jsonpath={.status.containerStatuses[0].state.running}", "--timeout=5m", "pod/"+hand.Name)
	kubectl(stdin, "attach", "-i", "-c", "build", hand.Name)
	kubectl(nil, "wait", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=5m", "pod/"+hand.Name)
	logs := kubectl(nil, "logs", "-c", "build", hand.Name)
	byHand := time.Since(start)
	if !bytes.Contains(logs, []byte("tug.test/shell: GREETING is")) {
		benchkit.Check("the hand run", fmt.Errorf("its log does not show the buildpack:\n%s", logs))
	}
	kubectl(nil, "delete", "pod", hand.Name, "--wait=false")
	return byHand
}

// builderByDigest is the local registry's CNB test builder, by digest.
func builderByDigest() string {
	req, _ := http.NewRequest(http.MethodHead, "http://"+*registry+"/v2/tug/cnb-builder/manifests/v1", nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	benchkit.Check("the CNB test builder", err)
	resp.Body.Close()
	d := resp.Header.Get("Docker-Content-Digest")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(d, "sha256:") {
		benchkit.Check("the CNB test builder", fmt.Errorf("%s: run test/cluster/cluster.sh ensure-cnb-builder", resp.Status))
	}
	return *registry + "/tug/cnb-builder@" + d
}

// buildPods records every build pod made in the namespace from now on:
// a list, then a watch from it, again when the watch ends or fails (the
// local cluster's apiserver may answer a fresh watch "too large resource
// version").
func buildPods(ctx context.Context, e *benchkit.Env) func() []*corev1.Pod {
	sel := metav1.ListOptions{LabelSelector: "tug.dev/kind=" + imagebuild.KindBuild}
	var mu sync.Mutex
	seen := map[string]*corev1.Pod{}
	add := func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		if seen[p.Name] == nil {
			seen[p.Name] = p
		}
	}
	ready := make(chan struct{})
	go func() {
		for first := true; ctx.Err() == nil; first = false {
			l, err := e.Client.CoreV1().Pods(ns).List(ctx, sel)
			if err != nil {
				continue
			}
			for i := range l.Items {
				add(&l.Items[i])
			}
			o := sel
			o.ResourceVersion = l.ResourceVersion
			w, err := e.Client.CoreV1().Pods(ns).Watch(ctx, o)
			if first {
				close(ready)
			}
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
					add(p)
				} else if ev.Type == watch.Error {
					break
				}
			}
			w.Stop()
		}
	}()
	<-ready
	return func() []*corev1.Pod {
		mu.Lock()
		defer mu.Unlock()
		var out []*corev1.Pod
		for _, p := range seen {
			out = append(out, p)
		}
		return out
	}
}

// handPod is tug's build pod under a name of its own, building into repo
// (and its cache) instead of from.
func handPod(p *corev1.Pod, from, repo string) *corev1.Pod {
	h := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "hand-build", Namespace: ns}, Spec: *p.Spec.DeepCopy()}
	h.Spec.NodeName = ""
	c := &h.Spec.Containers[0]
	for i, a := range c.Command {
		c.Command[i] = strings.ReplaceAll(a, from, repo)
	}
	return h
}

func withOut(err error, out []byte) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%v: %.2000s", err, out)
}
