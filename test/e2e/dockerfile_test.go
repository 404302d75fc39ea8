package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A two-stage Dockerfile: the build stage makes the page, the final stage
// copies it and serves it with busybox httpd. A second build after one
// source file changed takes the steps before its COPY from the registry
// cache.
func TestDockerfileBuildDeploysAndCaches(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"Dockerfile": fmt.Sprintf(`FROM %[1]s/tug/busybox:v1 AS build
RUN echo "toolchain $((40+2)) ready" && sleep 5 && mkdir /out
WORKDIR /src
COPY message.txt .
RUN sed 's/^/<h1>/' message.txt > /out/index.html && echo compiled

FROM %[1]s/tug/busybox:v1
COPY --from=build /out /www
CMD httpd -f -p ${PORT:-8080} -h /www
`, reg),
		"message.txt": "Built by BuildKit\n",
	})
	h.mustTug("app", "create", "docker")
	deploy := func(extra ...string) (Result, time.Duration) {
		start := time.Now()
		r := h.TugRun(Run{Args: append([]string{"app", "deploy", "docker", "--timeout", "3m"}, extra...), Dir: src, Env: dockerfileEnv(reg)})
		return r, time.Since(start)
	}
	r, first := deploy("--repository", reg+"/e2e/"+h.NS+"/docker")
	if r.Code != 0 {
		t.Fatalf("first Dockerfile deploy: %s", r)
	}
	// the step's output, not its command line
	const prepared = "toolchain 42 ready"
	if !strings.Contains(r.Stderr, "compiled") || !strings.Contains(r.Stderr, prepared) || !strings.Contains(r.Stderr, "rootless") {
		t.Errorf("the build's log was not shown:\n%s", r.Stderr)
	}
	// BuildKit reports the first build's missing cache as an ERROR: tug
	// says it is expected; it pushed the image itself, so no upload count.
	if !strings.Contains(r.Stderr, "that cache ERROR is expected on a first build") || strings.Contains(r.Stderr, "uploaded)") {
		t.Errorf("first build: want the cache miss called expected and no upload count:\n%s", r.Stderr)
	}
	svc, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), "docker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	serves := func(want string) {
		t.Helper()
		h.Eventually(60*time.Second, "the app serves "+want, func() (bool, error) {
			body, err := tryGet(fmt.Sprintf("http://%s/", svc.Spec.ClusterIP))
			return strings.Contains(body, want), err
		})
	}
	serves("<h1>Built by BuildKit")
	dep, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "docker-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, reg+"/e2e/"+h.NS+"/docker@sha256:") {
		t.Errorf("not deployed by digest: %s", img)
	}

	writeFiles(t, src, map[string]string{"message.txt": "Second edition\n"})
	r, second := deploy() // the repository is remembered
	if r.Code != 0 {
		t.Fatalf("second Dockerfile deploy: %s", r)
	}
	if !strings.Contains(r.Stderr, "CACHED") {
		t.Errorf("the rebuild shows no CACHED step:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stderr, prepared) {
		t.Errorf("the step before the changed COPY ran again:\n%s", r.Stderr)
	}
	serves("<h1>Second edition")
	t.Logf("deploy with a cold cache: %s; after changing message.txt: %s", first.Round(time.Millisecond), second.Round(time.Millisecond))
	assertNoBuildPods(t, h)
}

// RUN false: exit 16 with the failing step's output; nothing deployed.
func TestDockerfileBuildFailure(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"Dockerfile": fmt.Sprintf("FROM %s/tug/busybox:v1\nRUN echo about-to-fail && false\n", reg),
	})
	h.mustTug("app", "create", "broken")
	r := h.TugRun(Run{Args: []string{"app", "deploy", "broken", "--repository", reg + "/e2e/" + h.NS + "/broken"}, Dir: src, Env: dockerfileEnv(reg)})
	t.Logf("tug's stderr:\n%s", r.Stderr)
	if r.Code != 16 {
		t.Fatalf("a failing Dockerfile build: want exit 16, got %s", r)
	}
	if !strings.Contains(r.Stderr, "about-to-fail") || !strings.Contains(r.Stderr, "did not complete successfully") {
		t.Errorf("the failing step's output is not shown:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, "last") || !strings.Contains(r.Stderr, "    | ") {
		t.Errorf("the failure summary has no log lines:\n%s", r.Stderr)
	}
	deps, err := h.Client.AppsV1().Deployments(h.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 0 {
		t.Errorf("a failed build deployed something: %d Deployments", len(deps.Items))
	}
	assertNoBuildPods(t, h)
}

// Ctrl-C while BuildKit runs a step, or right after the source is packed,
// leaves no build pod.
func TestDockerfileBuildInterruptedLeavesNoPods(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"Dockerfile": fmt.Sprintf("FROM %s/tug/busybox:v1\nRUN echo building-slowly && sleep 300\n", reg),
	})
	h.mustTug("app", "create", "slow")
	const rounds = 10
	for i := 0; i < rounds; i++ {
		wait := "building-slowly"
		if i%2 == 1 {
			wait = "source:"
		}
		h.interrupt(i, Interrupt{Args: []string{"app", "deploy", "slow", "--repository", reg + "/e2e/" + h.NS + "/slow"}, Dir: src,
			Env: dockerfileEnv(reg), WaitFor: wait, Timeout: 120 * time.Second, Signal: os.Interrupt})
	}
	h.WaitPods("tug.dev/kind=build", 90*time.Second, "no build pods left", func(pods []corev1.Pod) bool { return len(pods) == 0 })
	deps, err := h.Client.AppsV1().Deployments(h.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 0 {
		t.Errorf("an interrupted build deployed something: %d Deployments", len(deps.Items))
	}
}
