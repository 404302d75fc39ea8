package logs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

const ns = "dev"

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func stamp(sec int, text string) string {
	return fmt.Sprintf("%s %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), text)
}

// pod is a started unit of proc whose log (the fake serves logs by
// container name, so each pod gets its own container) is logs.
func pod(name, proc string) *corev1.Pod {
	l := kube.AppLabels("shop")
	if proc == "run" {
		l[kube.LabelKind] = "run"
	} else {
		l[kube.LabelProcess] = proc
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c-" + name}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "c-" + name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
}

type fakeLogs struct {
	mu   sync.Mutex
	logs map[string]string // by container
	opts []*corev1.PodLogOptions
}

func newFake(t *testing.T, logs map[string]string, pods ...*corev1.Pod) (*fake.Clientset, *fakeLogs) {
	t.Helper()
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	c := fake.NewClientset(objs...)
	s := &app.Store{Client: c, Namespace: ns}
	if err := s.CreateApp(context.Background(), &app.App{Name: "shop", Namespace: ns, Release: 1, Processes: map[string]app.Process{"web": {Replicas: 2}, "worker": {Replicas: 1}}}); err != nil {
		t.Fatal(err)
	}
	fl := &fakeLogs{logs: logs}
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		o := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
		fl.mu.Lock()
		defer fl.mu.Unlock()
		fl.opts = append(fl.opts, o)
		return true, &runtime.Unknown{Raw: []byte(fl.logs[strings.TrimPrefix(o.Container, "c-")])}, nil
	})
	return c, fl
}

func show(t *testing.T, c *fake.Clientset, o Options) (string, string, error) {
	t.Helper()
	out := &bytes.Buffer{}
	ios := &testStreams{out: out}
	o.App = "shop"
	err := Show(context.Background(), Deps{Client: c, Namespace: ns, IO: ios}, o)
	return out.String(), ios.errOut.String(), err
}

