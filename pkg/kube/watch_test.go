package kube

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const testNS = "apps"

func testPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, ResourceVersion: rv, Labels: map[string]string{"app": "shop"}}}
}

// watchScript plays the API server for Until: each WATCH gets the next
// answer of the script (then a watch that never says anything), each LIST
// the next error of lists (then the fake's objects).
type watchScript struct {
	t       *testing.T
	c       *fake.Clientset
	watches []func() (watch.Interface, error)
	lists   []error

	watchOpts []metav1.ListOptions // of each WATCH, in order
	nLists    int
	slept     []time.Duration
}

func newWatchScript(t *testing.T, objs ...runtime.Object) *watchScript {
	s := &watchScript{t: t, c: fake.NewClientset(objs...)}
	s.c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		s.watchOpts = append(s.watchOpts, a.(k8stesting.WatchActionImpl).ListOptions)
		if len(s.watches) == 0 {
			return true, watch.NewRaceFreeFake(), nil
		}
		next := s.watches[0]
		s.watches = s.watches[1:]
		w, err := next()
		return true, w, err
	})
	s.c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		s.nLists++
		if len(s.lists) == 0 {
			return false, nil, nil
		}
		err := s.lists[0]
		s.lists = s.lists[1:]
		return true, nil, err
	})
	return s
}

// events is a watch that sends evs and then, with closed, ends.
func events(closed bool, evs ...watch.Event) func() (watch.Interface, error) {
	return func() (watch.Interface, error) {
		w := watch.NewRaceFreeFake()
		for _, ev := range evs {
			w.Action(ev.Type, ev.Object)
		}
		if closed {
			w.Stop()
		}
		return w, nil
	}
}

func fails(err error) func() (watch.Interface, error) {
	return func() (watch.Interface, error) { return nil, err }
}

func (s *watchScript) lw() ListWatch[*corev1.Pod] {
	lw := Pods(s.c, testNS, metav1.ListOptions{LabelSelector: "app=shop"})
	lw.sleep = func(ctx context.Context, d time.Duration) error {
		s.slept = append(s.slept, d)
		return ctx.Err()
	}
	return lw
}

// until runs Until (bounded by a deadline, in case it never ends) until the
// pods have the given names, and returns its error.
func (s *watchScript) until(names ...string) error {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Until(ctx, s.lw(), func(pods map[string]*corev1.Pod) (bool, error) {
		return slices.Equal(podNames(pods), names), nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		s.t.Fatalf("Until never saw pods %v", names)
	}
	return err
}

func podNames(pods map[string]*corev1.Pod) []string {
	var out []string
	for k, p := range pods {
		if k != testNS+"/"+p.Name {
			panic("key " + k + " for pod " + p.Name)
		}
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func TestUntilDoneAfterListNeedsNoWatch(t *testing.T) {
	s := newWatchScript(t, testPod("a", ""))
	if err := s.until("a"); err != nil {
		t.Fatal(err)
	}
	if s.nLists != 1 || len(s.watchOpts) != 0 {
		t.Errorf("%d lists and %d watches, want 1 and 0", s.nLists, len(s.watchOpts))
	}
}

func TestUntilResumesAfterClose(t *testing.T) {
	s := newWatchScript(t, testPod("a", ""))
	s.watches = []func() (watch.Interface, error){
		events(true, watch.Event{Type: watch.Added, Object: testPod("b", "7")},
			watch.Event{Type: watch.Bookmark, Object: testPod("", "9")}),
		events(false, watch.Event{Type: watch.Added, Object: testPod("c", "10")}),
	}
	if err := s.until("a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if s.nLists != 1 || len(s.watchOpts) != 2 {
		t.Fatalf("%d lists and %d watches, want 1 and 2 (resumed, not listed again)", s.nLists, len(s.watchOpts))
	}
	first, second := s.watchOpts[0], s.watchOpts[1]
	if first.ResourceVersion == "" || !first.AllowWatchBookmarks || first.LabelSelector != "app=shop" {
		t.Errorf("first watch %+v: want the list's resourceVersion, bookmarks and the selector", first)
	}
	if second.ResourceVersion != "9" {
		t.Errorf("second watch from resourceVersion %q, want 9 (the bookmark's)", second.ResourceVersion)
	}
	if len(s.slept) != 0 {
		t.Errorf("paused %v before resuming a watch that had events", s.slept)
	}
}

func TestUntilPausesWhenAWatchClosesAtOnce(t *testing.T) {
	s := newWatchScript(t)
	s.watches = []func() (watch.Interface, error){
		events(true),
		events(false, watch.Event{Type: watch.Added, Object: testPod("a", "3")}),
	}
	if err := s.until("a"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.slept, []time.Duration{retryFirst}) {
		t.Errorf("paused %v, want one short pause", s.slept)
	}
}

func TestUntilRelistsAfterGone(t *testing.T) {
	s := newWatchScript(t, testPod("a", ""))
	tooOld := apierrors.NewResourceExpired("too old resource version: 1 (5)")
	s.watches = []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			// b appears while nobody watches: only a new LIST finds it
			if err := s.c.Tracker().Add(testPod("b", "")); err != nil {
				t.Fatal(err)
			}
			return events(true, watch.Event{Type: watch.Error, Object: &tooOld.ErrStatus})()
		},
	}
	if err := s.until("a", "b"); err != nil {
		t.Fatal(err)
	}
	if s.nLists != 2 {
		t.Errorf("%d lists, want 2", s.nLists)
	}
	if len(s.slept) != 0 {
		t.Errorf("paused %v before listing again after 410", s.slept)
	}
}

func TestUntilRelistsAfterGoneAtWatchStart(t *testing.T) {
	s := newWatchScript(t)
	s.watches = []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			if err := s.c.Tracker().Add(testPod("b", "")); err != nil {
				t.Fatal(err)
			}
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone, Message: "too old resource version"}}
		},
	}
	if err := s.until("b"); err != nil {
		t.Fatal(err)
	}
	if s.nLists != 2 {
		t.Errorf("%d lists, want 2", s.nLists)
	}
}

