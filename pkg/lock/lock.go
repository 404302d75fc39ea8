// Package lock is the per-app deploy lock: a Lease that whoever changes
// what an app runs (a deploy, an env change, a rollback, a formation
// change, a move, a node drain's surge) holds and renews while it works.
// A tug killed mid-change stops renewing and the lease expires, so the
// next change proceeds without manual repair; a lease that only looks
// expired (the holder's clock may be behind ours) is taken over only once
// tug has seen it unchanged on its own clock.
//
// The lock is held by a Lock; Acquire takes it, waiting for it when asked
// (--wait-lock). Changes that edit an app under its lock go through
// deploy.Txn, which takes this lock, reads the record under it and stops
// when the lock is lost.
package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
)

// LeaseDuration is how long a lease lasts without a renewal, unless
// Timing says otherwise.
const LeaseDuration = 15 * time.Second

// renewTimeout bounds one renewal, so a stalled API server cannot hold the
// renewing goroutine past the lease's life.
const renewTimeout = 4 * time.Second

// Timing is how a lock keeps time. The zero value is the defaults; tests
// shorten it for one lock, never for the process.
type Timing struct {
	// LeaseDuration is how long the lease lasts unrenewed (whole seconds,
	// as a Lease stores it); 0: LeaseDuration.
	LeaseDuration time.Duration
	// RenewEvery is how often the holder renews; 0: 5 s. It is capped at
	// a third of holdFor, so a holder gets three tries before it stops
	// (2.75 s by default).
	RenewEvery time.Duration
	// ObserveFor is how long a lease that looks expired must stay
	// unchanged before it is taken over; 0: two renewals (of the
	// RenewEvery in effect) and a second. The holder's RenewTime comes
	// from the holder's clock, which may be behind ours, so "looks
	// expired" is only a hint; a live holder renews every RenewEvery, so
	// two missed renewals, measured on our own clock as client-go's leader
	// election does, prove it is gone.
	ObserveFor time.Duration
}

func (t Timing) leaseDuration() time.Duration {
	if t.LeaseDuration > 0 {
		return t.LeaseDuration
	}
	return LeaseDuration
}

func (t Timing) renewEvery() time.Duration {
	if t.RenewEvery > 0 {
		return t.RenewEvery
	}
	return 5 * time.Second
}

func (t Timing) observeFor() time.Duration {
	if t.ObserveFor > 0 {
		return t.ObserveFor
	}
	return 2*t.renewEvery() + time.Second
}

// holdFor is how long a holder keeps writing after its last renewal was
// sent, when no renewal since got through: three quarters of what a taker
// watches a lease unchanged before it takes it over (8.25 s by default),
// so a holder stops before anyone can take over whatever the two clocks
// say. The quarter left covers a write already on its way when it stops.
func (t Timing) holdFor() time.Duration { return t.observeFor() * 3 / 4 }

// renewInterval is how often the holder renews: RenewEvery, capped at a
// third of holdFor (2.75 s by default), so a renewal that fails has two
// more chances, besides the quick retries, before the holder stops.
func (t Timing) renewInterval() time.Duration { return min(t.renewEvery(), t.holdFor()/3) }

// Name is the Lease that serialises an app's changes.
func Name(appName string) string { return "tug-lock-" + appName }

// Request says which app's lock to take, for whom, and how long to wait
// for it.
type Request struct {
	Client    kubernetes.Interface
	Namespace string
	App       string
	// Holder is who asks; the lease names them.
	Holder Holder
	// Wait is how long to wait while another tug holds the lock
	// (--wait-lock); 0 fails at once with a *HeldError.
	Wait time.Duration
	// Progress hears whom a waiting Acquire waits for; nil: nobody.
	Progress progress.Reporter
	Timing   Timing
}