func TestShowMergesUnitsInTimeOrder(t *testing.T) {
	waiting := pod("shop-web-c", "web")
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	c, _ := newFake(t, map[string]string{
		"shop-web-a":    stamp(1, "a1") + stamp(4, "a4") + stamp(5, "a5"),
		"shop-web-b":    stamp(2, "b2") + stamp(3, "b3") + stamp(6, "b6 no newline at the end"),
		"shop-worker-1": stamp(0, "w0"),
		"shop-run-x":    stamp(7, "r7"),
	}, pod("shop-web-b", "web"), pod("shop-web-a", "web"), pod("shop-worker-1", "worker"), pod("shop-run-x", "run"), waiting)
	out, errOut, err := show(t, c, Options{Tail: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"shop-worker-1 | w0",
		"shop-web-a    | a1",
		"shop-web-b    | b2",
		"shop-web-b    | b3",
		"shop-web-a    | a4",
		"shop-web-a    | a5",
		"shop-web-b    | b6 no newline at the end",
		"shop-run-x    | r7",
	}, "\n") + "\n"
	if out != want {
		t.Fatalf("merged output:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errOut, "shop-web-c    | (not started yet (ContainerCreating))") {
		t.Fatalf("a unit that has not started gets a note: %q", errOut)
	}
}

func TestShowTimestampsUnitAndProcess(t *testing.T) {
	logs := map[string]string{"shop-web-a": stamp(1, "a1"), "shop-worker-1": stamp(0, "w0"), "shop-run-x": stamp(2, "r2")}
	c, fl := newFake(t, logs, pod("shop-web-a", "web"), pod("shop-worker-1", "worker"), pod("shop-run-x", "run"))

	out, _, _ := show(t, c, Options{Tail: 10, Timestamps: true})
	if !strings.Contains(out, "shop-web-a    | 2026-05-01T10:00:01Z a1\n") {
		t.Fatalf("--timestamps: %q", out)
	}
	if o := fl.opts[0]; o.TailLines == nil || *o.TailLines != 10 || !o.Timestamps {
		t.Fatalf("log options: %+v", o)
	}
	out, _, _ = show(t, c, Options{Tail: -1, Unit: "shop-run-x"})
	if out != "r2\n" {
		t.Fatalf("--unit: no prefix, one unit (a run pod may be named): %q", out)
	}
	out, _, _ = show(t, c, Options{Tail: -1, Process: "web"})
	if out != "shop-web-a | a1\n" {
		t.Fatalf("-p web: only web units, no runs: %q", out)
	}
	if _, _, err := show(t, c, Options{Unit: "nope"}); err == nil || !strings.Contains(err.Error(), "shop-run-x, shop-web-a, shop-worker-1") {
		t.Fatalf("unknown unit: %v", err)
	}
	if _, _, err := show(t, c, Options{Process: "db"}); !inputerr.Is(err) || !strings.Contains(err.Error(), "web, worker") {
		t.Fatalf("unknown process: %v", err)
	}
	_, errOut, err := show(t, c, Options{Previous: true})
	if want := "no unit of app \"shop\" has restarted, so none has a previous log\n"; err != nil || errOut != want {
		t.Fatalf("--previous without restarts: %v %q, want the one line %q", err, errOut, want)
	}
}

// --previous prints the previous logs of the units that restarted and one
// line for all the others (it printed a line for each).
func TestShowPreviousCountsUnitsThatNeverRestarted(t *testing.T) {
	crashed := pod("shop-web-b", "web")
	crashed.Status.ContainerStatuses[0].RestartCount = 2
	crashed.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 3}
	c, _ := newFake(t, map[string]string{"shop-web-b": stamp(1, "panic: boom")},
		pod("shop-web-a", "web"), crashed, pod("shop-worker-1", "worker"), pod("shop-worker-2", "worker"))
	out, errOut, err := show(t, c, Options{Previous: true, Tail: -1})
	if err != nil || out != "shop-web-b | panic: boom\n" {
		t.Fatalf("previous logs: %v %q", err, out)
	}
	if want := "3 of the 4 units of app \"shop\" have not restarted: no previous log for them\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	// One unit asked for by name still gets its own note.
	_, errOut, _ = show(t, c, Options{Previous: true, Unit: "shop-web-a"})
	if !strings.Contains(errOut, "shop-web-a: (no previous container: it has not restarted)") {
		t.Errorf("--unit: stderr %q", errOut)
	}
}

func TestShowNoUnits(t *testing.T) {
	c, _ := newFake(t, nil)
	out, errOut, err := show(t, c, Options{})
	if err != nil || out != "" || !strings.Contains(errOut, `app "shop" has no units`) {
		t.Fatalf("no units: %v %q %q", err, out, errOut)
	}
}

func TestLogOptions(t *testing.T) {
	p := pod("shop-web-a", "web")
	o := logOptions(Options{Tail: -1, Since: 90*time.Second + time.Millisecond}, p)
	if o.TailLines != nil || o.SinceSeconds == nil || *o.SinceSeconds != 91 || o.Container != "c-shop-web-a" || !o.Timestamps {
		t.Fatalf("options %+v", o)
	}
	o = logOptions(Options{Tail: 0, SinceTime: t0, Previous: true}, p)
	if o.TailLines == nil || *o.TailLines != 0 || o.SinceTime == nil || !o.SinceTime.Time.Equal(t0) || !o.Previous {
		t.Fatalf("options %+v", o)
	}
}

func TestReadLines(t *testing.T) {
	var got []line
	err := readLines(strings.NewReader(stamp(1, "one")+"no stamp\n"+stamp(2, "last")[:len(stamp(2, "last"))-1]), "u", func(l line) bool {
		got = append(got, l)
		return true
	})
	if err != nil || len(got) != 3 {
		t.Fatalf("%v %d lines", err, len(got))
	}
	if string(got[0].text) != "one\n" || !got[0].ts.Equal(t0.Add(time.Second)) {
		t.Fatalf("first %q %v", got[0].text, got[0].ts)
	}
	if !got[1].ts.IsZero() || string(got[1].text) != "no stamp\n" {
		t.Fatalf("a line without a timestamp is kept whole: %q", got[1].text)
	}
	if string(got[2].text) != "last\n" {
		t.Fatalf("a last line gets its newline: %q", got[2].text)
	}
}