func TestUntilRelistsAfterServerErrorEvent(t *testing.T) {
	s := newWatchScript(t)
	internal := apierrors.NewInternalError(errors.New("etcd hiccup"))
	s.watches = []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			if err := s.c.Tracker().Add(testPod("b", "")); err != nil {
				t.Fatal(err)
			}
			return events(false, watch.Event{Type: watch.Error, Object: &internal.ErrStatus})()
		},
	}
	if err := s.until("b"); err != nil {
		t.Fatal(err)
	}
	if s.nLists != 2 || len(s.slept) != 1 {
		t.Errorf("%d lists and pauses %v, want 2 lists after one pause", s.nLists, s.slept)
	}
}

func TestUntilRetriesTooManyRequestsAtWatchStart(t *testing.T) {
	s := newWatchScript(t)
	s.watches = []func() (watch.Interface, error){
		fails(apierrors.NewTooManyRequests("slow down", 3)),
		fails(apierrors.NewTooManyRequests("slow down", 0)),
		events(false, watch.Event{Type: watch.Added, Object: testPod("a", "3")}),
	}
	if err := s.until("a"); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{3 * time.Second, 2 * retryFirst}; !slices.Equal(s.slept, want) {
		t.Errorf("paused %v, want %v (Retry-After, then the backoff's next step)", s.slept, want)
	}
	if len(s.watchOpts) != 3 || s.watchOpts[2].ResourceVersion != s.watchOpts[0].ResourceVersion || s.nLists != 1 {
		t.Errorf("watches %+v after %d lists: want the same resourceVersion again, no new list", s.watchOpts, s.nLists)
	}
}

func TestUntilRetriesUnavailableAtList(t *testing.T) {
	s := newWatchScript(t, testPod("a", ""))
	s.lists = []error{apierrors.NewServiceUnavailable("apiserver is shutting down"), &resetConn{}}
	if err := s.until("a"); err != nil {
		t.Fatal(err)
	}
	if s.nLists != 3 || len(s.slept) != 2 {
		t.Errorf("%d lists, pauses %v: want 3 lists after 2 pauses", s.nLists, s.slept)
	}
}

// resetConn is a connection the server reset.
type resetConn struct{}

func (*resetConn) Error() string { return "read tcp 10.0.0.1:443: connection reset by peer" }

func TestUntilReturnsWhatWaitingWillNotFix(t *testing.T) {
	podsGR := schema.GroupResource{Resource: "pods"}
	forbidden := apierrors.NewForbidden(podsGR, "", errors.New("no"))
	for name, setup := range map[string]func(*watchScript){
		"403 at list": func(s *watchScript) { s.lists = []error{forbidden} },
		"404 namespace at list": func(s *watchScript) {
			s.lists = []error{apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, testNS)}
		},
		"403 at watch": func(s *watchScript) { s.watches = append(s.watches, fails(forbidden)) },
		"403 event": func(s *watchScript) {
			s.watches = append(s.watches, events(false, watch.Event{Type: watch.Error, Object: &forbidden.ErrStatus}))
		},
		"other error": func(s *watchScript) { s.lists = []error{errors.New("boom")} },
	} {
		t.Run(name, func(t *testing.T) {
			s := newWatchScript(t)
			setup(s)
			err := s.until("never")
			if err == nil || apierrors.IsServiceUnavailable(err) {
				t.Fatalf("Until = %v, want the error", err)
			}
			if len(s.slept) != 0 {
				t.Errorf("paused %v before giving up", s.slept)
			}
		})
	}
}

