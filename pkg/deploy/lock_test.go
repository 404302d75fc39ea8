package deploy

import (
	"context"
	"errors"
	"strings"
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

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

func lease(holder string, renewed time.Time) *coordinationv1.Lease {
	secs := int32(LeaseDuration / time.Second)
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LockName("shop"), Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &at, RenewTime: &at},
	}
}

func getLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), LockName("shop"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	return l
}

func acquire(t *testing.T, c *fake.Clientset, holder string) *Lock {
	t.Helper()
	l, err := AcquireLock(context.Background(), c, ns, "shop", holder)
	if err != nil {
		t.Fatalf("AcquireLock(%s): %v", holder, err)
	}
	return l
}

func TestAcquireLock(t *testing.T) {
	c := fakeClient()
	l := acquire(t, c, "alice (pid 1 on laptop)")
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

	_, err := AcquireLock(context.Background(), c, ns, "shop", "bob (pid 2 on ci)")
	var locked *LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("second AcquireLock = %v, want a LockedError", err)
	}
	if locked.Holder != "alice (pid 1 on laptop)" || locked.App != "shop" {
		t.Errorf("LockedError = %+v", locked)
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
	other, err := AcquireLock(context.Background(), c, ns, "blog", "bob")
	if err != nil {
		t.Fatalf("lock of another app: %v", err)
	}
	other.Unlock()
}

// quickObservation shortens how long a lease that looks expired is watched.
func quickObservation(t *testing.T) {
	old := observeFor
	observeFor = 100 * time.Millisecond
	t.Cleanup(func() { observeFor = old })
}

func TestAcquireLockTakesOverExpiredLease(t *testing.T) {
	quickObservation(t)
	tests := []struct {
		name string
		old  *coordinationv1.Lease
	}{
		{"expired", lease("alice (pid 1 on laptop)", time.Now().Add(-LeaseDuration-time.Second))},
		{"incomplete", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LockName("shop"), Namespace: ns}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(tt.old)
			l := acquire(t, c, "bob (pid 2 on ci)")
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

func TestAcquireLockRecentLeaseIsHeld(t *testing.T) {
	c := fakeClient(lease("alice", time.Now().Add(-LeaseDuration+2*time.Second)))
	_, err := AcquireLock(context.Background(), c, ns, "shop", "bob")
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder != "alice" {
		t.Fatalf("AcquireLock = %v, want held by alice", err)
	}
}

// Two tugs take over the same expired lease at once: the one that loses the
// write race reports who won.
func TestAcquireLockTakeoverRace(t *testing.T) {
	quickObservation(t)
	c := fakeClient(lease("alice", time.Now().Add(-time.Hour)))
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err := c.Tracker().Update(gvr, lease("carol", time.Now()), ns); err != nil {
			t.Errorf("tracker update: %v", err)
		}
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), LockName("shop"), errors.New("changed"))
	})
	_, err := AcquireLock(context.Background(), c, ns, "shop", "bob")
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder != "carol" {
		t.Fatalf("AcquireLock = %v, want held by carol", err)
	}
}

func TestUnlockDeletesLease(t *testing.T) {
	c := fakeClient()
	l := acquire(t, c, "alice")
	l.Unlock()
	_, err := c.CoordinationV1().Leases(ns).Get(context.Background(), LockName("shop"), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("lease after Unlock: %v", err)
	}
	// the next deploy need not wait for expiry
	acquire(t, c, "bob").Unlock()
}

