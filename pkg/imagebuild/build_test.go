package imagebuild

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
)

type noProgress struct{}

func (noProgress) Update(string) {}
func (noProgress) Done(string)   {}
func (noProgress) Fail(string)   {}

// fakeAgent reads the source from stdin, as the agent does, then prints
// its log and result.
type fakeAgent struct {
	got    int
	stdin  []byte
	output string
	err    error
}

func (f *fakeAgent) Exec(context.Context, session.Target, []string, session.Streams) error {
	return errors.New("not used")
}

func (f *fakeAgent) Attach(_ context.Context, _ session.Target, s session.Streams) error {
	b, _ := io.ReadAll(s.Stdin)
	f.got, f.stdin = len(b), b
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

// TestDockerfileBuildSendsTheJobOnStdin (issue 22 item 10): the build
// arguments and target reach the agent first on its stdin, the source
// after them; the pod spec holds neither.
func TestDockerfileBuildSendsTheJobOnStdin(t *testing.T) {
	c := runningClient()
	var created *corev1.Pod
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		return false, nil, nil
	})
	agent := &fakeAgent{output: resultPrefix + `{"ok":true,"image":"reg:5000/shop@sha256:abc"}` + "\n"}
	o := opts()
	o.Builder, o.Dockerfile, o.BuildArgs, o.Target = "", "Dockerfile", []string{"TOKEN=tok-s3cret"}, "prod"
	if _, err := Build(context.Background(), Deps{Client: c, Executor: agent, Out: io.Discard, Progress: noProgress{}}, o); err != nil {
		t.Fatal(err)
	}
	job, err := protocol.ReadJob(bufio.NewReader(bytes.NewReader(agent.stdin)))
	if err != nil || !slices.Equal(job.BuildArgs, o.BuildArgs) || job.Target != "prod" {
		t.Errorf("job %+v, %v", job, err)
	}
	if !bytes.HasSuffix(agent.stdin, o.Source.Data) || len(agent.stdin) != len(protocol.EncodeJob(job))+len(o.Source.Data) {
		t.Errorf("stdin %q: want the job, then the source", agent.stdin)
	}
	b, _ := json.Marshal(created)
	if created == nil || strings.Contains(string(b), "tok-s3cret") || strings.Contains(string(b), "TOKEN") {
		t.Errorf("the pod spec holds the build argument: %s", b)
	}
	// a builder build sends the source alone, as agents before the job header read it
	agent.stdin = nil
	if _, err := Build(context.Background(), Deps{Client: c, Executor: agent, Out: io.Discard, Progress: noProgress{}}, opts()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(agent.stdin, opts().Source.Data) {
		t.Errorf("a builder build's stdin %q", agent.stdin)
	}
}

// A client that cannot reach buildkitd reports the end of buildkitd's
// own log too: that container says why it did not start.
func TestBuildkitdFailureShowsItsLog(t *testing.T) {
	c := runningClient()
	agent := &fakeAgent{output: "-----> waiting for buildkitd\n" + resultPrefix + `{"ok":false,"stage":"buildkitd","message":"buildkitd did not answer within 1m30s"}` + "\n"}
	o := opts()
	o.Builder, o.Dockerfile = "", "Dockerfile"
	_, err := Build(context.Background(), Deps{Client: c, Executor: agent, Out: io.Discard, Progress: noProgress{}}, o)
	var be *Error
	if !errors.As(err, &be) || be.Stage != "buildkitd" {
		t.Fatalf("want a buildkitd *build.Error, got %v", err)
	}
	// the fake clientset's log of every container is "fake logs"
	if got := strings.Join(be.Lines, "|"); got != "-----> waiting for buildkitd|buildkitd: fake logs" {
		t.Errorf("lines %q", got)
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

func (c *cancellingAgent) Attach(ctx context.Context, t session.Target, s session.Streams) error {
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
	// issue 22 item 8: the disk is capped, the container's and the agent folder's
	if l := bc.Resources.Limits.StorageEphemeral(); l.IsZero() || bc.Resources.Requests.StorageEphemeral().Cmp(*l) >= 0 {
		t.Errorf("ephemeral storage: limit %v request %v", l, bc.Resources.Requests.StorageEphemeral())
	}
	if v := p.Spec.Volumes[0]; v.Name != "tug-agent" || v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero() {
		t.Errorf("the agent's emptyDir has no sizeLimit: %+v", v)
	}
	if len(p.Spec.ImagePullSecrets) != 1 || len(bc.Env) != 1 || bc.Env[0].Value != authDir {
		t.Errorf("pull secrets %v env %v", p.Spec.ImagePullSecrets, bc.Env)
	}
}

// The registry credentials come after the agent's volume and mount, and a
// build without a pull secret gets none of them.
func TestPodPushAuth(t *testing.T) {
	o := opts()
	p := Pod(o, "shop-build-x")
	bc := p.Spec.Containers[0]
	if len(p.Spec.Volumes) != 2 || p.Spec.Volumes[0].Name != "tug-agent" || p.Spec.Volumes[1].Name != "tug-auth" ||
		len(bc.VolumeMounts) != 2 || bc.VolumeMounts[1].Name != "tug-auth" || !bc.VolumeMounts[1].ReadOnly ||
		len(p.Spec.InitContainers[0].VolumeMounts) != 1 {
		t.Errorf("volumes %+v, build mounts %+v, agent mounts %+v", p.Spec.Volumes, bc.VolumeMounts, p.Spec.InitContainers[0].VolumeMounts)
	}
	o.PullSecret = ""
	p = Pod(o, "shop-build-x")
	bc = p.Spec.Containers[0]
	if p.Spec.ImagePullSecrets != nil || bc.Env != nil || len(p.Spec.Volumes) != 1 || len(bc.VolumeMounts) != 1 {
		t.Errorf("without a pull secret: pull secrets %v, env %v, volumes %+v, mounts %+v", p.Spec.ImagePullSecrets, bc.Env, p.Spec.Volumes, bc.VolumeMounts)
	}
}
