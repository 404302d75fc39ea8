package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
)

const ns = "dev"

// fakeClient is a clientset whose leases keep a resourceVersion that each
// write changes, and whose DELETE honours its preconditions, as the API
// server does (the plain fake does neither): Unlock relies on them.
func fakeClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var rv atomic.Int64
	stamp := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if l, ok := o.GetObject().(*coordinationv1.Lease); ok {
				l.ResourceVersion = fmt.Sprint(rv.Add(1))
			}
		}
		return false, nil, nil
	}
	c.PrependReactor("create", "leases", stamp)
	c.PrependReactor("update", "leases", stamp)
	c.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteActionImpl)
		pre := d.DeleteOptions.Preconditions
		if pre == nil || pre.ResourceVersion == nil {
			return false, nil, nil
		}
		cur, err := c.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		if cur.(*coordinationv1.Lease).ResourceVersion != *pre.ResourceVersion {
			return true, nil, apierrors.NewConflict(d.GetResource().GroupResource(), d.GetName(), errors.New("precondition failed: resourceVersion"))
		}
		return false, nil, nil
	})
	return c
}

// req asks for shop's lock for holder, failing at once when it is held.
func req(c *fake.Clientset, holder Holder) Request {
	return Request{Client: c, Namespace: ns, App: "shop", Holder: holder}
}

// quick shortens how long a lease that looks expired is watched.
var quick = Timing{ObserveFor: 100 * time.Millisecond}

func lease(holder string, renewed time.Time) *coordinationv1.Lease {
	secs := int32(LeaseDuration / time.Second)
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: Name("shop"), Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &at, RenewTime: &at},
	}
}

func getLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), Name("shop"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	return l
}

func acquire(t *testing.T, r Request) *Lock {
	t.Helper()
	l, err := Acquire(context.Background(), r)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", r.Holder, err)
	}
	return l
}

func TestAcquire(t *testing.T) {
	c := fakeClient()
	l := acquire(t, req(c, Holder{User: "alice", PID: 1, Host: "laptop"}))
	defer l.Unlock()

	got := getLease(t, c)
	if got.Name != "tug-lock-shop" || holderOf(*got.Spec.HolderIdentity) != "alice (pid 1 on laptop)" || *got.Spec.LeaseDurationSeconds != 15 {
		t.Errorf("lease = %+v", got.Spec)
	}
	if got.Labels[kube.LabelApp] != "shop" || got.Labels[kube.LabelManagedBy] != "tug" || got.Labels[kube.LabelKind] != "lock" {
		t.Errorf("labels = %v", got.Labels)
	}
	if got.Spec.RenewTime == nil || time.Since(got.Spec.RenewTime.Time) > time.Minute {
		t.Errorf("renew time = %v", got.Spec.RenewTime)
	}

	_, err := Acquire(context.Background(), req(c, Holder{User: "bob", PID: 2, Host: "ci"}))
	var locked *HeldError
	if !errors.As(err, &locked) {
		t.Fatalf("second Acquire = %v, want a HeldError", err)
	}
	if locked.Holder != "alice (pid 1 on laptop)" || locked.App != "shop" {
		t.Errorf("HeldError = %+v", locked)
	}
	if !locked.Expires.After(locked.Renewed) || locked.Expires.Sub(locked.Renewed) != LeaseDuration {
		t.Errorf("expires %v, renewed %v", locked.Expires, locked.Renewed)
	}
	for _, want := range []string{`app "shop" is being changed by alice (pid 1 on laptop)`, "wait for it to finish", "retry after"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if *getLease(t, c).Spec.HolderIdentity != *got.Spec.HolderIdentity {
		t.Error("a failed acquire changed the lease")
	}

	// Other apps have their own lock.
	other, err := Acquire(context.Background(), Request{Client: c, Namespace: ns, App: "blog", Holder: Holder{User: "bob"}})
	if err != nil {
		t.Fatalf("lock of another app: %v", err)
	}
	other.Unlock()
}

func TestAcquireTakesOverExpiredLease(t *testing.T) {
	tests := []struct {
		name string
		old  *coordinationv1.Lease
	}{
		{"expired", lease("alice (pid 1 on laptop)", time.Now().Add(-LeaseDuration-time.Second))},
		{"incomplete", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: Name("shop"), Namespace: ns}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(tt.old)
			l := acquire(t, Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "bob", PID: 2, Host: "ci"}, Timing: quick})
			defer l.Unlock()
			got := getLease(t, c)
			if holderOf(*got.Spec.HolderIdentity) != "bob (pid 2 on ci)" || time.Since(got.Spec.RenewTime.Time) > time.Minute {
				t.Errorf("lease after takeover = %+v", got.Spec)
			}
			if got.Labels[kube.LabelKind] != "lock" {
				t.Errorf("labels after takeover = %v", got.Labels)
			}
		})
	}
}

