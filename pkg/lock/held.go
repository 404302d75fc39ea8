package lock

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// HeldError says another tug is changing the app: it holds the lock.
type HeldError struct {
	// Holder is whom the lease names, as people read it.
	App, Holder string
	Since       time.Time
	Renewed     time.Time
	Expires     time.Time
}

// ServicePrefix starts the key of a backing service's lock (pkg/service):
// a dot no app name can hold, so a service's Lease is never an app's
// (service "db" and app "service-db" once shared tug-lock-service-db).
const ServicePrefix = "service."

// CodeHeld is the exit code of a command refused because another tug
// holds the app's lock (docs/exit-codes.md): a CI job can retry on it.
const CodeHeld = 19

// ExitCode is CodeHeld; a *WaitError (--wait-lock ran out) has it too.
func (e *HeldError) ExitCode() int { return CodeHeld }

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is being changed by %s since %s (lease renewed %s ago); wait for it to finish, or retry after %s if that tug was killed",
		quotedThing(e.App), e.Holder, e.Since.Local().Format("15:04:05"), time.Since(e.Renewed).Round(time.Second).Abs(), e.Expires.Local().Format("15:04:05"))
}

// lockedThing is what a lock key names, as people read it: "app shop",
// "service db".
func lockedThing(key string) string {
	if name, ok := strings.CutPrefix(key, ServicePrefix); ok {
		return "service " + name
	}
	return "app " + key
}

// quotedThing is lockedThing with the name quoted, for errors.
func quotedThing(key string) string {
	if name, ok := strings.CutPrefix(key, ServicePrefix); ok {
		return fmt.Sprintf("service %q", name)
	}
	return fmt.Sprintf("app %q", key)
}

// holderOf is the identity as people read it, without the token.
func holderOf(identity string) string {
	if i := strings.LastIndex(identity, " #"); i >= 0 {
		return identity[:i]
	}
	return identity
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
// unchanged for ObserveFor on its own clock (observeUnchanged).
func heldError(appName string, l *coordinationv1.Lease) *HeldError {
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
	return &HeldError{App: appName, Holder: holderOf(*l.Spec.HolderIdentity), Since: since, Renewed: renewed, Expires: expires}
}

// observeUnchanged watches the lease for r's ObserveFor and returns it if
// nobody changed it meanwhile; a change (a renewal by a live holder whose
// clock is behind ours) returns a *HeldError.
func observeUnchanged(parent context.Context, r Request, cur *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	leases := r.Client.CoordinationV1().Leases(cur.Namespace)
	ctx, cancel := context.WithTimeout(parent, r.Timing.observeFor())
	defer cancel()
	changed := func(l *coordinationv1.Lease) error {
		// The fake clientset keeps no resourceVersions; the renew time
		// and holder moving are what matter anyway.
		if l.ResourceVersion == cur.ResourceVersion && deref(l.Spec.HolderIdentity) == deref(cur.Spec.HolderIdentity) &&
			l.Spec.RenewTime.Equal(cur.Spec.RenewTime) {
			return nil
		}
		renewed := time.Now()
		return &HeldError{Holder: holderOf(deref(l.Spec.HolderIdentity)), Since: renewed, Renewed: renewed, Expires: renewed.Add(r.Timing.leaseDuration())}
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
		err = watchForChange(ctx, w, cur.Name, changed)
		w.Stop()
		if err != nil {
			return nil, err
		}
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
