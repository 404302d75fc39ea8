package imagebuild

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
)

func dockerfileOpts() Options {
	o := opts()
	o.Builder = ""
	o.Dockerfile = "docker/Dockerfile"
	o.BuildArgs = []string{"VERSION=1.2", "EMPTY="}
	o.Target = "prod"
	o.BuildKitImage = "reg:5000/tug/buildkit:v1"
	return o
}

func TestDockerfilePodRunsRootlessBuildKit(t *testing.T) {
	o := dockerfileOpts()
	o.PlainHTTP = []string{"10.0.0.5:5000", "reg:5000"}
	p := Pod(o, "shop-build-abcde")
	if len(p.Spec.Containers) != 2 || p.Spec.Containers[0].Name != "build" || p.Spec.Containers[1].Name != "buildkitd" {
		t.Fatalf("containers %+v, want build (the client) and buildkitd", p.Spec.Containers)
	}
	c, d := p.Spec.Containers[0], p.Spec.Containers[1]
	if c.Image != "reg:5000/tug/buildkit:v1" || d.Image != c.Image {
		t.Errorf("images %s %s, want the BuildKit image", c.Image, d.Image)
	}
	want := []string{"/tug-agent/tug-build", "dockerfile", "-repository", "reg:5000/shop", "-dockerfile", "docker/Dockerfile",
		"-app", "/tug-src", "-job", "stdin", "-buildkitd", "tcp://127.0.0.1:9374", "-tls-dir", "/tug-client"}
	if !slices.Equal(c.Command, want) {
		t.Errorf("command\n %q\nwant\n %q", c.Command, want)
	}
	if !c.Stdin || !c.StdinOnce || d.Stdin {
		t.Error("the source goes to the client's stdin only")
	}
	// buildkitd: rootless, as user 1000, with what it needs and no more
	sc := d.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != BuildKitUser || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Fatalf("BuildKit must run as user %d, not root: %+v", BuildKitUser, sc)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("the BuildKit pod is privileged")
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined ||
		sc.AppArmorProfile == nil || sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
		t.Errorf("rootless BuildKit needs unconfined seccomp and AppArmor: %+v", sc)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_ADMIN"}) {
		t.Errorf("capabilities %+v, want SYS_ADMIN added only", sc.Capabilities)
	}
	if !strings.Contains(strings.Join(d.Command, " "), "--tlscacert /tug-buildkitd/ca.pem") || !strings.Contains(strings.Join(d.Command, " "), "--addr tcp://127.0.0.1:9374") {
		t.Errorf("buildkitd must listen with mutual TLS: %q", d.Command)
	}
	// item 3: buildkitd has no credentials, no source, no client key
	for _, e := range d.Env {
		if e.Name == "DOCKER_CONFIG" {
			t.Errorf("buildkitd has the docker config: %+v", d.Env)
		}
	}
	for _, m := range d.VolumeMounts {
		if m.Name != "tug-buildkitd" || !m.ReadOnly {
			t.Errorf("buildkitd mounts %s (read-only %v); it needs its certificate and config only", m.Name, m.ReadOnly)
		}
	}
	if p.Spec.ShareProcessNamespace != nil && *p.Spec.ShareProcessNamespace {
		t.Error("the containers share a PID namespace: RUN steps would see the client's command lines")
	}
	// the client: the credentials and the client certificate, no capability
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = true
	}
	if !mounts["tug-auth"] || !mounts["tug-client"] || !mounts["tug-src"] || mounts["tug-buildkitd"] {
		t.Errorf("client mounts %v", mounts)
	}
	var docker bool
	for _, e := range c.Env {
		docker = docker || e.Name == "DOCKER_CONFIG" && e.Value == authDir
	}
	if !docker {
		t.Errorf("the push credentials are not mounted as a docker config in the client: %+v", c.Env)
	}
	if cs := c.SecurityContext; cs == nil || cs.Capabilities == nil || !slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.SeccompProfile == nil || cs.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("the client keeps capabilities or seccomp is off: %+v", c.SecurityContext)
	}
	// the agent, the certificates and the config come from the init container
	if len(p.Spec.InitContainers) != 1 {
		t.Fatalf("init containers %+v", p.Spec.InitContainers)
	}
	setup := p.Spec.InitContainers[0]
	if setup.Image != AgentImage || !slices.Equal(setup.Command, []string{"/tug-build", "buildkit-setup", "-install", "/tug-agent/tug-build",
		"-daemon", "/tug-buildkitd", "-client", "/tug-client", "-plain-http", "10.0.0.5:5000,reg:5000"}) {
		t.Errorf("setup %s %q", setup.Image, setup.Command)
	}
	if sc := setup.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != BuildKitUser {
		t.Errorf("the setup runs as %+v, want user %d (buildkitd and the client read what it writes)", sc, BuildKitUser)
	}
	// item 10: the build arguments and target are not in the pod
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"VERSION", "1.2", "EMPTY", "prod"} {
		if strings.Contains(string(b), v) {
			t.Errorf("the pod spec holds %q of the build arguments or target", v)
		}
	}
	// item 8: every container's disk is capped, and every emptyDir
	for _, k := range p.Spec.Containers {
		if k.Resources.Limits.StorageEphemeral().IsZero() {
			t.Errorf("container %s has no ephemeral-storage limit", k.Name)
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil && (v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero()) {
			t.Errorf("emptyDir %s has no sizeLimit", v.Name)
		}
	}
	// a builder build keeps the image's defaults
	if Pod(opts(), "x").Spec.Containers[0].SecurityContext != nil {
		t.Error("a builder build got a security context")
	}
	if Pod(Options{Dockerfile: "Dockerfile", Repository: "r/x"}, "x").Spec.Containers[0].Image != BuildKitImage {
		t.Error("no BuildKit image by default")
	}
}