func TestAcquireRecentLeaseIsHeld(t *testing.T) {
	c := fakeClient(lease("alice", time.Now().Add(-LeaseDuration+2*time.Second)))
	_, err := Acquire(context.Background(), req(c, Holder{User: "bob"}))
	var locked *HeldError
	if !errors.As(err, &locked) || locked.Holder != "alice" {
		t.Fatalf("Acquire = %v, want held by alice", err)
	}
}

// Two tugs take over the same expired lease at once: the one that loses the
// write race reports who won.
func TestAcquireTakeoverRace(t *testing.T) {
	c := fakeClient(lease("alice", time.Now().Add(-time.Hour)))
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err := c.Tracker().Update(gvr, lease("carol", time.Now()), ns); err != nil {
			t.Errorf("tracker update: %v", err)
		}
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), Name("shop"), errors.New("changed"))
	})
	_, err := Acquire(context.Background(), Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "bob"}, Timing: quick})
	var locked *HeldError
	if !errors.As(err, &locked) || locked.Holder != "carol" {
		t.Fatalf("Acquire = %v, want held by carol", err)
	}
}

func TestUnlockDeletesLease(t *testing.T) {
	c := fakeClient()
	l := acquire(t, req(c, Holder{User: "alice"}))
	l.Unlock()
	_, err := c.CoordinationV1().Leases(ns).Get(context.Background(), Name("shop"), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("lease after Unlock: %v", err)
	}
	// the next deploy need not wait for expiry
	acquire(t, req(c, Holder{User: "bob"})).Unlock()
}