// Lock is a held deploy lock; Unlock releases it.
type Lock struct {
	client    kubernetes.Interface
	namespace string
	app       string
	name      string
	identity  string // holder plus a random token: unique per process
	timing    Timing
	stop      context.CancelFunc
	done      chan struct{}
	mu        sync.Mutex
	lost      error
	// last is the lease as the renewal goroutine last wrote or read it:
	// Unlock, once that goroutine is done, deletes it by its UID and
	// resourceVersion without reading it again.
	last *coordinationv1.Lease
}

// Lost says whether the lock was taken from us (its renewal found another
// holder) or could not be renewed for as long as the lease lasts: whoever
// holds it now may be changing the app too.
func (l *Lock) Lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Done is closed once the lock stops renewing: it was unlocked, or lost
// (Lost says which).
func (l *Lock) Done() <-chan struct{} { return l.done }

func (l *Lock) setLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = err
	}
}

// identityOf makes the lease's holder identity unique: two CI jobs with the
// same user, pid and host name are still two holders.
func identityOf(h Holder) string {
	return h.String() + " #" + rand.String(8)
}

// takeOnce takes r's lock for identity, or fails at once with a *HeldError
// naming who holds it. A lease that looks expired is watched for
// ObserveFor first and taken over only if nobody renewed it meanwhile.
//
// sent is when the write that took it was sent (our clock, with its
// monotonic reading): the lease is ours for holdFor from then (renew).
func takeOnce(ctx context.Context, r Request, identity string) (lease *coordinationv1.Lease, sent time.Time, err error) {
	leases := r.Client.CoordinationV1().Leases(r.Namespace)
	secs := int32(r.Timing.leaseDuration() / time.Second)
	labels := kube.AppLabels(r.App)
	labels[kube.LabelKind] = "lock"
	spec := func() coordinationv1.LeaseSpec {
		sent = time.Now()
		now := metav1.NewMicroTime(sent)
		return coordinationv1.LeaseSpec{HolderIdentity: &identity, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
	}
	name := Name(r.App)
	// A few rounds: a lease deleted between our Create and Get (its holder
	// just unlocked) means "try to create it again", not an error.
	for range 3 {
		want := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace, Labels: labels}, Spec: spec()}
		var created *coordinationv1.Lease
		created, err = leases.Create(ctx, want, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if !apierrors.IsAlreadyExists(err) {
			return created, sent, kube.TranslateError(err)
		}
		var cur *coordinationv1.Lease
		cur, err = takeOver(ctx, r, name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, sent, err
		}
		// Take it over; the resourceVersion makes this a compare-and-swap,
		// so a conflict means someone else just did.
		cur.Spec = spec()
		cur.Labels = labels
		created, err = leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		if apierrors.IsConflict(err) {
			if held := heldByWinner(ctx, r, name); held != nil {
				return nil, sent, held
			}
		}
		return created, sent, kube.TranslateError(err)
	}
	return nil, sent, kube.TranslateError(err)
}

// takeOver reads the lease in the way and says whether it may be taken
// over: a *HeldError while it is held (or renewed while we watch it), a
// NotFound when it went meanwhile, else the lease as we saw it unchanged.
func takeOver(ctx context.Context, r Request, name string) (*coordinationv1.Lease, error) {
	cur, err := r.Client.CoordinationV1().Leases(r.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	if held := heldError(r.App, cur); held != nil {
		return nil, held
	}
	// It looks expired by our clock. Make sure nobody renews it.
	cur, err = observeUnchanged(ctx, r, cur)
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		var held *HeldError
		if errors.As(err, &held) {
			held.App = r.App
		}
		return nil, kube.TranslateError(err)
	}
	return cur, nil
}