func TestPlainHTTPRegistries(t *testing.T) {
	df := "# syntax\nFROM --platform=linux/amd64 10.0.0.5:5000/base:v1 AS build\nRUN x\nfrom localhost:5000/run:1\nFROM docker.io/library/busybox\nFROM build\nFROM 192.168.1.2/x\n"
	got := PlainHTTPRegistries("10.200.0.1:15000/e2e/shop", df)
	want := []string{"10.0.0.5:5000", "10.200.0.1:15000", "192.168.1.2", "localhost:5000"}
	if !slices.Equal(got, want) {
		t.Errorf("PlainHTTPRegistries = %q, want %q", got, want)
	}
	if got := PlainHTTPRegistries("registry.example.com/shop", "FROM ghcr.io/x/y:1\nFROM 8.8.8.8/x\n"); len(got) != 0 {
		t.Errorf("public registries over plain HTTP: %q", got)
	}
}

func TestPodSecurityRefusalNamesTheLabel(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "shop-build-x",
			errors.New(`violates PodSecurity "baseline:latest": non-default capabilities (container "build" must not include "SYS_ADMIN")`))
	})
	_, err := Build(context.Background(), Deps{Client: c, Executor: &fakeAgent{}, Out: &strings.Builder{}, Progress: noProgress{}}, dockerfileOpts())
	var be *Error
	if !errors.As(err, &be) || be.ExitCode() != CodeBuildFailed {
		t.Fatalf("a refused pod: %v, want a build error", err)
	}
	for _, want := range []string{LabelPodSecurity + "=privileged", "violates PodSecurity", "SYS_ADMIN", "namespace apps"} {
		if !strings.Contains(be.Message, want) {
			t.Errorf("message %q does not say %q", be.Message, want)
		}
	}
	// other errors stay as they were
	if _, ok := podSecurityRefusal(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("RBAC says no"))); ok {
		t.Error("an RBAC refusal taken for Pod Security")
	}
}

func TestCheckPodSecurity(t *testing.T) {
	for level, ok := range map[string]bool{"": true, "privileged": true, "baseline": false, "restricted": false} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}
		if level != "" {
			ns.Labels = map[string]string{LabelPodSecurity: level}
		}
		c, err := CheckPodSecurity(context.Background(), fake.NewClientset(ns), "apps")
		if err != nil {
			t.Fatal(err)
		}
		if c.OK != ok || c.Level != level || !strings.Contains(c.Message, "apps") {
			t.Errorf("level %q: %+v, want ok=%v", level, c, ok)
		}
	}
}

func TestPlanPicksBuildKitWithoutABuilder(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "apps"}
	f := FromSource{App: "shop", Want: app.BuildSettings{Repository: "reg/shop"}, Dockerfile: "Dockerfile", BuildArgs: []string{"A=1"}}
	p, err := f.plan(a)
	if err != nil || p.Dockerfile != "Dockerfile" || p.RunImage != "" {
		t.Fatalf("plan = %+v, %v; want a Dockerfile build", p, err)
	}
	// a builder, given or remembered, wins over the Dockerfile
	a.Build = &app.BuildSettings{Builder: "b/static:v1", Repository: "reg/shop"}
	f.BuildArgs = nil
	if p, err := f.plan(a); err != nil || p.Dockerfile != "" || p.Settings.Builder != "b/static:v1" {
		t.Errorf("with a remembered builder: %+v, %v", p, err)
	}
	// build args without a Dockerfile build are refused
	f.BuildArgs = []string{"A=1"}
	if _, err := f.plan(a); err == nil || !strings.Contains(err.Error(), "--build-arg") {
		t.Errorf("build args with a builder: %v", err)
	}
	// no repository: say so
	if _, err := (FromSource{App: "shop", Dockerfile: "Dockerfile"}).plan(&app.App{Name: "shop"}); err == nil || !strings.Contains(err.Error(), "--repository") {
		t.Errorf("no repository: %v", err)
	}
}

