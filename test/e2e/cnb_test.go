package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/kube"
)

// cnbBuilder is the local cluster's CNB test builder (test/images/cnb,
// pushed by cluster.sh ensure-cnb-builder), by digest: a builder pushed
// again under its tag would not be pulled again by a node that has it.
func cnbBuilder(t *testing.T, reg string) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("TUG_E2E_REQUIRED") == "1" {
		skip = t.Fatalf
	}
	req, _ := http.NewRequest(http.MethodHead, "http://"+reg+"/v2/tug/cnb-builder/manifests/v1", nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		skip("the local registry: %v", err)
		return ""
	}
	resp.Body.Close()
	d := resp.Header.Get("Docker-Content-Digest")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(d, "sha256:") {
		skip("no CNB test builder in %s (%s): run test/cluster/cluster.sh ensure-cnb-builder", reg, resp.Status)
	}
	return reg + "/tug/cnb-builder@" + d
}

// buildPodSpecs records the spec of every build pod made in the
// namespace while the test runs, so it can say what they held. It lists
// and watches through kube.UntilChange, which resumes a watch the server
// or a busy connection closes (a bare watch that closed early once made
// the test see no pod at all), and counts each pod once by its UID.
func (h *H) buildPodSpecs() func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[types.UID]bool{}
	var specs []string
	record := func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[p.UID] {
			seen[p.UID] = true
			b, _ := json.Marshal(p.Spec)
			specs = append(specs, string(b))
		}
	}
	listed := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		lw := kube.Pods(h.Client, h.NS, metav1.ListOptions{LabelSelector: "tug.dev/kind=build"})
		first := true
		_ = kube.UntilChange(ctx, lw, func(c kube.Change[*corev1.Pod]) (bool, error) {
			if c.Listed {
				for _, p := range c.Objects {
					record(p)
				}
				if first {
					first = false
					close(listed)
				}
			} else if c.Type == watch.Added {
				record(c.Object)
			}
			return false, nil
		})
	}()
	h.t.Cleanup(func() { cancel(); <-done })
	select {
	case <-listed:
	case <-time.After(30 * time.Second):
		h.t.Fatal("could not list the namespace's build pods in 30s")
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), specs...)
	}
}

// atLeast waits until specs has seen n build pods (a watch delivers an
// event a moment after the command that caused it returns) and returns
// them.
func (h *H) atLeast(specs func() []string, n int, what string) []string {
	h.t.Helper()
	h.Eventually(30*time.Second, what, func() (bool, error) { return len(specs()) >= n, nil })
	return specs()
}

// servesEventually waits until the app's web Service answers with want.
func (h *H) servesEventually(appName, want string) {
	h.t.Helper()
	svc, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), appName, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.Eventually(60*time.Second, appName+" serves "+want, func() (bool, error) {
		body, err := tryGet(fmt.Sprintf("http://%s/", svc.Spec.ClusterIP))
		return strings.Contains(body, want), err
	})
}

var builtByDigest = regexp.MustCompile(`built (\S+/e2e/\S+@sha256:[0-9a-f]{64}) with buildpacks`)

