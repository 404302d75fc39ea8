package imagebuild

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/progress"
)

func cnbOptions() Options {
	return Options{
		App: "shop", Namespace: "dev", PullSecret: "shop-registry", Builder: "10.0.0.5:5000/b/cnb@sha256:aa",
		Repository: "10.0.0.5:5000/apps/shop", Source: &Source{},
		CNB:      &CNB{Builder: protocol.Builder{CNB: true, UID: 1002, GID: 1003, RunImage: "registry.example.com/run:1", Lifecycle: "0.20.5"}, PlatformAPI: "0.14"},
		BuildEnv: []string{"TOKEN=s3cret-value"}, Buildpacks: []string{"heroku/nodejs"},
	}
}

// checkRestricted checks what Pod Security's "restricted" level asks of
// a pod: non-root, RuntimeDefault seccomp, no privilege escalation, every
// capability dropped and none added, only emptyDir and Secret volumes.
func checkRestricted(t *testing.T, p *corev1.Pod) {
	t.Helper()
	sc := p.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v is not restricted", sc)
	}
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		s := c.SecurityContext
		if s == nil || s.AllowPrivilegeEscalation == nil || *s.AllowPrivilegeEscalation || s.Capabilities == nil ||
			!slices.Equal(s.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(s.Capabilities.Add) > 0 || s.Privileged != nil {
			t.Errorf("container %s: security context %+v is not restricted", c.Name, s)
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil && v.Secret == nil {
			t.Errorf("volume %s is neither an emptyDir nor a Secret", v.Name)
		}
	}
	if p.Spec.HostNetwork || p.Spec.HostPID || p.Spec.HostIPC {
		t.Error("a host namespace")
	}
}

func TestCNBPodRunsTheLifecycleRestricted(t *testing.T) {
	p := Pod(cnbOptions(), "shop-build-x")
	checkRestricted(t, p)
	if u, g := *p.Spec.SecurityContext.RunAsUser, *p.Spec.SecurityContext.RunAsGroup; u != 1002 || g != 1003 {
		t.Errorf("runs as %d:%d, want the builder's CNB_USER_ID:CNB_GROUP_ID 1002:1003", u, g)
	}
	b := p.Spec.Containers[0]
	cmd := strings.Join(b.Command, " ")
	for _, want := range []string{"/tug-agent/tug-build cnb -repository 10.0.0.5:5000/apps/shop -run-image registry.example.com/run:1",
		"-cache-image 10.0.0.5:5000/apps/shop:cache", "-platform-api 0.14", "-insecure-registry 10.0.0.5:5000"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}
	if strings.Contains(cmd, "-insecure-registry registry.example.com") {
		t.Errorf("a public run image's registry is spoken to over plain HTTP: %s", cmd)
	}
	if b.Image != "10.0.0.5:5000/b/cnb@sha256:aa" || !b.Stdin {
		t.Errorf("build container image %s stdin %v", b.Image, b.Stdin)
	}
	raw, _ := json.Marshal(p)
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "TOKEN") || strings.Contains(string(raw), "heroku/nodejs") {
		t.Errorf("the build env or buildpacks are in the pod spec: %s", raw)
	}
	o := cnbOptions()
	o.RunImage = "10.0.0.5:5000/run:2"
	if cmd := strings.Join(Pod(o, "x").Spec.Containers[0].Command, " "); !strings.Contains(cmd, "-run-image 10.0.0.5:5000/run:2") {
		t.Errorf("--run-image is not the run image: %s", cmd)
	}
}

func TestInspectPodIsTheAgentAloneRestricted(t *testing.T) {
	o := cnbOptions()
	o.AgentImage = "reg/agent:v2"
	p := InspectPod(o, "shop-build-y")
	checkRestricted(t, p)
	if len(p.Spec.InitContainers) != 0 || len(p.Spec.Containers) != 1 {
		t.Fatalf("containers %d, init %d", len(p.Spec.Containers), len(p.Spec.InitContainers))
	}
	c := p.Spec.Containers[0]
	if c.Image != "reg/agent:v2" || strings.Join(c.Command, " ") != "/tug-build inspect -image 10.0.0.5:5000/b/cnb@sha256:aa" || c.Stdin {
		t.Errorf("inspect container %s %v stdin %v", c.Image, c.Command, c.Stdin)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != "tug-auth" || len(p.Spec.ImagePullSecrets) != 1 {
		t.Errorf("the registry credentials are not there: %+v %+v", c.VolumeMounts, p.Spec.ImagePullSecrets)
	}
	if p.Labels["tug.dev/kind"] != KindBuild {
		t.Errorf("labels %v", p.Labels)
	}
}

func TestNegotiatePicksTheNewestCommonPlatformAPI(t *testing.T) {
	for _, c := range []struct {
		have []string
		want string
	}{
		{[]string{"0.7", "0.8", "0.9", "0.10", "0.11", "0.12", "0.13", "0.14", "0.15"}, "0.15"},
		{[]string{"0.12", "0.13", "0.14"}, "0.14"},
		{[]string{"0.13", "0.16"}, "0.13"},
	} {
		b := &CNB{Builder: protocol.Builder{PlatformAPIs: c.have}}
		if err := b.Negotiate(); err != nil || b.PlatformAPI != c.want {
			t.Errorf("%v: got %q, %v; want %s", c.have, b.PlatformAPI, err, c.want)
		}
	}
	b := &CNB{Builder: protocol.Builder{PlatformAPIs: []string{"0.9", "0.12"}, Lifecycle: "0.17.0"}}
	err := b.Negotiate()
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "0.9, 0.12") || !strings.Contains(err.Error(), "0.13, 0.14, 0.15") {
		t.Errorf("no common version: want a usage error naming both sides, got %v", err)
	}
}

