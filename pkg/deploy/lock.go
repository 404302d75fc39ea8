package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// The deploy lock is a Lease per app. Whoever changes what runs (deploy, env
// change, rollback) holds it and renews it; a tug killed mid-deploy stops
// renewing, and the lease expires after LeaseDuration, so the next deploy
// proceeds without manual repair.
const LeaseDuration = 15 * time.Second

// renewEvery is how often the holder renews; a variable so tests need not
// wait for a tick.
var renewEvery = 5 * time.Second

const (
	// renewTimeout bounds one renewal, so a stalled API server cannot hold
	// the renewing goroutine past the lease's life.
	renewTimeout = 4 * time.Second
)

// observeFor is how long a lease that looks expired must stay unchanged
// before it is taken over. The holder's RenewTime comes from the holder's
// clock, which may be behind ours, so "looks expired" is only a hint; a live
// holder renews every renewEvery, so two missed renewals (measured on our
// own clock, as client-go's leader election does) prove it is gone. A
// variable so tests need not wait.
var observeFor = 2*renewEvery + time.Second

// LockName is the Lease that serialises an app's deploys.
func LockName(appName string) string { return "tug-lock-" + appName }

// LockedError says another deploy of the app is in progress.
type LockedError struct {
	App, Holder string
	Since       time.Time
	Renewed     time.Time
	Expires     time.Time
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("app %q is being changed by %s since %s (lease renewed %s ago); wait for it to finish, or retry after %s if that tug was killed",
		e.App, e.Holder, e.Since.Local().Format("15:04:05"), time.Since(e.Renewed).Round(time.Second).Abs(), e.Expires.Local().Format("15:04:05"))
}

// Lock is a held deploy lock; Unlock releases it.
type Lock struct {
	client    kubernetes.Interface
	namespace string
	app       string
	name      string
	identity  string // holder plus a random token: unique per process
	stop      context.CancelFunc
	done      chan struct{}
	mu        sync.Mutex
	lost      error
}

// Lost says whether the lock was taken from us (its renewal found another
// holder) or could not be renewed for as long as the lease lasts: whoever
// holds it now may be changing the app too.
func (l *Lock) Lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

func (l *Lock) setLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = err
	}
}

// identityOf makes the lease's holder identity unique: two CI jobs with the
// same user, pid and host name are still two holders.
func identityOf(holder string) string {
	return holder + " #" + rand.String(8)
}

// holderOf is the identity as people read it, without the token.
func holderOf(identity string) string {
	if i := strings.LastIndex(identity, " #"); i >= 0 {
		return identity[:i]
	}
	return identity
}

// AcquireLock takes app's deploy lock for holder, or fails at once with a
// LockedError naming who holds it. A lease that looks expired is watched
// for observeFor first and taken over only if nobody renewed it meanwhile.
func AcquireLock(ctx context.Context, client kubernetes.Interface, namespace, appName, holder string) (*Lock, error) {
	leases := client.CoordinationV1().Leases(namespace)
	identity := identityOf(holder)
	secs := int32(LeaseDuration / time.Second)
	labels := kube.AppLabels(appName)
	labels[kube.LabelKind] = "lock"
	spec := func() coordinationv1.LeaseSpec {
		now := metav1.NewMicroTime(time.Now())
		return coordinationv1.LeaseSpec{HolderIdentity: &identity, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
	}
	name := LockName(appName)
	var (
		created *coordinationv1.Lease
		err     error
	)
	// A few rounds: a lease deleted between our Create and Get (its holder
	// just unlocked) means "try to create it again", not an error.
	for range 3 {
		want := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}, Spec: spec()}
		created, err = leases.Create(ctx, want, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if !apierrors.IsAlreadyExists(err) {
			break
		}
		var cur *coordinationv1.Lease
		cur, err = leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, kube.TranslateError(err)
		}
		if held := heldError(appName, cur); held != nil {
			return nil, held
		}
		// It looks expired by our clock. Make sure nobody renews it.
		cur, err = observeUnchanged(ctx, client, cur, observeFor)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			var held *LockedError
			if errors.As(err, &held) {
				held.App = appName
			}
			return nil, kube.TranslateError(err)
		}
		// Take it over; the resourceVersion makes this a compare-and-swap,
		// so a conflict means someone else just did.
		cur.Spec = spec()
		cur.Labels = labels
		created, err = leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		if apierrors.IsConflict(err) {
			if latest, gerr := leases.Get(ctx, name, metav1.GetOptions{}); gerr == nil {
				if held := heldError(appName, latest); held != nil {
					return nil, held
				}
				return nil, &LockedError{App: appName, Holder: holderOf(deref(latest.Spec.HolderIdentity)), Since: time.Now(), Renewed: time.Now(), Expires: time.Now().Add(LeaseDuration)}
			}
		}
		break
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	renewCtx, stop := context.WithCancel(context.Background())
	l := &Lock{client: client, namespace: namespace, app: appName, name: created.Name, identity: identity, stop: stop, done: make(chan struct{})}
	go l.renew(renewCtx, created)
	return l, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// observeUnchanged watches the lease for d and returns it if nobody changed