// A CNB builder's own lifecycle builds the app: deployed by digest, its
// web and worker process types are the app's processes, the build
// environment reaches the buildpack but no pod spec, and a rebuild after
// one changed file restores the cache and reuses the unchanged layers.
func TestCNBBuildDeploysProcessesAndCaches(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	builder := cnbBuilder(t, reg)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"message.txt": "Built by buildpacks\n"})
	h.mustTug("app", "create", "cnb")
	specs := h.buildPodSpecs()
	deploy := func(extra ...string) Result {
		return h.TugRun(Run{Args: append([]string{"app", "deploy", "cnb", "--timeout", "2m", "-o", "json"}, extra...), Dir: src})
	}
	r := deploy("--builder", builder, "--repository", reg+"/e2e/"+h.NS+"/cnb", "--build-env", "GREETING=psst-4217")
	if r.Code != 0 {
		t.Fatalf("CNB deploy: %s", r)
	}
	m := builtByDigest.FindStringSubmatch(r.Stderr)
	if m == nil || !strings.Contains(r.Stderr, "/cnb/lifecycle/creator") || !strings.Contains(r.Stderr, "GREETING is psst-4217") {
		t.Fatalf("the lifecycle's build is not shown, or the buildpack did not see the build env:\n%s", r.Stderr)
	}
	// a new repository: every layer is new, and the line says so
	first := cnbUpload(t, r, m[1], "")
	if first.NewLayers == 0 || first.NewBytes == 0 || first.ReusedLayers != 0 ||
		!strings.Contains(r.Stderr, fmt.Sprintf("image: %d new layer", first.NewLayers)) {
		t.Errorf("the first build's upload %+v is not every layer new, or not shown:\n%s", first, r.Stderr)
	}
	for _, proc := range []string{"web", "worker"} {
		d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "cnb-"+proc, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the image's %s process type is not a process of the app: %v", proc, err)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != m[1] || strings.Join(c.Command, " ") != "/cnb/process/"+proc {
			t.Errorf("%s runs %s %v, want %s by digest through /cnb/process/%s", proc, c.Image, c.Command, m[1], proc)
		}
	}
	serves := func(want string) { t.Helper(); h.servesEventually("cnb", want) }
	serves("greeting: psst-4217")
	serves("Built by buildpacks")
	h.Eventually(60*time.Second, "the worker process works", func() (bool, error) {
		out := h.Tug("logs", "cnb", "-p", "worker")
		return strings.Contains(out.Stdout, "worker is working"), nil
	})
	seen := h.atLeast(specs, 2, "two build pods: the builder's inspection and the build")
	for _, s := range seen {
		if strings.Contains(s, "psst-4217") {
			t.Errorf("the build env is in a build pod's spec: %s", s)
		}
	}

	// one changed file: the remembered builder and env; the cache restores
	// the tools layer, the previous image's unchanged layers are reused
	writeFiles(t, src, map[string]string{"message.txt": "Second edition\n"})
	r = deploy()
	if r.Code != 0 {
		t.Fatalf("second CNB deploy: %s", r)
	}
	for _, want := range []string{"Restoring data for \"tug.test/shell:tools\" from cache", "reusing the cached tools layer",
		"Reusing layer 'tug.test/shell:tools'", "Adding layer 'tug.test/shell:web'", "GREETING is psst-4217"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the rebuild's log lacks %q:\n%s", want, r.Stderr)
		}
	}
	m2 := builtByDigest.FindStringSubmatch(r.Stderr)
	if m2 == nil || m2[1] == m[1] {
		t.Fatalf("the rebuild deployed no new digest:\n%s", r.Stderr)
	}
	// the registry got only the changed layers: counted against the
	// first image, from the two manifests
	second := cnbUpload(t, r, m2[1], m[1])
	if second.ReusedLayers == 0 || second.NewLayers == 0 || second.NewBytes >= first.NewBytes ||
		!strings.Contains(r.Stderr, fmt.Sprintf("image: %d new layer", second.NewLayers)) ||
		!strings.Contains(r.Stderr, fmt.Sprintf("%d reused of the previous image", second.ReusedLayers)) {
		t.Errorf("the rebuild's upload %+v against the first build's %+v: want fewer new bytes and reused layers, shown:\n%s", second, first, r.Stderr)
	}
	t.Logf("the first build pushed %+v; the rebuild %+v", first, second)
	serves("Second edition")
	cnbBuiltWith(t, h, builder)
	if n := len(h.atLeast(specs, len(seen)+1, "the rebuild's build pod")); n != len(seen)+1 {
		t.Errorf("the rebuild made %d pods, want the build alone: a builder pinned by digest is read once", n-len(seen))
	}

	// unchanged source builds the same digest: no release, no unit restarts
	units := func() string {
		t.Helper()
		pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=cnb,tug.dev/process"})
		if err != nil {
			t.Fatal(err)
		}
		var uids []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				uids = append(uids, string(p.UID))
			}
		}
		slices.Sort(uids)
		return strings.Join(uids, ",")
	}
	before := units()
	releases := h.releasesByVersion("cnb")
	r = deploy()
	var res struct {
		Release   int  `json:"release"`
		Unchanged bool `json:"unchanged"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &res) != nil {
		t.Fatalf("a deploy of unchanged source: %s", r)
	}
	if m3 := builtByDigest.FindStringSubmatch(r.Stderr); m3 == nil || m3[1] != m2[1] {
		t.Fatalf("unchanged source built another image (want %s):\n%s", m2[1], r.Stderr)
	}
	if !res.Unchanged || res.Release != len(releases) || !strings.Contains(r.Stderr, "nothing new to deploy: the build made the image cnb v") {
		t.Errorf("unchanged source: result %+v (want the running v%d, unchanged), stderr:\n%s", res, len(releases), r.Stderr)
	}
	if n := len(h.releasesByVersion("cnb")); n != len(releases) {
		t.Errorf("unchanged source made a release: %d releases, had %d", n, len(releases))
	}
	if after := units(); after != before {
		t.Errorf("unchanged source restarted units: %s, then %s", before, after)
	}
	serves("Second edition")

	// a hand edit of what tug applies (kubectl scale): the same build is
	// a rollout again, which puts the app's unit count back
	if _, err := h.Client.AppsV1().Deployments(h.NS).Patch(context.Background(), "cnb-worker", types.MergePatchType,
		[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r = deploy()
	res.Unchanged, res.Release = false, 0
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &res) != nil || res.Unchanged || res.Release != len(releases)+1 {
		t.Fatalf("the same build after a hand edit: %+v; want release v%d rolled out\n%s", res, len(releases)+1, r)
	}
	if d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "cnb-worker", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Errorf("after the rollout the worker's Deployment wants %v units, want the app's 1 (%v)", d.Spec.Replicas, err)
	}
	assertNoBuildPods(t, h)
}

// cnbUpload is the upload of a CNB deploy's -o json result, checked to
// be the build of image, counted against previous ("" for none).
func cnbUpload(t *testing.T, r Result, image, previous string) protocol.Upload {
	t.Helper()
	var res struct {
		Build struct {
			Image  string           `json:"image"`
			Upload *protocol.Upload `json:"upload"`
		} `json:"build"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("the deploy's -o json: %v\n%s", err, r.Stdout)
	}
	u := res.Build.Upload
	if res.Build.Image != image || u == nil || u.PreviousImage != previous {
		t.Fatalf("the deploy's build %+v (upload %+v): want image %s, counted against %q\n%s", res.Build, u, image, previous, r.Stdout)
	}
	return *u
}