// If a tug stops renewing (API unreachable for a while) and another tug takes
// the expired lease over, the first one's Unlock must not delete the second
// one's lock.
func TestUnlockKeepsALeaseSomeoneElseHolds(t *testing.T) {
	c := fakeClient()
	l := acquire(t, c, "alice")
	if _, err := c.CoordinationV1().Leases(ns).Update(context.Background(), lease("bob", time.Now()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	got, err := c.CoordinationV1().Leases(ns).Get(context.Background(), LockName("shop"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Fatal("Unlock deletes the lease with no check of its holder (no precondition on uid/resourceVersion): alice's Unlock removed bob's lock, so a third deploy can interleave with bob's; renew records a lost lease in l.lost but nothing ever reads it")
	}
	if err != nil || *got.Spec.HolderIdentity != "bob" {
		t.Fatalf("lease = %v, %v; want bob's, untouched", got, err)
	}
}

func TestLockedErrorMessage(t *testing.T) {
	now := time.Now()
	e := &LockedError{App: "shop", Holder: "alice", Since: now.Add(-time.Minute), Renewed: now.Add(-3 * time.Second), Expires: now.Add(12 * time.Second)}
	msg := e.Error()
	for _, want := range []string{`app "shop" is being changed by alice since `, "(lease renewed 3s ago)", "retry after " + e.Expires.Local().Format("15:04:05")} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// A holder whose clock is 20 s behind ours writes RenewTimes that look
// expired; it still renews, and a renewal seen while we watch means held.
func TestAcquireLockKeepsALeaseRenewedByASkewedClock(t *testing.T) {
	old := observeFor
	observeFor = 5 * time.Second
	defer func() { observeFor = old }()
	c := fakeClient(lease("alice", time.Now().Add(-20*time.Second)))
	go func() {
		// alice renews, with her clock still 20 s behind
		for {
			time.Sleep(50 * time.Millisecond)
			l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), LockName("shop"), metav1.GetOptions{})
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
	_, err := AcquireLock(context.Background(), c, ns, "shop", "bob")
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder != "alice" || locked.App != "shop" {
		t.Fatalf("AcquireLock = %v, want held by alice", err)
	}
	if holderOf(*getLease(t, c).Spec.HolderIdentity) != "alice" {
		t.Fatal("bob took over a lease alice was renewing")
	}
}

// Two CI jobs with the same user, pid and host name: the second one is
// refused, and its holder string does not let it pass for the first.
func TestAcquireLockIdenticalHolderStrings(t *testing.T) {
	c := fakeClient()
	first := acquire(t, c, "ci (pid 1 on runner)")
	_, err := AcquireLock(context.Background(), c, ns, "shop", "ci (pid 1 on runner)")
	var locked *LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("second AcquireLock with the same holder = %v, want a LockedError", err)
	}
	// A lock object for the same holder string, as a second process would
	// have one, must not delete the first one's lease.
	impostor := &Lock{client: c, namespace: ns, app: "shop", name: LockName("shop"), identity: identityOf("ci (pid 1 on runner)"), stop: func() {}, done: make(chan struct{})}
	close(impostor.done)
	impostor.Unlock()
	if _, err := c.CoordinationV1().Leases(ns).Get(context.Background(), LockName("shop"), metav1.GetOptions{}); err != nil {
		t.Fatalf("the impostor's Unlock removed the first holder's lease: %v", err)
	}
	first.Unlock()
}

// The holder unlocks between our Create (AlreadyExists) and our Get
// (NotFound): we create it again instead of failing with a raw NotFound.
func TestAcquireLockLeaseDeletedBetweenCreateAndGet(t *testing.T) {
	c := fakeClient()
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	creates := 0
	c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		if creates == 1 {
			return true, nil, apierrors.NewAlreadyExists(gvr.GroupResource(), LockName("shop"))
		}
		return false, nil, nil
	})
	l, err := AcquireLock(context.Background(), c, ns, "shop", "bob")
	if err != nil {
		t.Fatalf("AcquireLock = %v", err)
	}
	defer l.Unlock()
	if creates != 2 {
		t.Errorf("creates = %d, want 2", creates)
	}
}

// Another tug overwrote our lease: the renewal notices, and the error names
// the app, not the lease.
func TestLockLostToAnotherHolder(t *testing.T) {
	old := renewEvery
	renewEvery = 20 * time.Millisecond
	defer func() { renewEvery = old }()
	c := fakeClient()
	refuse := refuseLeaseRenewals(c) // before the lock's renewing goroutine starts
	l := acquire(t, c, "alice")
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
func TestAcquireLockDoesNotBelieveARenewTimeInTheFuture(t *testing.T) {
	quickObservation(t)
	c := fakeClient(lease("alice (pid 1 on laptop)", time.Now().Add(time.Hour)))
	l := acquire(t, c, "bob (pid 2 on ci)")
	defer l.Unlock()
	if got := getLease(t, c); holderOf(*got.Spec.HolderIdentity) != "bob (pid 2 on ci)" {
		t.Errorf("lease after takeover = %+v", got.Spec)
	}
}

// A live holder whose clock is ahead keeps its lock: it renews while tug
// watches.
func TestAcquireLockKeepsALeaseRenewedByAClockAhead(t *testing.T) {
	old := observeFor
	observeFor = 5 * time.Second
	defer func() { observeFor = old }()
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
			l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), LockName("shop"), metav1.GetOptions{})
			if err != nil {
				continue
			}
			at := metav1.NewMicroTime(time.Now().Add(time.Hour))
			l.Spec.RenewTime = &at
			_, _ = c.CoordinationV1().Leases(ns).Update(context.Background(), l, metav1.UpdateOptions{})
		}
	}()
	_, err := AcquireLock(context.Background(), c, ns, "shop", "bob")
	close(stop)
	<-stopped
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder != "alice" {
		t.Fatalf("AcquireLock = %v, want held by alice", err)
	}
}