// it meanwhile; a change (a renewal by a live holder whose clock is behind
// ours) returns a LockedError.
func observeUnchanged(parent context.Context, client kubernetes.Interface, cur *coordinationv1.Lease, d time.Duration) (*coordinationv1.Lease, error) {
	leases := client.CoordinationV1().Leases(cur.Namespace)
	ctx, cancel := context.WithTimeout(parent, d)
	defer cancel()
	changed := func(l *coordinationv1.Lease) error {
		// The fake clientset keeps no resourceVersions; the renew time
		// and holder moving are what matter anyway.
		if l.ResourceVersion == cur.ResourceVersion && deref(l.Spec.HolderIdentity) == deref(cur.Spec.HolderIdentity) &&
			l.Spec.RenewTime.Equal(cur.Spec.RenewTime) {
			return nil
		}
		renewed := time.Now()
		return &LockedError{Holder: holderOf(deref(l.Spec.HolderIdentity)), Since: renewed, Renewed: renewed, Expires: renewed.Add(LeaseDuration)}
	}
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", cur.Name).String(),
			ResourceVersion: cur.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, err
		}
		if err := watchForChange(ctx, w, cur.Name, changed); err != nil {
			w.Stop()
			return nil, err
		}
		w.Stop()
		// The watch ended: our deadline, or the server closed it. Either way
		// the lease as it is now tells whether it moved.
		gctx, gcancel := context.WithTimeout(parent, renewTimeout)
		latest, err := leases.Get(gctx, cur.Name, metav1.GetOptions{})
		gcancel()
		if err != nil {
			return nil, err
		}
		if err := changed(latest); err != nil {
			return nil, err
		}
	}
	if err := parent.Err(); err != nil {
		return nil, err
	}
	return cur, nil
}

// watchForChange reads w until ctx ends or w closes; it returns the error
// changed gives for an event about the lease name, or NotFound if the lease
// was deleted.
func watchForChange(ctx context.Context, w watch.Interface, name string, changed func(*coordinationv1.Lease) error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			l, isLease := ev.Object.(*coordinationv1.Lease)
			if !isLease || l.Name != name {
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				return apierrors.NewNotFound(coordinationv1.Resource("leases"), name)
			case watch.Added, watch.Modified:
				if err := changed(l); err != nil {
					return err
				}
			}
		}
	}
}

// clockSlack is how far ahead of ours a holder's clock may run before its
// renew times are not believed at all.
const clockSlack = 2 * time.Second

// heldError says whether lease l reads as held now, going by its renew
// time: only a hint, from the holder's clock. It is believed when it says
// the holder renewed recently by our clock; a renew time in our future (the
// holder's clock ahead) says nothing, so a dead holder whose clock ran
// ahead does not block others for as long as it ran ahead: such a lease,
// like one that looks expired, is taken over only once tug has seen it
// unchanged for observeFor on its own clock (observeUnchanged).
func heldError(appName string, l *coordinationv1.Lease) *LockedError {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil || l.Spec.HolderIdentity == nil {
		return nil
	}
	now := time.Now()
	renewed := l.Spec.RenewTime.Time
	if renewed.After(now.Add(clockSlack)) {
		return nil
	}
	expires := renewed.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if now.After(expires) {
		return nil
	}
	since := renewed
	if l.Spec.AcquireTime != nil && !l.Spec.AcquireTime.After(now.Add(clockSlack)) {
		since = l.Spec.AcquireTime.Time
	}
	return &LockedError{App: appName, Holder: holderOf(*l.Spec.HolderIdentity), Since: since, Renewed: renewed, Expires: expires}
}

