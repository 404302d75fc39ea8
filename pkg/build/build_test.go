package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/exec"
	"tug.dev/tug/pkg/kube"
)

type noProgress struct{}

func (noProgress) Update(string) {}
func (noProgress) Done(string)   {}
func (noProgress) Fail(string)   {}

// fakeAgent reads the source from stdin, as the agent does, then prints
// its log and result.
type fakeAgent struct {
	got    int
	output string
	err    error
}

func (f *fakeAgent) Exec(context.Context, exec.Target, []string, exec.Streams) error {
	return errors.New("not used")
}

func (f *fakeAgent) Attach(_ context.Context, _ exec.Target, s exec.Streams) error {
	b, _ := io.ReadAll(s.Stdin)
	f.got = len(b)
	fmt.Fprint(s.Stdout, f.output)
	return f.err
}

// runningClient starts every pod it creates: its build container runs.
func runningClient() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "build", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		return false, nil, nil
	})
	return c
}

func opts() Options {
	return Options{App: "shop", Namespace: "apps", Pool: "blue", PullSecret: "tug-registry-shop",
		Builder: "b/builder:v1", Repository: "reg:5000/shop", Timeout: time.Minute, Source: &Source{Data: []byte("0123456789"), Files: 1}}
}

func TestBuildReturnsTheDigestAndDeletesThePod(t *testing.T) {
	c := runningClient()
	agent := &fakeAgent{output: "-----> building\ndone\n" + resultPrefix + `{"ok":true,"image":"reg:5000/shop@sha256:abc","pushedBytes":42}` + "\n"}
	var out strings.Builder
	res, err := Build(context.Background(), Deps{Client: c, Executor: agent, Out: &out, Progress: noProgress{}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	if res.Image != "reg:5000/shop@sha256:abc" || res.PushedBytes != 42 {
		t.Errorf("result %+v", res)
	}
	if agent.got != 10 {
		t.Errorf("the agent read %d bytes of source, want 10", agent.got)
	}
	if out.String() != "-----> building\ndone\n" {
		t.Errorf("log %q (the result line must not be shown)", out.String())
	}
	pods, _ := c.CoreV1().Pods("apps").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("%d build pods left", len(pods.Items))
	}
}

func TestBuildFailureIsTypedWithTheLastLines(t *testing.T) {
	c := runningClient()
	agent := &fakeAgent{output: "compiling\noops\n" + resultPrefix + `{"ok":false,"stage":"build","exitCode":3,"message":"the build step failed (exit 3)"}` + "\n"}
	_, err := Build(context.Background(), Deps{Client: c, Executor: agent, Out: io.Discard, Progress: noProgress{}}, opts())
	var be *Error
	if !errors.As(err, &be) {
		t.Fatalf("want a *build.Error, got %v", err)
	}
	if be.ExitCode() != CodeBuildFailed || be.StepCode != 3 || be.Stage != "build" || strings.Join(be.Lines, "|") != "compiling|oops" {
		t.Errorf("error %+v", be)
	}
	pods, _ := c.CoreV1().Pods("apps").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("%d build pods left", len(pods.Items))
	}
}

func TestBuildInterruptedDeletesThePod(t *testing.T) {
	c := runningClient()
	ctx, cancel := context.WithCancel(context.Background())
	agent := &fakeAgent{}
	agent.err = context.Canceled
	c.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return false, nil, nil })
	// Ctrl-C arrives while the source streams in
	exe := &cancellingAgent{fakeAgent: agent, cancel: cancel}
	_, err := Build(ctx, Deps{Client: c, Executor: exe, Out: io.Discard, Progress: noProgress{}}, opts())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	pods, _ := c.CoreV1().Pods("apps").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("%d build pods left after Ctrl-C", len(pods.Items))
	}
}

type cancellingAgent struct {
	*fakeAgent
	cancel func()
}

func (c *cancellingAgent) Attach(ctx context.Context, t exec.Target, s exec.Streams) error {
	c.cancel()
	<-ctx.Done()
	return ctx.Err()
}

func TestPodSpec(t *testing.T) {
	p := Pod(opts(), "shop-build-x")
	if p.Labels[kube.LabelKind] != KindBuild || p.Spec.NodeSelector[kube.LabelPool] != "blue" {
		t.Errorf("labels %v selector %v", p.Labels, p.Spec.NodeSelector)
	}
	if p.Spec.ActiveDeadlineSeconds == nil || *p.Spec.ActiveDeadlineSeconds != 60 || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("deadline %v restart %s", p.Spec.ActiveDeadlineSeconds, p.Spec.RestartPolicy)
	}
	ic, bc := p.Spec.InitContainers[0], p.Spec.Containers[0]
	if ic.Image != AgentImage || bc.Image != "b/builder:v1" || !bc.Stdin || !bc.StdinOnce {
		t.Errorf("init %s build %s stdin %v", ic.Image, bc.Image, bc.Stdin)
	}
	if got := strings.Join(bc.Command, " "); got != "/tug-agent/tug-build run -repository reg:5000/shop -run-image b/builder:v1 -work /tug-agent" {
		t.Errorf("command %q", got)
	}
	if bc.Resources.Limits.Memory().IsZero() || bc.Resources.Limits.Cpu().IsZero() {
		t.Error("the build container has no limits")
	}
	if len(p.Spec.ImagePullSecrets) != 1 || len(bc.Env) != 1 || bc.Env[0].Value != authDir {
		t.Errorf("pull secrets %v env %v", p.Spec.ImagePullSecrets, bc.Env)
	}
}
