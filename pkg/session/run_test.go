package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/rollout"
)

// runHarness plays the cluster's part for Run on a fake clientset: it
// reports each watch on pods once the watch exists, so the test changes the
// run pod only when Run is listening.
type runHarness struct {
	t       *testing.T
	c       *fake.Clientset
	watches chan struct{}
	deps    Deps
	out     interface{ String() string }
	errOut  interface{ String() string }
}

func newRunHarness(t *testing.T, ex Executor) *runHarness {
	c := fake.NewClientset()
	seedShop(t, c, app.ConfigMap{"GREETING": "hi"})
	h := &runHarness{t: t, c: c, watches: make(chan struct{}, 8)}
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace())
		h.watches <- struct{}{}
		return true, w, err
	})
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "log" {
			return true, &runtime.Unknown{Raw: []byte("output of the run\n")}, nil
		}
		return false, nil, nil
	})
	h.deps, _, h.out, h.errOut = testDeps(c, ex)
	return h
}

func (h *runHarness) nextWatch() {
	h.t.Helper()
	select {
	case <-h.watches:
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not watch its pod")
	}
}

func (h *runHarness) runPods() []corev1.Pod {
	h.t.Helper()
	l, err := h.c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/kind=run"})
	if err != nil {
		h.t.Fatal(err)
	}
	return l.Items
}

// setState gives the run pod's container a state.
func (h *runHarness) setState(phase corev1.PodPhase, st corev1.ContainerState) {
	h.t.Helper()
	pods := h.runPods()
	if len(pods) != 1 {
		h.t.Fatalf("%d run pods, want 1", len(pods))
	}
	p := pods[0]
	p.Status.Phase = phase
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image, State: st}}
	if _, err := h.c.CoreV1().Pods(ns).UpdateStatus(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func exited(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}
}

func (h *runHarness) start(o RunOptions) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), h.deps, o)
		done <- err
	}()
	return done
}

func waitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

func TestRunReturnsTheExitCodeAndDeletesThePod(t *testing.T) {
	h := newRunHarness(t, nil)
	done := h.start(RunOptions{App: "shop", Command: []string{"rake", "db:migrate"}})
	h.nextWatch()
	p := h.runPods()[0]
	if !strings.HasPrefix(p.Name, "shop-run-") || p.Spec.Containers[0].Name != "web" || p.Spec.Containers[0].EnvFrom[0].SecretRef.Name != "tug-release-shop-v1" {
		t.Fatalf("run pod %s from the web template of v1: %+v", p.Name, p.Spec.Containers[0])
	}
	h.setState(corev1.PodRunning, running())
	h.nextWatch() // the wait for the end, after the log is read
	h.setState(corev1.PodFailed, exited(3))
	err := waitRun(t, done)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 {
		t.Fatalf("Run = %v, want exit code 3", err)
	}
	if h.out.String() != "output of the run\n" {
		t.Fatalf("output %q", h.out.String())
	}
	if pods := h.runPods(); len(pods) != 0 {
		t.Fatalf("the run pod is left: %s", pods[0].Name)
	}
	waitEvents(t, h.c, "TugRun", 1)
}

func TestRunDeletesThePodWhenInterrupted(t *testing.T) {
	h := newRunHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, h.deps, RunOptions{App: "shop", Command: []string{"sleep", "300"}, Env: app.ConfigMap{"TOKEN": "t0k3n"}})
		done <- err
	}()
	h.nextWatch()
	// the --env Secret exists, owned by the pod
	sec, err := h.c.CoreV1().Secrets(ns).Get(context.Background(), h.runPods()[0].Name+"-env", metav1.GetOptions{})
	if err != nil || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].Kind != "Pod" {
		t.Fatalf("the run's env Secret: %v %+v", err, sec)
	}
	cancel()
	if err := waitRun(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Run = %v", err)
	}
	if pods := h.runPods(); len(pods) != 0 {
		t.Fatal("the interrupted run's pod is left")
	}
	if _, err := h.c.CoreV1().Secrets(ns).Get(context.Background(), sec.Name, metav1.GetOptions{}); err == nil {
		t.Fatal("the interrupted run's env Secret is left")
	}
}

func TestRunThatCannotStartSaysWhy(t *testing.T) {
	h := newRunHarness(t, nil)
	done := h.start(RunOptions{App: "shop", Command: []string{"true"}})
	h.nextWatch()
	h.setState(corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}})
	err := waitRun(t, done)
	var f *rollout.Failure
	if !errors.As(err, &f) || f.ExitCode() != 10 || !strings.Contains(f.Error(), "img:v1") {
		t.Fatalf("an image that cannot be pulled: %v", err)
	}
	if len(h.runPods()) != 0 {
		t.Fatal("the failed run's pod is left")
	}
}

func TestRunCommandNotFound(t *testing.T) {
	h := newRunHarness(t, nil)
	done := h.start(RunOptions{App: "shop", Command: []string{"nope"}})
	h.nextWatch()
	h.setState(corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError",
		Message: `failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown`}})
	err := waitRun(t, done)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != 127 || !strings.HasSuffix(ce.Msg, `exec: "nope": executable file not found in $PATH`) {
		t.Fatalf("a command missing from the image: %v", err)
	}
}