// If a tug stops renewing (API unreachable for a while) and another tug takes
// the expired lease over, the first one's Unlock must not delete the second
// one's lock.
func TestUnlockKeepsALeaseSomeoneElseHolds(t *testing.T) {
	c := fakeClient()
	l := acquire(t, req(c, Holder{User: "alice"}))
	if _, err := c.CoordinationV1().Leases(ns).Update(context.Background(), lease("bob", time.Now()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	got, err := c.CoordinationV1().Leases(ns).Get(context.Background(), Name("shop"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Fatal("Unlock deletes the lease with no check of its holder (no precondition on uid/resourceVersion): alice's Unlock removed bob's lock, so a third deploy can interleave with bob's; renew records a lost lease in l.lost but nothing ever reads it")
	}
	if err != nil || *got.Spec.HolderIdentity != "bob" {
		t.Fatalf("lease = %v, %v; want bob's, untouched", got, err)
	}
}

func TestHeldErrorMessage(t *testing.T) {
	now := time.Now()
	e := &HeldError{App: "shop", Holder: "alice", Since: now.Add(-time.Minute), Renewed: now.Add(-3 * time.Second), Expires: now.Add(12 * time.Second)}
	msg := e.Error()
	for _, want := range []string{`app "shop" is being changed by alice since `, "(lease renewed 3s ago)", "retry after " + e.Expires.Local().Format("15:04:05")} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// A holder whose clock is 20 s behind ours writes RenewTimes that look
// expired; it still renews, and a renewal seen while we watch means held.
func TestAcquireKeepsALeaseRenewedByASkewedClock(t *testing.T) {
	c := fakeClient(lease("alice", time.Now().Add(-20*time.Second)))
	go func() {
		// alice renews, with her clock still 20 s behind
		for {
			time.Sleep(50 * time.Millisecond)
			l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), Name("shop"), metav1.GetOptions{})
			if err != nil {
				return
			}
			at := metav1.NewMicroTime(time.Now().Add(-20 * time.Second))
			l.Spec.RenewTime = &at
			l.ResourceVersion = ""
			if _, err := c.CoordinationV1().Leases(ns).Update(context.Background(), l, metav1.UpdateOptions{}); err == nil {
				return
			}
		}
	}()
	_, err := Acquire(context.Background(), Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "bob"}, Timing: Timing{ObserveFor: 5 * time.Second}})
	var locked *HeldError
	if !errors.As(err, &locked) || locked.Holder != "alice" || locked.App != "shop" {
		t.Fatalf("Acquire = %v, want held by alice", err)
	}
	if holderOf(*getLease(t, c).Spec.HolderIdentity) != "alice" {
		t.Fatal("bob took over a lease alice was renewing")
	}
}

// Two CI jobs with the same user, pid and host name: the second one is
// refused, and its holder string does not let it pass for the first.
func TestAcquireIdenticalHolderStrings(t *testing.T) {
	c := fakeClient()
	first := acquire(t, req(c, Holder{User: "ci", PID: 1, Host: "runner"}))
	_, err := Acquire(context.Background(), req(c, Holder{User: "ci", PID: 1, Host: "runner"}))
	var locked *HeldError
	if !errors.As(err, &locked) {
		t.Fatalf("second Acquire with the same holder = %v, want a HeldError", err)
	}
	// A lock object for the same holder string, as a second process would
	// have one, must not delete the first one's lease.
	impostor := &Lock{client: c, namespace: ns, app: "shop", name: Name("shop"), identity: identityOf(Holder{User: "ci", PID: 1, Host: "runner"}), stop: func() {}, done: make(chan struct{})}
	close(impostor.done)
	impostor.Unlock()
	if _, err := c.CoordinationV1().Leases(ns).Get(context.Background(), Name("shop"), metav1.GetOptions{}); err != nil {
		t.Fatalf("the impostor's Unlock removed the first holder's lease: %v", err)
	}
	first.Unlock()
}

// The holder unlocks between our Create (AlreadyExists) and our Get
// (NotFound): we create it again instead of failing with a raw NotFound.
func TestAcquireLeaseDeletedBetweenCreateAndGet(t *testing.T) {
	c := fakeClient()
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	creates := 0
	c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		if creates == 1 {
			return true, nil, apierrors.NewAlreadyExists(gvr.GroupResource(), Name("shop"))
		}
		return false, nil, nil
	})
	l, err := Acquire(context.Background(), req(c, Holder{User: "bob"}))
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	defer l.Unlock()
	if creates != 2 {
		t.Errorf("creates = %d, want 2", creates)
	}
}

