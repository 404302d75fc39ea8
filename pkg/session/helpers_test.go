package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

const ns = "dev"

// seedShop stores app "shop" with release v1 (web and worker) deployed.
func seedShop(t *testing.T, c *fake.Clientset, cfg app.ConfigMap) *app.App {
	t.Helper()
	s := &app.Store{Client: c, Namespace: ns}
	a := &app.App{Name: "shop", Namespace: ns, Processes: map[string]app.Process{"web": {Replicas: 2}, "worker": {Replicas: 1}}, Release: 1, LastRelease: 1}
	if err := s.CreateApp(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	r := &app.Release{App: "shop", Version: 1, Image: "img:v1", Processes: map[string]string{"web": "serve", "worker": "work"}, Status: app.StatusDeployed}
	if err := s.CreateRelease(context.Background(), r, cfg); err != nil {
		t.Fatal(err)
	}
	return a
}

// unitPod is a pod of process proc, running, ready or not.
func unitPod(name, proc string, ready bool) *corev1.Pod {
	l := kube.AppLabels("shop")
	l[kube.LabelProcess] = proc
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l, CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: proc}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: proc, Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

func pending(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	return p
}

// fakeExecutor answers sessions with a script per pod.
type fakeExecutor struct {
	mu    sync.Mutex
	calls []string // pod names, in call order
	run   func(t Target, command []string, s Streams) error
}

func (f *fakeExecutor) Exec(_ context.Context, t Target, command []string, s Streams) error {
	f.mu.Lock()
	f.calls = append(f.calls, t.Pod)
	f.mu.Unlock()
	return f.run(t, command, s)
}

func (f *fakeExecutor) Attach(_ context.Context, t Target, s Streams) error {
	return f.run(t, nil, s)
}

func testDeps(c *fake.Clientset, ex Executor) (Deps, *testIO, interface{ String() string }, interface{ String() string }) {
	ios := &testIO{}
	return Deps{Client: c, Namespace: ns, Executor: ex, IO: ios, User: func() string { return "alice" }, CommandName: "tug"}, ios, &ios.out, &ios.errOut
}

// testIO is a terminal made of buffers, without colour; stdin and stdout are
// terminals only when a test says so.
type testIO struct {
	in, out, errOut     bytes.Buffer
	stdinTTY, stdoutTTY bool
	term                string
}

func (t *testIO) Stdin() io.Reader      { return &t.in }
func (t *testIO) Stdout() io.Writer     { return &t.out }
func (t *testIO) Stderr() io.Writer     { return &t.errOut }
func (t *testIO) IsStdinTTY() bool      { return t.stdinTTY }
func (t *testIO) CanPrompt() bool       { return t.stdinTTY && t.stdoutTTY }
func (t *testIO) ColorEnabled() bool    { return false }
func (t *testIO) ErrColorEnabled() bool { return false }
func (t *testIO) TermType() string      { return t.term }

// fakePrompter answers Select questions from a script; running out of
// answers, or an answer that is not an option, is an error.
type fakePrompter struct {
	answers []string
	asked   []string
}

func (f *fakePrompter) Select(_ context.Context, question string, options []string, _ string) (string, error) {
	f.asked = append(f.asked, question)
	if len(f.answers) == 0 {
		return "", fmt.Errorf("fake prompter: unexpected select %q", question)
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	if !slices.Contains(options, a) {
		return "", fmt.Errorf("fake prompter: answer %q is not among the options %q of %q", a, options, question)
	}
	return a, nil
}

func metaList() metav1.ListOptions { return metav1.ListOptions{} }