func TestRunDetachLeavesThePod(t *testing.T) {
	h := newRunHarness(t, nil)
	done := make(chan *RunResult, 1)
	go func() {
		res, err := Run(context.Background(), h.deps, RunOptions{App: "shop", Command: []string{"report"}, Detach: true})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	h.nextWatch()
	h.setState(corev1.PodRunning, running())
	select {
	case res := <-done:
		if res == nil || len(h.runPods()) != 1 || h.runPods()[0].Name != res.Pod {
			t.Fatalf("detached run: %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run --detach did not return once the pod started")
	}
}

func TestRunAttachesWhenItReadsStdin(t *testing.T) {
	var attached Streams
	ex := &fakeExecutor{run: func(tg Target, command []string, s Streams) error {
		attached = s
		_, _ = s.Stdout.Write([]byte("attached output\n"))
		return nil
	}}
	h := newRunHarness(t, ex)
	done := h.start(RunOptions{App: "shop", Command: []string{"cat"}, Stdin: true})
	h.nextWatch()
	p := h.runPods()[0].Spec.Containers[0]
	if !p.Stdin || !p.StdinOnce || p.TTY {
		t.Fatalf("-i: container stdin %v once %v tty %v", p.Stdin, p.StdinOnce, p.TTY)
	}
	h.setState(corev1.PodRunning, running())
	h.nextWatch()
	h.setState(corev1.PodSucceeded, exited(0))
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	if attached.Stdin == nil || h.out.String() != "attached output\n" || len(ex.calls) != 0 {
		t.Fatalf("attach streams %+v, output %q", attached, h.out.String())
	}
}

func TestRunUnknownProcessIsAUsageError(t *testing.T) {
	h := newRunHarness(t, nil)
	_, err := Run(context.Background(), h.deps, RunOptions{App: "shop", Process: "db", Command: []string{"x"}})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "web, worker") {
		t.Fatalf("unknown process: %v", err)
	}
	if len(h.runPods()) != 0 {
		t.Fatal("a pod was created")
	}
}

func TestRunDeletesThePodWhenTheConnectionIsLost(t *testing.T) {
	h := newRunHarness(t, nil)
	h.c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "log" {
			return true, nil, errors.New("read tcp 10.0.0.1:443: connection reset by peer")
		}
		return false, nil, nil
	})
	done := h.start(RunOptions{App: "shop", Command: []string{"long-job"}})
	h.nextWatch()
	h.setState(corev1.PodRunning, running())
	err := waitRun(t, done)
	if err == nil || !strings.Contains(err.Error(), "connection reset") || !strings.Contains(err.Error(), "run pod shop-run-") {
		t.Fatalf("a lost connection: %v", err)
	}
	if len(h.runPods()) != 0 {
		t.Fatal("the run pod is left after a lost connection")
	}
}

// outcome's order matters: an interrupt wins over a timeout and a failed
// stream, a detach wins over an interrupt, and only a run with --timeout
// turns a deadline into RunTimeoutError.
func TestRunOutcome(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithTimeout(live, 0)
	defer cancel2()
	streamErr := errors.New("stream broke")
	for _, tc := range []struct {
		name        string
		detached    bool
		timeout     time.Duration
		ctx, runCtx context.Context
		code        int
		err         error
		wantPod     bool
		check       func(error) bool
	}{
		{name: "detached", detached: true, ctx: gone, runCtx: gone, wantPod: true, check: func(e error) bool { return e == nil }},
		{name: "interrupted", ctx: gone, runCtx: gone, err: streamErr, check: func(e error) bool { return errors.Is(e, context.Canceled) }},
		{name: "exit code", ctx: live, runCtx: live, code: 3, wantPod: true, check: func(e error) bool {
			var x *ExitError
			return errors.As(e, &x) && x.Code == 3
		}},
		{name: "success", ctx: live, runCtx: live, wantPod: true, check: func(e error) bool { return e == nil }},
		{name: "timed out", timeout: time.Second, ctx: live, runCtx: expired, err: context.DeadlineExceeded, check: func(e error) bool {
			var x *RunTimeoutError
			return errors.As(e, &x) && x.Timeout == time.Second
		}},
		{name: "deadline without --timeout", ctx: live, runCtx: expired, err: context.DeadlineExceeded, check: func(e error) bool { return e == context.DeadlineExceeded }},
		{name: "other error", timeout: time.Second, ctx: live, runCtx: live, err: streamErr, check: func(e error) bool { return e == streamErr }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{name: "shop-run-x", o: RunOptions{Timeout: tc.timeout}, detached: tc.detached, progress: progress.Nop{}}
			res, err := r.outcome(tc.ctx, tc.runCtx, tc.code, tc.err)
			if !tc.check(err) {
				t.Fatalf("error = %v", err)
			}
			if got := res != nil && res.Pod == "shop-run-x"; got != tc.wantPod {
				t.Fatalf("result = %+v, want a result: %v", res, tc.wantPod)
			}
		})
	}
}