// Another tug overwrote our lease: the renewal notices, and the error names
// the app, not the lease.
func TestLockLostToAnotherHolder(t *testing.T) {
	c := fakeClient()
	// The API server refuses alice's stale resourceVersion once carol
	// takes the lease; the fake tracker does not check it, so say so here
	// (the reactor is in place before the renewing goroutine runs).
	var refuse atomic.Bool
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	c.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if !refuse.Load() || *l.Spec.HolderIdentity == "carol" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), Name("shop"), errors.New("changed"))
	})
	l := acquire(t, Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "alice"}, Timing: Timing{RenewEvery: 20 * time.Millisecond}})
	defer l.Unlock()
	refuse.Store(true)
	if _, err := c.CoordinationV1().Leases(ns).Update(context.Background(), lease("carol", time.Now()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select { // the renewing goroutine ends when it finds the lock lost
	case <-l.done:
	case <-time.After(10 * time.Second):
		t.Fatal("renewal never noticed the lost lock")
	}
	err := l.Lost()
	if err == nil || !strings.Contains(err.Error(), `deploy lock of app "shop"`) {
		t.Fatalf("Lost = %v", err)
	}
}

// A holder whose clock ran ahead of ours and that then died does not block
// others for as long as its clock was ahead: its renew time in our future
// is not believed, and the lease is taken over once tug has seen it
// unchanged (before: "held" for the hour its clock was ahead).
func TestAcquireDoesNotBelieveARenewTimeInTheFuture(t *testing.T) {
	c := fakeClient(lease("alice (pid 1 on laptop)", time.Now().Add(time.Hour)))
	l := acquire(t, Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "bob", PID: 2, Host: "ci"}, Timing: quick})
	defer l.Unlock()
	if got := getLease(t, c); holderOf(*got.Spec.HolderIdentity) != "bob (pid 2 on ci)" {
		t.Errorf("lease after takeover = %+v", got.Spec)
	}
}

// A live holder whose clock is ahead keeps its lock: it renews while tug
// watches.
func TestAcquireKeepsALeaseRenewedByAClockAhead(t *testing.T) {
	c := fakeClient(lease("alice", time.Now().Add(time.Hour)))
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // alice renews every 50 ms, her clock an hour ahead
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), Name("shop"), metav1.GetOptions{})
			if err != nil {
				continue
			}
			at := metav1.NewMicroTime(time.Now().Add(time.Hour))
			l.Spec.RenewTime = &at
			_, _ = c.CoordinationV1().Leases(ns).Update(context.Background(), l, metav1.UpdateOptions{})
		}
	}()
	_, err := Acquire(context.Background(), Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "bob"}, Timing: Timing{ObserveFor: 5 * time.Second}})
	close(stop)
	<-stopped
	var locked *HeldError
	if !errors.As(err, &locked) || locked.Holder != "alice" {
		t.Fatalf("Acquire = %v, want held by alice", err)
	}
}

// recorder keeps the progress lines a waiting Acquire writes.
type recorder struct{ lines chan string }

func (r recorder) Update(msg string) {
	select {
	case r.lines <- msg:
	default:
	}
}
func (recorder) Done(string) {}
func (recorder) Fail(string) {}

// With Wait, Acquire waits while another holds the lock, says for whom,
// and takes it once it is released; the lease then names the waiter.
func TestAcquireWaitsForTheHolder(t *testing.T) {
	c := fakeClient()
	// The lock is released only once the waiting Acquire watches the
	// lease: the fake's watch starts from now, not from the
	// resourceVersion it is given as the API server's does, so a release
	// just before the watch started would be missed (and Acquire would
	// look again only when the lease could have expired: a flake under
	// -race).
	watching := make(chan struct{}, 1)
	c.PrependWatchReactor("leases", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		select {
		case watching <- struct{}{}:
		default:
		}
		return true, w, err
	})
	first := acquire(t, req(c, Holder{User: "alice", PID: 1, Host: "laptop"}))
	r := req(c, Holder{User: "bob", PID: 2, Host: "ci"})
	r.Wait = time.Minute
	rec := recorder{make(chan string, 1)}
	r.Progress = rec
	got := make(chan error, 1)
	var second *Lock
	go func() {
		var err error
		second, err = Acquire(context.Background(), r)
		got <- err
	}()
	select {
	case msg := <-rec.lines:
		if !strings.Contains(msg, "waiting for alice (pid 1 on laptop) to finish changing app shop") || !strings.Contains(msg, "up to 1m0s") {
			t.Errorf("progress %q", msg)
		}
	case err := <-got:
		t.Fatalf("Acquire ended while the lock was held: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress line says Acquire waits")
	}
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting Acquire never watched the lease")
	}
	first.Unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Acquire after the lock came free: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Acquire still waits after the lock came free")
	}
	defer second.Unlock()
	if h := holderOf(*getLease(t, c).Spec.HolderIdentity); h != "bob (pid 2 on ci)" {
		t.Errorf("lease names %q", h)
	}
}

