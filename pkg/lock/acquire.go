package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"tug.dev/tug/pkg/kube"
)

// Acquire takes r.App's lock for r.Holder. While another tug holds it, it
// waits up to r.Wait (0: not at all, the *HeldError at once) for the lock
// to come free, watching the lease rather than polling, and says on
// r.Progress whom it waits for and for how long so far; after r.Wait it
// fails with a *WaitError.
func Acquire(ctx context.Context, r Request) (*Lock, error) {
	start := time.Now()
	var said string
	var saidAt time.Time
	for {
		l, err := acquireOnce(ctx, r)
		var held *HeldError
		if !errors.As(err, &held) || r.Wait <= 0 {
			return l, err
		}
		waited := time.Since(start)
		left := r.Wait - waited
		if left <= 0 {
			return nil, &WaitError{HeldError: held, Waited: waited}
		}
		if held.Holder != said || time.Since(saidAt) >= 10*time.Second {
			said, saidAt = held.Holder, time.Now()
			if r.Progress != nil {
				r.Progress.Update(fmt.Sprintf("waiting for %s to finish changing %s (%s so far, up to %s)", held.Holder, lockedThing(r.App), waited.Round(time.Second), r.Wait))
			}
		}
		// until the lease changes (a renewal, a release, a takeover), or
		// until it may have expired, whichever comes first
		until := max(time.Until(held.Expires), 0) + r.Timing.renewEvery()
		if err := awaitLeaseChange(ctx, r, min(left, until)); err != nil {
			return nil, err
		}
	}
}

// acquireOnce takes the lock or fails at once, and starts renewing it.
func acquireOnce(ctx context.Context, r Request) (*Lock, error) {
	identity := identityOf(r.Holder)
	created, sent, err := takeOnce(ctx, r, identity)
	if err != nil {
		return nil, err
	}
	renewCtx, stop := context.WithCancel(context.Background())
	l := &Lock{client: r.Client, namespace: r.Namespace, app: r.App, name: created.Name, identity: identity,
		timing: r.Timing, stop: stop, done: make(chan struct{})}
	go l.renew(renewCtx, created, sent)
	return l, nil
}

// WaitError: the app stayed locked by another tug for as long as the
// command was told to wait (--wait-lock).
type WaitError struct {
	*HeldError
	Waited time.Duration
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("app %q is still being changed by %s after waiting %s (--wait-lock); wait longer, or retry after %s if that tug was killed",
		e.App, e.Holder, e.Waited.Round(time.Second), e.Expires.Local().Format("15:04:05"))
}

func (e *WaitError) Unwrap() error { return e.HeldError }

// awaitLeaseChange returns when r's lease changes or goes, after timeout,
// or with ctx's error.
func awaitLeaseChange(ctx context.Context, r Request, timeout time.Duration) error {
	leases := r.Client.CoordinationV1().Leases(r.Namespace)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cur, err := leases.Get(wctx, Name(r.App), metav1.GetOptions{})
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
	// A change between the GET and the watch's start is in the watch only
	// where the server replays from the resourceVersion; a watch that
	// cannot (the fake clientset, some proxies) would miss a release and
	// wait until the lease expires. One more GET closes that window.
	if now, err := leases.Get(wctx, cur.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) || (err == nil && now.ResourceVersion != cur.ResourceVersion) {
		return nil
	}
	select {
	case <-w.ResultChan():
	case <-wctx.Done():
	}
	return ctx.Err()
}