// cnbBuiltWith checks that app info names the builder and the buildpack
// that built the running release, in its table and its -o json.
func cnbBuiltWith(t *testing.T, h *H, builder string) {
	t.Helper()
	var info struct {
		BuiltWith *struct {
			Builder    string   `json:"builder"`
			Buildpacks []string `json:"buildpacks"`
		} `json:"builtWith"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", "cnb", "-o", "json").Stdout), &info); err != nil {
		t.Fatal(err)
	}
	if b := info.BuiltWith; b == nil || b.Builder != builder || !slices.Contains(b.Buildpacks, "tug.test/shell@0.1.0") {
		t.Errorf("app info -o json: built with %+v, want %s and tug.test/shell@0.1.0", b, builder)
	}
	if out := h.mustTug("app", "info", "cnb").Stdout; !strings.Contains(out, "Built with: builder "+builder+", buildpacks tug.test/shell@0.1.0") {
		t.Errorf("app info does not say what built the release:\n%s", out)
	}
}

// --buildpack picks the builder's buildpacks in order; bad input exits 2
// before any request (tug is pointed at a server that does not exist), a
// buildpack the builder lacks exits 2 before the build, and an app no
// buildpack detects exits 16 with nothing deployed.
func TestCNBBuildpacksAndBadInput(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	builder := cnbBuilder(t, reg)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"message.txt": "Picked buildpacks\n"})
	repo := reg + "/e2e/" + h.NS + "/bp"

	nowhere := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(nowhere, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: x, context: {cluster: x, namespace: x}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--build-env", "NOEQUALS"}, {"--build-env", "=v"}, {"--buildpack", "bad id"}, {"--buildpack", "x@"}} {
		r := h.TugRun(Run{Args: append([]string{"app", "deploy", "bp", "--builder", builder, "--repository", repo}, bad...), Dir: src, Env: []string{"KUBECONFIG=" + nowhere}})
		if r.Code != 2 || !strings.Contains(r.Stderr, "invalid --"+strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: want exit 2 before any request, got %s", bad, r)
		}
	}

	h.mustTug("app", "create", "bp")
	r := h.TugRun(Run{Args: []string{"app", "deploy", "bp", "--builder", builder, "--repository", repo, "--buildpack", "tug.test/nope"}, Dir: src})
	if r.Code != 2 || !strings.Contains(r.Stderr, "no such buildpack") || !strings.Contains(r.Stderr, "tug.test/shell@0.1.0") {
		t.Errorf("a buildpack the builder lacks: want exit 2 naming those it has, got %s", r)
	}

	r = h.TugRun(Run{Args: []string{"app", "deploy", "bp", "--timeout", "2m", "--builder", builder, "--repository", repo,
		"--buildpack", "tug.test/extra@0.1.0", "--buildpack", "tug.test/shell"}, Dir: src})
	if r.Code != 0 || !strings.Contains(r.Stderr, "tug.test/extra: wrote extra.txt") || !strings.Contains(r.Stderr, "with buildpacks tug.test/extra@0.1.0, tug.test/shell@0.1.0") {
		t.Fatalf("--buildpack: %s", r)
	}
	h.servesEventually("bp", "extra buildpack was here")
	if info := h.Tug("app", "info", "bp"); !strings.Contains(info.Stdout, "buildpacks tug.test/extra@0.1.0 tug.test/shell") {
		t.Errorf("app info does not show the remembered buildpacks:\n%s", info)
	}

	// no message.txt: nothing detects it (the remembered buildpacks are
	// replaced by the builder's order)
	empty := t.TempDir()
	writeFiles(t, empty, map[string]string{"README": "nothing to build\n"})
	r = h.TugRun(Run{Args: []string{"app", "deploy", "bp", "--timeout", "2m", "--buildpack", "tug.test/shell"}, Dir: empty})
	if r.Code != 16 || !strings.Contains(r.Stderr, "no buildpack detected the app") || !strings.Contains(r.Stderr, "tug.test/shell: no message.txt") {
		t.Errorf("an app no buildpack detects: want exit 16 with the detect output, got %s", r)
	}
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "bp-web", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Labels["tug.dev/release"] != "1" {
		t.Errorf("a failed detection changed what runs: %v %v", err, d.Spec.Template.Labels)
	}
	assertNoBuildPods(t, h)
}

// The CNB build pod (and the pod that reads the builder) is admitted
// where Pod Security enforces "restricted"; a Dockerfile build's is not.
func TestCNBBuildPodPassesRestricted(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	builder := cnbBuilder(t, reg)
	ctx := context.Background()
	ns, err := h.Client.CoreV1().Namespaces().Get(ctx, h.NS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := h.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"message.txt": "Restricted\n"})
	h.mustTug("app", "create", "strict")
	// tug's app pods themselves are not "restricted" yet: the rollout is
	// refused; the build before it is the point
	r := h.TugRun(Run{Args: []string{"app", "deploy", "strict", "--timeout", "20s", "--builder", builder, "--repository", reg + "/e2e/" + h.NS + "/strict"}, Dir: src})
	if builtByDigest.FindString(r.Stderr) == "" || strings.Contains(r.Stderr, "refuses the build pod") {
		t.Fatalf("the CNB build in a restricted namespace: %s", r)
	}
	// the label is enforced: a Dockerfile build pod is refused there
	writeFiles(t, src, map[string]string{"Dockerfile": "FROM " + reg + "/tug/busybox:v1\n"})
	h.mustTug("app", "create", "docker")
	r = h.TugRun(Run{Args: []string{"app", "deploy", "docker", "--repository", reg + "/e2e/" + h.NS + "/docker"}, Dir: src, Env: dockerfileEnv(reg)})
	if r.Code != 16 || !strings.Contains(r.Stderr, "refuses the build pod") {
		t.Errorf("a Dockerfile build in a restricted namespace: want it refused, got %s", r)
	}
	assertNoBuildPods(t, h)
}

// Ten CNB builds stopped at different moments, by Ctrl-C and by kill -9,
// deploy nothing; then no pod of theirs is left: Ctrl-C deletes its own,
// and the pods of a killed tug (which no cluster controller deletes: a
// finished bare pod stays) are swept by the app's next build once they
// have ended (their deadline is the build timeout). The release list and
// app info agree with what runs.
func TestCNBBuildInterruptedLeavesNoPods(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	builder := cnbBuilder(t, reg)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"message.txt": "Interrupted\n"})
	h.mustTug("app", "create", "stop")
	args := []string{"app", "deploy", "stop", "--builder", builder, "--repository", reg + "/e2e/" + h.NS + "/stop"}
	// the moments: the pod that reads the builder exists, the build pod
	// exists, the upload starts, the lifecycle runs, a buildpack runs
	inspecting := func(p corev1.Pod) bool {
		return strings.Contains(strings.Join(p.Spec.Containers[0].Command, " "), " inspect ")
	}
	moments := []struct {
		line string
		pod  func(corev1.Pod) bool
	}{
		{pod: inspecting},
		{pod: func(p corev1.Pod) bool { return !inspecting(p) }},
		{line: "running; uploading"},
		{line: "/cnb/lifecycle/creator"},
		{line: "tug.test/shell:"},
	}
	allPods := func() []corev1.Pod {
		return h.WaitPods("tug.dev/kind=build", time.Second, "build pods", func([]corev1.Pod) bool { return true })
	}
	killed := 0
	for i := 0; i < 10; i++ {
		m := moments[i%len(moments)]
		sig := os.Signal(os.Interrupt)
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		cmd := exec.Command(env.tug, append(args, "--build-timeout", "45s")...)
		cmd.Dir = src
		cmd.Env = h.tugEnv(nil)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, p := range allPods() { // not this round's
			seen[p.Name] = true
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s := NewStream(stderr)
		if m.pod != nil {
			h.WaitPods("tug.dev/kind=build", 90*time.Second, fmt.Sprintf("round %d: its pod", i), func(pods []corev1.Pod) bool {
				for _, p := range pods {
					if !seen[p.Name] && m.pod(p) {
						return true
					}
				}
				return false
			})
		} else {
			s.WaitFor(t, m.line, 90*time.Second)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); sig == os.Interrupt && code != 130 {
			t.Fatalf("round %d: Ctrl-C: exited %d (%v), want 130; stderr:\n%s", i, code, err, s.String())
		}
		if sig == syscall.SIGKILL {
			for _, p := range allPods() {
				if !seen[p.Name] && p.DeletionTimestamp == nil {
					killed++
					break
				}
			}
		}
	}
	if killed == 0 {
		t.Errorf("no kill -9 left a pod behind: the sweep below is not tested")
	}
	deps, err := h.Client.AppsV1().Deployments(h.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(deps.Items) != 0 {
		t.Fatalf("an interrupted build deployed something: %v %d Deployments", err, len(deps.Items))
	}
	type release struct {
		Version int    `json:"version"`
		Status  string `json:"status"`
	}
	releases := func() []release {
		var rels []release
		if err := json.Unmarshal([]byte(h.mustTug("release", "list", "stop", "-o", "json").Stdout), &rels); err != nil {
			t.Fatal(err)
		}
		return rels
	}
	for _, r := range releases() {
		if r.Status == "deployed" {
			t.Errorf("release list says v%d is deployed, but nothing runs", r.Version)
		}
	}
	// the killed tugs' pods end by their deadline; the next build sweeps
	// those that have
	h.Eventually(2*time.Minute, "the killed builds' pods have ended", func() (bool, error) {
		for _, p := range allPods() {
			if p.DeletionTimestamp == nil && !imagebuild.Leftover(&p, time.Now()) {
				return false, fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
			}
		}
		return true, nil
	})
	if r := h.TugRun(Run{Args: append(args, "--build-timeout", "3m"), Dir: src}); r.Code != 0 {
		t.Fatalf("the deploy after the interrupted ones: %s", r)
	}
	assertNoBuildPods(t, h)
	rels := releases()
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "stop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runs := d.Spec.Template.Labels["tug.dev/release"]
	if len(rels) == 0 || rels[0].Status != "deployed" || fmt.Sprint(rels[0].Version) != runs {
		t.Errorf("release list %+v does not agree with what runs (v%s)", rels, runs)
	}
	if info := h.mustTug("app", "info", "stop").Stdout; !strings.Contains(info, "v"+runs) {
		t.Errorf("app info does not name v%s, which runs:\n%s", runs, info)
	}
}