// Wait ends with a *WaitError that is also the *HeldError naming the
// holder; a cancelled wait ends with the cancellation.
func TestAcquireGivesUpWaiting(t *testing.T) {
	c := fakeClient()
	first := acquire(t, req(c, Holder{User: "alice"}))
	defer first.Unlock()
	r := req(c, Holder{User: "bob"})
	r.Wait = 200 * time.Millisecond
	_, err := Acquire(context.Background(), r)
	var waited *WaitError
	var held *HeldError
	if !errors.As(err, &waited) || !errors.As(err, &held) || held.Holder != "alice" ||
		!strings.Contains(err.Error(), `app "shop" is still being changed by alice after waiting`) {
		t.Fatalf("Acquire = %v; want a WaitError naming alice", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Wait = time.Minute
	if _, err := Acquire(ctx, r); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context = %v", err)
	}
}

// A lease that cannot be renewed for as long as it lasts is lost: whoever
// holds it now may be changing the app.
func TestLockLostWhenRenewalsFailForTheLeasesLife(t *testing.T) {
	c := fakeClient()
	var refuse atomic.Bool
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !refuse.Load() {
			return false, nil, nil
		}
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	// the lease lasts 5 s; renewals stop mattering 4 s (renewTimeout) before
	l := acquire(t, Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "alice"},
		Timing: Timing{LeaseDuration: 5 * time.Second, RenewEvery: 20 * time.Millisecond}})
	defer l.Unlock()
	refuse.Store(true)
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was never given up")
	}
	if err := l.Lost(); err == nil || !strings.Contains(err.Error(), `could not renew the deploy lock of app "shop"`) {
		t.Fatalf("Lost = %v", err)
	}
}

func TestHolderString(t *testing.T) {
	for _, tt := range []struct {
		h    Holder
		want string
	}{
		{Holder{User: "alice", PID: 1, Host: "laptop"}, "alice (pid 1 on laptop)"},
		{Holder{User: "alice"}, "alice"},
		{Holder{User: "tug node remove", PID: 7, Host: "ci", What: "moving units off node n1"}, "tug node remove (pid 7 on ci) moving units off node n1"},
	} {
		if got := tt.h.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.h, got, tt.want)
		}
	}
}

// Self names this process.
func TestSelf(t *testing.T) {
	host, _ := os.Hostname()
	want := fmt.Sprintf("alice (pid %d on %s)", os.Getpid(), host)
	if got := Self("alice"); got.String() != want || got.User != "alice" {
		t.Errorf("Self = %+v (%q), want %q", got, got, want)
	}
}

// A release between the waiter's GET of the lease and the start of its
// watch is not lost where the watch does not replay from the
// resourceVersion (the fake's, some proxies'): the waiter looks once more
// after its watch starts, instead of sleeping until the lease could have
// expired.
func TestAcquireWaitSeesAReleaseBeforeItsWatch(t *testing.T) {
	c := fakeClient()
	first := acquire(t, Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "alice"}, Timing: Timing{LeaseDuration: 5 * time.Minute}})
	defer first.Unlock()
	released := false
	c.PrependWatchReactor("leases", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if !released {
			released = true
			// the holder lets go before the watch exists, so the watch
			// never sees it (the tracker: a reactor may not call the client)
			if err := c.Tracker().Delete(a.GetResource(), a.GetNamespace(), Name("shop")); err != nil {
				t.Error(err)
			}
		}
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		return true, w, err
	})
	r := req(c, Holder{User: "bob"})
	r.Wait = 10 * time.Minute
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(context.Background(), r)
		if err == nil {
			l.Unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Acquire after the lock came free: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Acquire missed the release and waits for the lease to expire")
	}
}