func TestUntilReturnsCondError(t *testing.T) {
	s := newWatchScript(t, testPod("a", ""))
	boom := errors.New("boom")
	err := Until(testCtx(t), s.lw(), func(map[string]*corev1.Pod) (bool, error) { return false, boom })
	if err != boom {
		t.Fatalf("Until = %v, want the condition's error as is", err)
	}
}

func TestUntilEndsWithContext(t *testing.T) {
	t.Run("while watching", func(t *testing.T) {
		s := newWatchScript(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := Until(ctx, s.lw(), func(map[string]*corev1.Pod) (bool, error) { return false, nil })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Until = %v, want the deadline", err)
		}
	})
	t.Run("while pausing for a server that stays unavailable", func(t *testing.T) {
		s := newWatchScript(t)
		lw := Pods(s.c, testNS, metav1.ListOptions{}) // real pauses
		s.c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("down")
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := Until(ctx, lw, func(map[string]*corev1.Pod) (bool, error) { return false, nil })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Until = %v, want the deadline", err)
		}
	})
}

func TestUntilDeletedEventsRemoveObjects(t *testing.T) {
	s := newWatchScript(t, testPod("a", ""), testPod("b", ""))
	s.watches = []func() (watch.Interface, error){
		events(false,
			watch.Event{Type: watch.Modified, Object: testPod("a", "5")},
			watch.Event{Type: watch.Deleted, Object: testPod("a", "6")}),
	}
	var seen [][]string
	err := Until(testCtx(t), s.lw(), func(pods map[string]*corev1.Pod) (bool, error) {
		seen = append(seen, podNames(pods))
		return len(seen) == 3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b"}, {"a", "b"}, {"b"}}
	if !slices.EqualFunc(seen, want, slices.Equal) {
		t.Errorf("condition saw %v, want %v", seen, want)
	}
}

func TestUntilResyncCallsConditionWithoutEvents(t *testing.T) {
	s := newWatchScript(t, testPod("a", ""))
	lw := s.lw()
	lw.Resync = time.Millisecond
	calls := 0
	err := Until(testCtx(t), lw, func(pods map[string]*corev1.Pod) (bool, error) {
		calls++
		return calls == 3 && len(pods) == 1, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Until = %v after %d calls", err, calls)
	}
}

func TestRetryable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewTooManyRequests("x", 1), true},
		{apierrors.NewServiceUnavailable("x"), true},
		{apierrors.NewInternalError(errors.New("x")), true},
		{apierrors.NewTimeoutError("x", 1), true},
		{apierrors.NewGenericServerResponse(502, "get", gr, "", "bad gateway", 0, true), true},
		{&resetConn{}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{apierrors.NewForbidden(gr, "", errors.New("x")), false},
		{apierrors.NewNotFound(gr, "x"), false},
		{apierrors.NewUnauthorized("x"), false},
		{context.Canceled, false},
		{errors.New("boom"), false},
	} {
		if got := retryable(tt.err); got != tt.want {
			t.Errorf("retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if !strings.Contains((&resetConn{}).Error(), "reset") {
		t.Fatal("resetConn must read as a reset connection")
	}
}

// testCtx ends the test's Until calls should they never end on their own.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// EndpointSlices lists the slices its options select, keyed as Until keys
// every kind.
func TestEndpointSlices(t *testing.T) {
	mine := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "shop-1", Namespace: testNS, Labels: map[string]string{discoveryv1.LabelServiceName: "shop"}}}
	other := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "blog-1", Namespace: testNS, Labels: map[string]string{discoveryv1.LabelServiceName: "blog"}}}
	lw := EndpointSlices(fake.NewClientset(mine, other), testNS, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=shop"})
	var got map[string]*discoveryv1.EndpointSlice
	err := Until(context.Background(), lw, func(m map[string]*discoveryv1.EndpointSlice) (bool, error) {
		got = m
		return true, nil
	})
	if err != nil || len(got) != 1 || got[testNS+"/shop-1"] == nil {
		t.Errorf("EndpointSlices listed %v, %v; want only shop-1", got, err)
	}
}