func (l *Lock) renew(ctx context.Context, lease *coordinationv1.Lease) {
	defer close(l.done)
	t := time.NewTicker(renewEvery)
	defer t.Stop()
	leases := l.client.CoordinationV1().Leases(l.namespace)
	lastRenewed := time.Now() // our clock, not the lease's
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &now
			rctx, cancel := context.WithTimeout(ctx, renewTimeout)
			updated, err := leases.Update(rctx, lease, metav1.UpdateOptions{FieldManager: kube.FieldManager})
			cancel()
			switch {
			case err == nil:
				lease = updated
				lastRenewed = time.Now()
				continue
			case ctx.Err() != nil:
				return
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				// someone else wrote the lease: ours only if it still names us
				gctx, cancel := context.WithTimeout(ctx, renewTimeout)
				cur, gerr := leases.Get(gctx, l.name, metav1.GetOptions{})
				cancel()
				if gerr == nil && deref(cur.Spec.HolderIdentity) == l.identity {
					lease = cur
					continue
				}
				if gerr == nil || apierrors.IsNotFound(gerr) {
					l.setLost(fmt.Errorf("lost the deploy lock of app %q to another tug", l.app))
					return
				}
			}
			// The API is unreachable or slow: try again next tick, until the
			// lease may have expired for everyone else.
			if time.Since(lastRenewed) >= LeaseDuration-renewTimeout {
				l.setLost(fmt.Errorf("could not renew the deploy lock of app %q for %s: another tug may be changing it", l.app, time.Since(lastRenewed).Round(time.Second)))
				return
			}
		}
	}
}

// Unlock stops renewing and deletes the lease, so the next deploy need not
// wait for it to expire. It uses its own short deadline: it runs on the way
// out, often after the command's context was cancelled by Ctrl-C.
func (l *Lock) Unlock() {
	l.stop()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Delete only our own lease: another tug may have taken it over after
	// ours expired. The precondition closes the gap between Get and Delete.
	cur, err := l.client.CoordinationV1().Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
	if err != nil || deref(cur.Spec.HolderIdentity) != l.identity {
		return
	}
	_ = l.client.CoordinationV1().Leases(l.namespace).Delete(ctx, l.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion},
	})
}

// LockWaitError: the app stayed locked by another tug for as long as the
// command was told to wait (--wait-lock).
type LockWaitError struct {
	*LockedError
	Waited time.Duration
}

func (e *LockWaitError) Error() string {
	return fmt.Sprintf("app %q is still being changed by %s after waiting %s (--wait-lock); wait longer, or retry after %s if that tug was killed",
		e.App, e.Holder, e.Waited.Round(time.Second), e.Expires.Local().Format("15:04:05"))
}

func (e *LockWaitError) Unwrap() error { return e.LockedError }

// acquireWaiting takes appName's deploy lock for d. While another tug holds it, it
// waits up to d.WaitLock (0: not at all, the LockedError at once) for the
// lock to come free, watching the lease rather than polling, and says on
// d.Progress whom it waits for and for how long so far.
func acquireWaiting(ctx context.Context, d Deps, appName string) (*Lock, error) {
	start := time.Now()
	var said string
	var saidAt time.Time
	for {
		lock, err := AcquireLock(ctx, d.Client, d.Namespace, appName, d.Holder)
		var held *LockedError
		if !errors.As(err, &held) || d.WaitLock <= 0 {
			return lock, err
		}
		waited := time.Since(start)
		left := d.WaitLock - waited
		if left <= 0 {
			return nil, &LockWaitError{LockedError: held, Waited: waited}
		}
		if held.Holder != said || time.Since(saidAt) >= 10*time.Second {
			said, saidAt = held.Holder, time.Now()
			if d.Progress != nil {
				d.Progress.Update(fmt.Sprintf("waiting for %s to finish changing app %s (%s so far, up to %s)", held.Holder, appName, waited.Round(time.Second), d.WaitLock))
			}
		}
		// until the lease changes (a renewal, a release, a takeover), or
		// until it may have expired, whichever comes first
		until := max(time.Until(held.Expires), 0) + renewEvery
		if err := awaitLeaseChange(ctx, d, appName, min(left, until)); err != nil {
			return nil, err
		}
	}
}

// awaitLeaseChange returns when appName's lease changes or goes, after
// timeout, or with ctx's error.
func awaitLeaseChange(ctx context.Context, d Deps, appName string, timeout time.Duration) error {
	leases := d.Client.CoordinationV1().Leases(d.Namespace)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cur, err := leases.Get(wctx, LockName(appName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if wctx.Err() != nil {
			return nil
		}
		return kube.TranslateError(err)
	}
	w, err := leases.Watch(wctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", cur.Name).String(),
		ResourceVersion: cur.ResourceVersion,
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil // the watch could not start: try the lock again
	}
	defer w.Stop()
	select {
	case <-w.ResultChan():
	case <-wctx.Done():
	}
	return ctx.Err()
}