// The follower opens streams where the backlog ended (without repeating a
// line) and, through the watch, for units that start later.
func TestFollowPicksUpNewUnitsWithoutRepeats(t *testing.T) {
	logs := map[string]string{"shop-web-a": stamp(1, "a1") + stamp(2, "a2"), "shop-web-b": stamp(3, "b3") + stamp(4, "b4")}
	c, fl := newFake(t, logs, pod("shop-web-a", "web"))
	watching := make(chan struct{}, 4)
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace())
		watching <- struct{}{}
		return true, w, err
	})
	out := &syncBuffer{}
	ios := &testStreams{out: out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Show(ctx, Deps{Client: c, Namespace: ns, IO: ios}, Options{App: "shop", Follow: true, Tail: -1})
	}()
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f does not watch the app's pods")
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod("shop-web-b", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "b4") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("logs -f ended by Ctrl-C returns %v, want nil", err)
	}
	want := "shop-web-a | a1\nshop-web-a | a2\nshop-web-b | b3\nshop-web-b | b4\n"
	if out.String() != want {
		t.Fatalf("followed output:\n%s\nwant:\n%s", out, want)
	}
	// the backlog's stream, then a follow stream from the last line's second
	fl.mu.Lock()
	defer fl.mu.Unlock()
	var resumed bool
	for _, o := range fl.opts {
		if o.Follow && o.Container == "c-shop-web-a" && o.SinceTime != nil && o.SinceTime.Time.Equal(t0.Add(2*time.Second)) {
			resumed = true
		}
	}
	if !resumed {
		t.Fatalf("following did not pick up at the backlog's end: %+v", fl.opts)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testStreams writes to out and a buffer for stderr, without colour.
type testStreams struct {
	out    io.Writer
	errOut bytes.Buffer
}

func (s *testStreams) Stdout() io.Writer     { return s.out }
func (s *testStreams) Stderr() io.Writer     { return &s.errOut }
func (s *testStreams) ColorEnabled() bool    { return false }
func (s *testStreams) ErrColorEnabled() bool { return false }

// A unit that starts while the watch is broken (410 Gone: its version is
// too old) is found by listing again, and followed.
func TestFollowListsAgainAfterGone(t *testing.T) {
	logs := map[string]string{"shop-web-a": stamp(1, "a1"), "shop-web-b": stamp(3, "b3")}
	c, _ := newFake(t, logs, pod("shop-web-a", "web"))
	var lists atomic.Int32
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil
	})
	first := true
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if !first {
			return true, watch.NewRaceFreeFake(), nil
		}
		first = false
		if err := c.Tracker().Add(pod("shop-web-b", "web")); err != nil {
			t.Error(err)
		}
		w := watch.NewRaceFreeFake()
		gone := apierrors.NewResourceExpired("too old resource version")
		w.Error(&gone.ErrStatus)
		return true, w, nil
	})
	out := &syncBuffer{}
	ios := &testStreams{out: out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Show(ctx, Deps{Client: c, Namespace: ns, IO: ios}, Options{App: "shop", Follow: true, Tail: -1})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "b3") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("logs -f ended by Ctrl-C returns %v, want nil", err)
	}
	if want := "shop-web-a | a1\nshop-web-b | b3\n"; out.String() != want {
		t.Fatalf("followed output:\n%s\nwant:\n%s", out, want)
	}
	if n := lists.Load(); n != 2 {
		t.Errorf("%d pod lists, want 2 (Show's, and one after the 410)", n)
	}
}