// UntilChange says what changed: the list, each event's object and type,
// and a list again after 410, each with the whole set beside it.
func TestUntilChange(t *testing.T) {
	s := newWatchScript(t, testPod("a", "1"))
	tooOld := apierrors.NewResourceExpired("too old resource version: 1 (5)")
	s.watches = []func() (watch.Interface, error){
		events(false,
			watch.Event{Type: watch.Added, Object: testPod("b", "2")},
			watch.Event{Type: watch.Modified, Object: testPod("a", "3")},
			watch.Event{Type: watch.Deleted, Object: testPod("b", "4")},
			watch.Event{Type: watch.Error, Object: &tooOld.ErrStatus},
		),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	err := UntilChange(ctx, s.lw(), func(c Change[*corev1.Pod]) (bool, error) {
		step := strings.Join(podNames(c.Objects), ",")
		switch {
		case c.Listed:
			if c.Object != nil {
				t.Errorf("a list names object %s", c.Object.Name)
			}
			step = "listed " + step
		default:
			step = string(c.Type) + " " + c.Object.Name + "@" + c.Object.ResourceVersion + ": " + step
		}
		got = append(got, step)
		return len(got) == 5, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"listed a", "ADDED b@2: a,b", "MODIFIED a@3: a,b", "DELETED b@4: a", "listed a"}
	if !slices.Equal(got, want) {
		t.Errorf("changes\n %q\nwant\n %q", got, want)
	}
}

// Retry tries again through errors waiting may fix and stops at the first
// that it will not.
func TestRetry(t *testing.T) {
	calls := 0
	err := Retry(testCtx(t), func(context.Context) error {
		calls++
		if calls < 3 {
			return apierrors.NewServiceUnavailable("restarting")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Retry = %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no"))
	err = Retry(testCtx(t), func(context.Context) error { calls++; return forbidden })
	if err != forbidden || calls != 1 {
		t.Fatalf("Retry = %v after %d calls, want the forbidden error after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = Retry(ctx, func(context.Context) error { return apierrors.NewServiceUnavailable("down") })
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("Retry after ctx ended = %v, want the last error", err)
	}
}

// An Error event ends the watch only when listing again cannot help.
func TestEventError(t *testing.T) {
	status := func(code int32, reason metav1.StatusReason) runtime.Object {
		return &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: string(reason)}
	}
	for _, tt := range []struct {
		name   string
		obj    runtime.Object
		relist bool
	}{
		{"too old a version", status(410, metav1.StatusReasonGone), true},
		{"expired", status(410, metav1.StatusReasonExpired), true},
		{"server trouble", status(500, metav1.StatusReasonInternalError), true},
		{"not a Status", &corev1.Pod{}, true},
		{"forbidden", status(403, metav1.StatusReasonForbidden), false},
	} {
		relist, fatal := eventError(tt.obj)
		if (relist != nil) != tt.relist || (fatal != nil) == tt.relist {
			t.Errorf("%s: relist %v, fatal %v; want relist: %v", tt.name, relist, fatal, tt.relist)
		}
	}
}

// After a watch ends, only a server in trouble or a watch closed at once
// earns a pause; a watch that said something resets the backoff.
func TestAfterWatch(t *testing.T) {
	var slept []time.Duration
	b := &backoff{sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
	gone := apierrors.NewResourceExpired("too old")
	if relist, err := b.afterWatch(context.Background(), followed{relist: gone, events: 1}); !relist || err != nil || len(slept) != 0 {
		t.Fatalf("gone: relist %v, err %v, pauses %v; want a relist at once", relist, err, slept)
	}
	if relist, err := b.afterWatch(context.Background(), followed{relist: apierrors.NewInternalError(errors.New("x")), events: 1}); !relist || err != nil || len(slept) != 1 {
		t.Fatalf("server error: relist %v, err %v, pauses %v; want a relist after a pause", relist, err, slept)
	}
	if relist, err := b.afterWatch(context.Background(), followed{}); relist || err != nil || len(slept) != 2 || slept[1] <= slept[0] {
		t.Fatalf("closed at once: relist %v, err %v, pauses %v; want a longer pause, no relist", relist, err, slept)
	}
	if relist, err := b.afterWatch(context.Background(), followed{events: 3}); relist || err != nil || b.n != 0 {
		t.Fatalf("events seen: relist %v, err %v, backoff %d; want a reset", relist, err, b.n)
	}
}
