package service

import (
	"context"

	"tug.dev/tug/pkg/lock"
)

// LockKey is what a service's lock is named for: the lock is a Lease
// tug-lock-service-NAME, taken as an app's deploy lock is, so two tugs
// changing one service's credentials or bindings at once (two rotates, a
// rotate and a remove) take turns instead of overwriting each other's
// passwords and record.
func LockKey(name string) string { return "service-" + name }

// Hold takes the service's lock (waiting up to d.WaitLock): rotate,
// remove and update take it here; bind and unbind around their release. The context
// it returns ends when the lock is lost, so the work stops with it;
// unlock releases the lock.
func (d Deps) Hold(ctx context.Context, name string) (context.Context, func(), error) {
	l, err := lock.Acquire(ctx, lock.Request{Client: d.Client, Namespace: d.Namespace, App: LockKey(name),
		Holder: d.Holder, Wait: d.WaitLock, Progress: d.Progress})
	if err != nil {
		return nil, nil, err
	}
	lctx, stop := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-l.Done():
			if err := l.Lost(); err != nil {
				stop(err)
			}
		case <-lctx.Done():
		}
	}()
	return lctx, func() { stop(nil); l.Unlock() }, nil
}