func TestBuildpackAndBuildEnvInput(t *testing.T) {
	c := &CNB{Builder: protocol.Builder{Buildpacks: []string{"heroku/nodejs@3.2.1", "heroku/procfile@4.0.0"}}}
	if err := c.CheckBuildpacks([]string{"heroku/nodejs", "heroku/procfile@4.0.0"}); err != nil {
		t.Errorf("buildpacks the builder has: %v", err)
	}
	for _, bad := range []string{"heroku/python", "heroku/nodejs@1.0.0"} {
		if err := c.CheckBuildpacks([]string{bad}); !inputerr.Is(err) || !strings.Contains(err.Error(), "heroku/procfile@4.0.0") {
			t.Errorf("%s: want a usage error listing the builder's buildpacks, got %v", bad, err)
		}
	}
	for _, ok := range []string{"heroku/nodejs", "paketo-buildpacks/go@4.1.0", "tug.test/shell"} {
		if err := ValidateBuildpack(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "x@", "@1", "/abs", "a/../b", "x@1@2", "a=b"} {
		if err := ValidateBuildpack(bad); !inputerr.Is(err) {
			t.Errorf("--buildpack %q: want a usage error, got %v", bad, err)
		}
	}
	for _, ok := range []string{"K=V", "K=", "BP_NODE_VERSION=20.x", "A=b=c"} {
		if err := ValidateBuildEnv(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"K", "=v", "a/b=1", "..=x", "A B=1"} {
		if err := ValidateBuildEnv(bad); !inputerr.Is(err) {
			t.Errorf("--build-env %q: want a usage error, got %v", bad, err)
		}
	}
}

func TestParseInspect(t *testing.T) {
	c, err := parseInspect("noise\nTUG-BUILD-INSPECT {\"cnb\":true,\"uid\":1000,\"gid\":1000,\"runImage\":\"r:1\",\"platformAPIs\":[\"0.15\"],\"lifecycle\":\"0.21.0\",\"buildpacks\":[\"a/b@1\"]}\n", "b", "")
	if err != nil || c == nil || c.UID != 1000 || c.RunImage != "r:1" || !slices.Equal(c.Buildpacks, []string{"a/b@1"}) {
		t.Errorf("a CNB builder: %+v %v", c, err)
	}
	if c, err := parseInspect("TUG-BUILD-INSPECT {\"cnb\":false}\n", "b", ""); c != nil || err != nil {
		t.Errorf("a tug builder: %+v %v", c, err)
	}
	if c, err := parseInspect("usage: tug-build install DEST | ...\n", "b", ""); c != nil || err != nil {
		t.Errorf("an agent older than inspect: %+v %v", c, err)
	}
	var unreadable *UnreadableError
	if _, err := parseInspect("TUG-BUILD-INSPECT {\"error\":\"reading the builder b: 404\"}\n", "b", ""); !errors.As(err, &unreadable) {
		t.Errorf("an unreadable builder: %v", err)
	}
	if _, err := parseInspect("TUG-BUILD-INSPECT {\"cnb\":true,\"uid\":0,\"gid\":0}\n", "b", ""); err == nil || !strings.Contains(err.Error(), "root") {
		t.Errorf("a builder whose user is root: %v", err)
	}
	if _, err := parseInspect("killed\n", "b", "exit 137 OOMKilled"); err == nil || !strings.Contains(err.Error(), "OOMKilled") {
		t.Errorf("no answer: %v", err)
	}
}

// A builder pinned by digest is read once: its answer is remembered with
// the app's build settings and later builds, or another app's first, make
// no pod to read it again; one named by a tag is read every time.
func TestPinnedBuilderIsInspectedOnce(t *testing.T) {
	pinned := "10.0.0.5:5000/b/cnb@sha256:" + strings.Repeat("a", 64)
	known := &app.InspectedBuilder{Image: pinned, Builder: protocol.Builder{CNB: true, UID: 1000, GID: 1000, RunImage: "r:1", PlatformAPIs: []string{"0.15"}, Buildpacks: []string{"x/y@1"}}}
	a := &app.App{Name: "shop", Namespace: "dev", Build: &app.BuildSettings{Builder: pinned, Repository: "10.0.0.5:5000/apps/shop", Inspected: known}}
	p, err := FromSource{App: "shop"}.plan(a)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a pod made to read the builder fails at once
	c, err := p.inspected(ctx, Deps{Client: client, Progress: progress.Nop{}}, nil, Options{App: "shop", Namespace: "dev", Builder: pinned})
	if err != nil || c == nil || c.UID != 1000 || !slices.Equal(c.Buildpacks, []string{"x/y@1"}) || len(client.Actions()) != 0 {
		t.Errorf("a remembered pinned builder: %+v %v, %d requests", c, err, len(client.Actions()))
	}
	if !p.remember.Equal(*a.Build) {
		t.Errorf("the remembered answer would be dropped: %+v", p.remember)
	}
	// another app of the namespace remembers it: no pod either
	store := &app.Store{Client: fake.NewClientset(), Namespace: "dev"}
	if err := store.CreateApp(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	fresh, err := FromSource{App: "blog"}.plan(&app.App{Name: "blog", Namespace: "dev", Build: &app.BuildSettings{Builder: pinned, Repository: "10.0.0.5:5000/apps/blog"}})
	if err != nil {
		t.Fatal(err)
	}
	client = fake.NewClientset()
	c, err = fresh.inspected(ctx, Deps{Client: client, Progress: progress.Nop{}}, store, Options{App: "blog", Namespace: "dev", Builder: pinned})
	if err != nil || c == nil || c.UID != 1000 || len(client.Actions()) != 0 || fresh.remember.Inspected == nil || fresh.remember.Inspected.Image != pinned {
		t.Errorf("a pinned builder another app remembers: %+v %v, %d requests, remembered %+v", c, err, len(client.Actions()), fresh.remember.Inspected)
	}
	for _, other := range []string{"10.0.0.5:5000/b/cnb:v1", "10.0.0.5:5000/b/cnb@sha256:" + strings.Repeat("b", 64)} {
		client := fake.NewClientset()
		if _, err := p.inspected(ctx, Deps{Client: client, Progress: progress.Nop{}}, store, Options{App: "shop", Namespace: "dev", Builder: other}); err == nil || len(client.Actions()) == 0 {
			t.Errorf("%s: read without a pod (%v)", other, err)
		}
	}
}

// A CNB build's result carries what the agent read of the registry's
// manifests, and the builder and buildpacks its release records; an older
// agent's result (no upload) gives no counts, and other builds record no
// builder.
func TestCNBBuildReportsTheUploadAndWhatBuiltIt(t *testing.T) {
	line := resultPrefix + `{"ok":true,"image":"10.0.0.5:5000/apps/shop@sha256:bb","processes":["web"],"buildpacks":["tug.test/shell@0.1.0"],` +
		`"upload":{"previousImage":"10.0.0.5:5000/apps/shop@sha256:aa","newLayers":1,"newBytes":1229,"reusedLayers":3,"reusedBytes":4096}}` + "\n"
	o := cnbOptions()
	o.Timeout = time.Minute
	res, err := Build(context.Background(), Deps{Client: runningClient(), Executor: &fakeAgent{output: line}, Out: io.Discard, Progress: noProgress{}}, o)
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.Upload{PreviousImage: "10.0.0.5:5000/apps/shop@sha256:aa", NewLayers: 1, NewBytes: 1229, ReusedLayers: 3, ReusedBytes: 4096}
	if res.Upload == nil || *res.Upload != want {
		t.Errorf("upload %+v, want %+v", res.Upload, want)
	}
	s := res.Summary()
	if s.Image != res.Image || s.Upload != res.Upload || s.BuiltWith == nil || s.BuiltWith.Builder != o.Builder ||
		!slices.Equal(s.BuiltWith.Buildpacks, []string{"tug.test/shell@0.1.0"}) {
		t.Errorf("summary %+v, built with %+v", s, s.BuiltWith)
	}

	old := resultPrefix + `{"ok":true,"image":"10.0.0.5:5000/apps/shop@sha256:bb","processes":["web"]}` + "\n"
	res, err = Build(context.Background(), Deps{Client: runningClient(), Executor: &fakeAgent{output: old}, Out: io.Discard, Progress: noProgress{}}, o)
	if err != nil || res.Upload != nil || res.BuiltWith() == nil {
		t.Errorf("an agent that sent no upload: %+v, %v", res, err)
	}
	o = opts()
	res, err = Build(context.Background(), Deps{Client: runningClient(), Executor: &fakeAgent{output: old}, Out: io.Discard, Progress: noProgress{}}, o)
	if err != nil || res.BuiltWith() != nil || res.Summary().BuiltWith != nil {
		t.Errorf("a build with tug's builder contract records what built it: %+v, %v", res.BuiltWith(), err)
	}
}