// waitingFor is a Progress that signals once a line says tug waits for the
// lock.
type waitingFor struct{ ch chan string }

func (w waitingFor) Update(msg string) {
	if strings.HasPrefix(msg, "waiting for ") {
		select {
		case w.ch <- msg:
		default:
		}
	}
}

// --wait-lock: a change started while another holds the lock waits for it,
// says for whom, and goes on once it is released.
func TestWaitLockGoesOnOnceTheLockIsFree(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	other := acquire(t, c, "alice (pid 1 on laptop)")
	// The lock is released only once the waiting Roll watches the lease:
	// the fake's watch starts from now, not from the resourceVersion it is
	// given as the API server's does, so a release just before the watch
	// started would be missed (and Roll would look again only when the
	// lease could have expired: the flake this avoids under -race).
	watching := make(chan struct{}, 1)
	c.PrependWatchReactor("leases", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		select {
		case watching <- struct{}{}:
		default:
		}
		return true, w, err
	})
	d := deps(c)
	d.WaitLock = time.Minute
	waiting := waitingFor{make(chan string, 1)}
	d.Progress = waiting
	done := make(chan error, 1)
	go func() {
		_, err := Roll(context.Background(), d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true})
		done <- err
	}()
	select {
	case msg := <-waiting.ch:
		if !strings.Contains(msg, "alice (pid 1 on laptop)") || !strings.Contains(msg, "up to 1m0s") {
			t.Errorf("progress %q", msg)
		}
	case err := <-done:
		t.Fatalf("Roll ended while the lock was held: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress line says tug waits for the lock")
	}
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting Roll never watched the lease")
	}
	other.Unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Roll after the lock came free: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Roll still waits after the lock came free")
	}
	if a := getApp(t, s, "shop"); a.Release != 1 {
		t.Errorf("record release v%d", a.Release)
	}
}

// --wait-lock gives up after its time with the holder named; without it
// the refusal is at once.
func TestWaitLockGivesUp(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	other := acquire(t, c, "alice")
	defer other.Unlock()
	d := deps(c)
	d.WaitLock = 300 * time.Millisecond
	_, err := Roll(context.Background(), d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true})
	var waited *LockWaitError
	var held *LockedError
	if !errors.As(err, &waited) || !errors.As(err, &held) || held.Holder != "alice" || !strings.Contains(err.Error(), "after waiting") {
		t.Fatalf("Roll = %v; want a LockWaitError naming alice", err)
	}
	if rels, _ := s.ListReleases(context.Background(), "shop"); len(rels) != 0 {
		t.Errorf("%d releases made while waiting", len(rels))
	}
}