// A holder that cannot renew stops writing before any taker can take its
// lock over, whatever the two clocks say (issue 34, item 3). Before, the
// holder gave up only at its first renewal after LeaseDuration-renewTimeout
// (11 s), while a taker whose clock ran 15 s ahead took over after
// ObserveFor: for seconds both wrote. Each case skews the holder's clock
// (the renew times it writes) against the taker's, makes every renewal of
// the holder's fail (its API server unreachable) and checks that the
// holder's lock ended before the taker's takeover was written.
func TestHolderStopsBeforeATakerCanTakeOver(t *testing.T) {
	timing := Timing{RenewEvery: 100 * time.Millisecond} // a taker watches 1.2 s
	for _, tt := range []struct {
		name string
		skew time.Duration // the holder's clock against the taker's
		// takes: the taker takes the lease over (its clock makes the
		// lease look expired at once); else it sees it held
		takes bool
	}{
		{"holder clock 15 s behind", -15 * time.Second, true},
		{"holder clock an hour behind", -time.Hour, true},
		{"holder clock an hour ahead", time.Hour, true}, // a renew time in the future is not believed
		{"holder clock 15 s ahead", 15 * time.Second, true},
		{"holder clock 1 s behind", -time.Second, false}, // held: its renew time is believable
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient()
			var failing atomic.Bool
			var takenAt atomic.Int64
			c.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetVerb() != "create" && a.GetVerb() != "update" {
					return false, nil, nil
				}
				l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease)
				if !strings.HasPrefix(*l.Spec.HolderIdentity, "alice") {
					takenAt.Store(time.Now().UnixNano())
					return false, nil, nil
				}
				if failing.Load() {
					return true, nil, apierrors.NewServiceUnavailable("unreachable")
				}
				at := metav1.NewMicroTime(l.Spec.RenewTime.Add(tt.skew))
				l.Spec.RenewTime, l.Spec.AcquireTime = &at, &at
				return false, nil, nil
			})
			holder := acquire(t, Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "alice"}, Timing: timing})
			defer holder.Unlock()
			failing.Store(true) // the holder's API server goes
			stoppedAt := make(chan int64, 1)
			go func() { <-holder.Done(); stoppedAt <- time.Now().UnixNano() }()

			r := Request{Client: c, Namespace: ns, App: "shop", Holder: Holder{User: "bob"}, Timing: timing, Wait: 5 * time.Second}
			taker, err := Acquire(context.Background(), r)
			if !tt.takes {
				var held *WaitError
				if !errors.As(err, &held) {
					t.Fatalf("Acquire = %v; want the lease held (its renew time is believable)", err)
				}
			} else {
				if err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				defer taker.Unlock()
			}
			var stopped int64
			select {
			case stopped = <-stoppedAt:
			case <-time.After(10 * time.Second):
				t.Fatal("the holder never stopped")
			}
			if holder.Lost() == nil {
				t.Fatal("the holder stopped without saying its lock was lost")
			}
			if tt.takes {
				taken := takenAt.Load()
				if taken == 0 || stopped >= taken {
					t.Fatalf("the holder stopped %v after the taker took over", time.Duration(stopped-taken))
				}
				// and the taker keeps what it took: its own renewals go
				// through for as long as it holds it (before the fix of
				// its deadline, a taker that had watched the lease for
				// ObserveFor lost it at its first renewal)
				select {
				case <-taker.Done():
					t.Fatalf("the taker lost the lock it took over: %v", taker.Lost())
				case <-time.After(3 * timing.observeFor()):
				}
			}
		})
	}
}