// The cluster's settings for the app's pool give the build images and the
// builder a command does not name; the environment (the command's own
// AgentImage and BuildKitImage) and the app's remembered builder win.
func TestPlanTakesTheClustersBuildSettings(t *testing.T) {
	cluster := &clustersettings.Stored{Found: true,
		Cluster: clustersettings.Settings{clustersettings.BuildAgentImage: "reg/agent:1", clustersettings.BuildkitImage: "reg/buildkit:1", clustersettings.DefaultBuilder: "reg/builder:1"},
		Pools:   map[string]clustersettings.Settings{"gpu": {clustersettings.DefaultBuilder: "reg/gpu-builder:1"}}}
	a := &app.App{Name: "shop", Namespace: "apps"}
	f := FromSource{App: "shop", Want: app.BuildSettings{Repository: "reg/shop"}, Cluster: cluster}
	p, err := f.plan(a)
	if err != nil || p.Settings.Builder != "reg/builder:1" || p.from.AgentImage != "reg/agent:1" || p.from.BuildKitImage != "reg/buildkit:1" {
		t.Fatalf("plan = %+v (%+v), %v; want the cluster's builder and images", p, p.from, err)
	}
	// the record keeps the app's own settings, not the cluster's default
	// builder: a later change of the default reaches the app
	if p.remember.Builder != "" || p.remember.Repository != "reg/shop" {
		t.Errorf("remembered %+v, want the repository without the default builder", p.remember)
	}
	a.Pool = "gpu"
	if p, err := f.plan(a); err != nil || p.Settings.Builder != "reg/gpu-builder:1" {
		t.Errorf("an app of pool gpu: %+v, %v; want the pool's builder", p, err)
	}
	f.AgentImage, f.BuildKitImage = "env/agent:2", "env/buildkit:2"
	a.Build = &app.BuildSettings{Builder: "mine:1"}
	if p, err := f.plan(a); err != nil || p.Settings.Builder != "mine:1" || p.remember.Builder != "mine:1" || p.from.AgentImage != "env/agent:2" || p.from.BuildKitImage != "env/buildkit:2" {
		t.Errorf("with the environment's images and a remembered builder: %+v (%+v), %v", p, p.from, err)
	}
	// a Dockerfile build takes no default builder
	f.Dockerfile, a.Build = "Dockerfile", nil
	if p, err := f.plan(a); err != nil || p.Dockerfile != "Dockerfile" || p.Settings.Builder != "" {
		t.Errorf("a Dockerfile build: %+v, %v; want BuildKit, no builder", p, err)
	}
}

// With the cluster's default builder, only the repository is missing, and
// the message says that alone (it said "has no builder or repository").
func TestPlanWithTheClusterBuilderAsksForTheRepositoryAlone(t *testing.T) {
	cs := &clustersettings.Stored{Cluster: clustersettings.Settings{clustersettings.DefaultBuilder: "reg/builder:v1"}, Found: true}
	_, err := FromSource{App: "shop", Cluster: cs}.plan(&app.App{Name: "shop"})
	want := "app shop has no repository yet to push the image the cluster's default builder reg/builder:v1 builds to: deploy from source once with --repository HOST/PATH, or deploy an image with --image"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// A cluster that names a default repository (and builder) makes a first
// deploy from source need neither --builder nor --repository: the app's
// image goes to PREFIX/NAMESPACE/APP (never shared by two namespaces'
// apps of one name), which the app does not remember (a later change
// of the default reaches it).
func TestPlanTakesTheClusterDefaultRepository(t *testing.T) {
	cs := &clustersettings.Stored{Cluster: clustersettings.Settings{clustersettings.DefaultBuilder: "reg/builder:v1",
		clustersettings.DefaultRepository: "registry.local:5000/apps/"}, Found: true}
	p, err := FromSource{App: "shop", Cluster: cs}.plan(&app.App{Name: "shop", Namespace: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Settings.Repository != "registry.local:5000/apps/prod/shop" || p.Settings.Builder != "reg/builder:v1" || p.remember.Repository != "" {
		t.Errorf("plan settings %+v, remember %+v", p.Settings, p.remember)
	}
	// the app's own repository wins
	p, err = FromSource{App: "shop", Cluster: cs}.plan(&app.App{Name: "shop", Build: &app.BuildSettings{Repository: "reg/own"}})
	if err != nil || p.Settings.Repository != "reg/own" {
		t.Errorf("with its own repository: %+v, %v", p, err)
	}
	if err := (clustersettings.Change{Set: map[string]string{clustersettings.DefaultRepository: "reg/Apps"}}).Validate(); err == nil {
		t.Error("a repository path with capitals was accepted")
	}
	if err := (clustersettings.Change{Set: map[string]string{clustersettings.DefaultRepository: "registry.local:5000/apps"}}).Validate(); err != nil {
		t.Error(err)
	}
}
