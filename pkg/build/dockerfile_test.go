package build

import (
	"context"
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
	p := Pod(dockerfileOpts(), "shop-build-abcde")
	c := p.Spec.Containers[0]
	if c.Image != "reg:5000/tug/buildkit:v1" {
		t.Errorf("image %s, want the BuildKit image", c.Image)
	}
	want := []string{"/tug-agent/tug-build", "dockerfile", "-repository", "reg:5000/shop", "-dockerfile", "docker/Dockerfile",
		"-app", "/tug-agent/app", "-build-arg", "VERSION=1.2", "-build-arg", "EMPTY=", "-target", "prod"}
	if !slices.Equal(c.Command, want) {
		t.Errorf("command\n %q\nwant\n %q", c.Command, want)
	}
	sc := c.SecurityContext
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
	// the same pod otherwise: agent, credentials, deadline, stdin
	if p.Spec.InitContainers[0].Image != AgentImage || !c.Stdin || !c.StdinOnce || p.Spec.ActiveDeadlineSeconds == nil {
		t.Errorf("the Dockerfile pod lost the build pod's basics: %+v", p.Spec)
	}
	var docker bool
	for _, e := range c.Env {
		docker = docker || e.Name == "DOCKER_CONFIG" && e.Value == authDir
	}
	if !docker {
		t.Errorf("the push credentials are not mounted as a docker config: %+v", c.Env)
	}
	// a builder build keeps the image's defaults
	if Pod(opts(), "x").Spec.Containers[0].SecurityContext != nil {
		t.Error("a builder build got a security context")
	}
	if Pod(Options{Dockerfile: "Dockerfile", Repository: "r/x"}, "x").Spec.Containers[0].Image != BuildKitImage {
		t.Error("no BuildKit image by default")
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