// An app's log carries whatever its requests did (a logged path or header):
// a clipboard write, a retitle, a screen clear, C1 CSI, NUL and BEL reach
// the screen as visible text, never as escapes; colour goes where colour is
// off.
func TestShowMakesLinesSafeForATerminal(t *testing.T) {
	waiting := pod("shop-web-b", "web")
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "\x1b]0;pwned\x07Creating"}}
	c, _ := newFake(t, map[string]string{
		"shop-web-a": stamp(1, "GET /\x1b]52;c;aGk=\x07 \x1b]0;pwned\x07\x1b[2J\x1b[1;1H\u009b2J\x00\x07 \x1b[31m500\x1b[0m\r"),
	}, pod("shop-web-a", "web"), waiting)
	out, errOut, err := show(t, c, Options{Tail: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := "shop-web-a | GET /^[]52;c;aGk=^G ^[]0;pwned^G^[[2J^[[1;1H\\u009b2J^@^G 500\n"
	if out != want {
		t.Fatalf("log line = %q, want %q", out, want)
	}
	if !strings.Contains(errOut, "(not started yet (^[]0;pwned^GCreating))") || strings.Contains(errOut, "\x1b") {
		t.Fatalf("a note quoting the cluster's reason = %q", errOut)
	}
}

// TestShowSaysWhatItCouldNotShow pins Show's answers where no line comes:
// an app that is not there, a process of an app that has none, units
// whose logs all fail (one that works is enough), and -f with no unit yet.
func TestShowSaysWhatItCouldNotShow(t *testing.T) {
	c, _ := newFake(t, nil)
	err := Show(context.Background(), Deps{Client: c, Namespace: ns, IO: &testStreams{out: io.Discard}}, Options{App: "nope"})
	if err == nil || err.Error() != `app "nope" not found in namespace "dev"; see 'tug app list'` {
		t.Errorf("a missing app: %v", err)
	}
	s := &app.Store{Client: c, Namespace: ns}
	if err := s.CreateApp(context.Background(), &app.App{Name: "empty", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	err = Show(context.Background(), Deps{Client: c, Namespace: ns, IO: &testStreams{out: io.Discard}}, Options{App: "empty", Process: "web"})
	if !inputerr.Is(err) || err.Error() != `unknown process "web": app "empty" has no processes yet` {
		t.Errorf("a process of an app with none: %v", err)
	}

	c, _ = newFake(t, map[string]string{"shop-web-b": stamp(1, "b1")}, pod("shop-web-a", "web"), pod("shop-web-b", "web"))
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "log" && a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions).Container == "c-shop-web-a" {
			return true, nil, apierrors.NewInternalError(fmt.Errorf("kubelet down"))
		}
		return false, nil, nil
	})
	out, errOut, err := show(t, c, Options{Tail: -1})
	if err != nil || out != "shop-web-b | b1\n" || !strings.Contains(errOut, "shop-web-a") {
		t.Errorf("one unit of two unreadable: %v %q %q", err, out, errOut)
	}
	_, errOut, err = show(t, c, Options{Tail: -1, Process: "web", Unit: "shop-web-a"})
	if err == nil || err.Error() != `could not read the logs of any unit of app "shop"` || !strings.Contains(errOut, "kubelet down") {
		t.Errorf("every unit unreadable: %v %q", err, errOut)
	}

	c, _ = newFake(t, nil)
	watching := make(chan struct{}, 1)
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		watching <- struct{}{}
		return true, watch.NewRaceFreeFake(), nil
	})
	ios := &testStreams{out: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Show(ctx, Deps{Client: c, Namespace: ns, IO: ios}, Options{App: "shop", Follow: true}) }()
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f does not watch the app's pods")
	}
	cancel()
	if err := <-done; err != nil || ios.errOut.String() != "app \"shop\" has no units; waiting for units to start (Ctrl-C to stop)\n" {
		t.Errorf("-f with no units: %v %q", err, ios.errOut.String())
	}
}