// heldByWinner is the *HeldError naming whoever won a takeover race; nil
// when the lease cannot be read.
func heldByWinner(ctx context.Context, r Request, name string) *HeldError {
	latest, err := r.Client.CoordinationV1().Leases(r.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	if held := heldError(r.App, latest); held != nil {
		return held
	}
	now := time.Now()
	return &HeldError{App: r.App, Holder: holderOf(deref(latest.Spec.HolderIdentity)), Since: now, Renewed: now, Expires: now.Add(r.Timing.leaseDuration())}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// renew keeps the lease ours, from renewedAt: when the request that took
// it was sent. Whoever waits to take a lease over watches it unchanged for
// ObserveFor on its own clock, starting no earlier than our last renewal
// was written (and so after it was sent), whatever either clock says the
// time is. So the lock counts as ours only until holdFor after our last
// renewal that was sent and succeeded, on our own clock: past that, with
// no renewal through, it is lost at once (the Txn stops writing), before
// any taker can have taken it over. Renewals come every renewInterval,
// inside that time, and a failed one is retried at once after a short
// pause, each bounded by the deadline.
func (l *Lock) renew(ctx context.Context, lease *coordinationv1.Lease, renewedAt time.Time) {
	defer close(l.done)
	defer func() { l.last = lease }() // read by Unlock after done
	hold, every := l.timing.holdFor(), l.timing.renewInterval()
	next := time.NewTimer(every)
	defer next.Stop()
	leases := l.client.CoordinationV1().Leases(l.namespace)
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		deadline := renewedAt.Add(hold)
		sent := time.Now()
		if !sent.Before(deadline) {
			l.setLost(fmt.Errorf("could not renew the deploy lock of app %q for %s: another tug may be changing it", l.app, sent.Sub(renewedAt).Round(time.Second)))
			return
		}
		now := metav1.NewMicroTime(sent)
		lease.Spec.RenewTime = &now
		rctx, cancel := context.WithDeadline(ctx, earlier(deadline, sent.Add(renewTimeout)))
		updated, err := leases.Update(rctx, lease, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		cancel()
		switch {
		case err == nil:
			lease, renewedAt = updated, sent
			next.Reset(every)
			continue
		case ctx.Err() != nil:
			return
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// someone else wrote the lease: ours only if it still names us
			cur, lost := l.stillOurs(ctx, deadline)
			if lost {
				l.setLost(fmt.Errorf("lost the deploy lock of app %q to another tug", l.app))
				return
			}
			if cur != nil {
				lease = cur
			}
		}
		// The API is unreachable or slow, or the lease was re-read: try
		// again soon, until the deadline (checked at the top).
		next.Reset(min(every/4+time.Millisecond, max(time.Until(deadline), 0)))
	}
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// stillOurs reads the lease after a renewal found it changed: the lease if
// it still names us, lost if it names another holder or is gone, neither
// when it cannot be read.
func (l *Lock) stillOurs(ctx context.Context, deadline time.Time) (cur *coordinationv1.Lease, lost bool) {
	gctx, cancel := context.WithDeadline(ctx, earlier(deadline, time.Now().Add(renewTimeout)))
	defer cancel()
	cur, err := l.client.CoordinationV1().Leases(l.namespace).Get(gctx, l.name, metav1.GetOptions{})
	switch {
	case err == nil && deref(cur.Spec.HolderIdentity) == l.identity:
		return cur, false
	case err == nil || apierrors.IsNotFound(err):
		return nil, true
	}
	return nil, false
}

// Unlock stops renewing and deletes the lease, so the next change need not
// wait for it to expire. It uses its own short deadline: it runs on the
// way out, often after the command's context was cancelled by Ctrl-C.
func (l *Lock) Unlock() {
	l.stop()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Delete only our own lease: another tug may have taken it over after
	// ours expired. The lease as we last wrote it first, one request on
	// every command's way out; a precondition that fails (the lease was
	// written since) falls back to reading it.
	if last := l.last; last != nil && deref(last.Spec.HolderIdentity) == l.identity {
		err := l.client.CoordinationV1().Leases(l.namespace).Delete(ctx, l.name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &last.UID, ResourceVersion: &last.ResourceVersion},
		})
		if !apierrors.IsConflict(err) {
			return
		}
	}
	// The precondition closes the gap between Get and Delete.
	cur, err := l.client.CoordinationV1().Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
	if err != nil || deref(cur.Spec.HolderIdentity) != l.identity {
		return
	}
	_ = l.client.CoordinationV1().Leases(l.namespace).Delete(ctx, l.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion},
	})
}
