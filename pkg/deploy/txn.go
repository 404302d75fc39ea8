package deploy

import (
	"context"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
)

// A txn is one change to an app made under its deploy lock. Every change
// that writes what runs or what the record says (Roll, Reshape,
// ChangeRollout, Remove, RecordFailed, the steps of a move) begins with
// lockApp: take the lock, then read the record afresh and settle what a
// stopped tug left (Reconcile), so nothing read before the lock (when
// another tug could still change the app) is ever written back. The rest
// of the change runs on t.ctx, which ends as soon as the lock is lost: no
// release phase runs and nothing is applied once another tug may hold it.
type txn struct {
	d     Deps
	store *app.Store
	// app is the record as read and settled under the lock.
	app  *app.App
	held *lock.Lock
	// ctx ends with the command's context, or with the lock's loss (its
	// error is context.Cause(ctx)).
	ctx  context.Context
	stop context.CancelCauseFunc
}

// lockApp takes appName's deploy lock and reads its record under it; check,
// if not nil, vets that fresh record (whatever a command checked before
// taking the lock must hold under it too). An app that does not exist
// fails before the lock is taken. The caller ends the txn; on an error the
// lock is released here.
func lockApp(ctx context.Context, d Deps, appName string, check func(*app.App) error) (*txn, error) {
	if _, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, appName); err != nil {
		return nil, err
	}
	l, err := lock.Acquire(ctx, d.lockRequest(appName))
	if err != nil {
		return nil, err
	}
	t := holding(ctx, d, l)
	if err := t.read(appName, check); err != nil {
		t.end()
		return nil, err
	}
	return t, nil
}

// holding makes a txn of a lock already held, before the app's record is
// read (a move takes the target's lock before its copy exists there).
func holding(ctx context.Context, d Deps, l *lock.Lock) *txn {
	if d.Progress == nil {
		d.Progress = progress.Nop{}
	}
	tctx, stop := context.WithCancelCause(ctx)
	t := &txn{d: d, store: &app.Store{Client: d.Client, Namespace: d.Namespace}, held: l, ctx: tctx, stop: stop}
	if l != nil {
		go func() {
			select {
			case <-l.Done():
				if err := l.Lost(); err != nil {
					stop(err)
				}
			case <-tctx.Done():
			}
		}()
	}
	return t
}

// unlocked is a txn for a dry run, which takes no lock and writes nothing.
func unlocked(ctx context.Context, d Deps, a *app.App) *txn {
	t := holding(ctx, d, nil)
	t.app = a
	return t
}

// read reads the record afresh, settles it (Reconcile: a tug killed
// mid-rollout may have left the units on a release the record does not
// name yet) and vets it with check.
func (t *txn) read(appName string, check func(*app.App) error) error {
	t.store = &app.Store{Client: t.d.Client, Namespace: t.d.Namespace}
	a, err := t.store.GetApp(t.ctx, appName)
	if err == nil {
		a, err = Reconcile(t.ctx, t.d.Client, t.store, a)
	}
	if err == nil && check != nil {
		err = check(a)
	}
	if err != nil {
		return err
	}
	t.app = a
	return nil
}

// end releases the lock.
func (t *txn) end() {
	t.stop(nil)
	if t.held != nil {
		t.held.Unlock()
	}
}

// lost says whether the lock was lost (see Lock.Lost); nil for a dry run.
func (t *txn) lost() error {
	if t.held == nil {
		return nil
	}
	return t.held.Lost()
}

// cause is why t.ctx ended: the lost lock's error, or the command's own
// (context.Canceled on Ctrl-C); nil while it runs.
func (t *txn) cause() error {
	if t.ctx.Err() == nil {
		return nil
	}
	if err := t.lost(); err != nil {
		return err
	}
	return context.Cause(t.ctx)
}

// cleanupTimeout bounds the writes that record how a change ended once it
// was cut short (Ctrl-C, SIGTERM, a lost lock, a deadline): long enough
// for a slow API server, short enough that a second Ctrl-C is rarely
// needed. (Undoing a half-made move, which waits for units to stop, has its
// own: moveCleanupTimeout.)
const cleanupTimeout = 10 * time.Second

// detached is a context for that cleanup: it outlives ctx's cancellation,
// keeps its values, and ends after cleanupTimeout.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// explain makes an error of a change cut short say why: once the lock is
// lost, that is what the user must hear (another tug may be changing the
// app), not the "context canceled" of the request it cut.
func (t *txn) explain(err error) error {
	if err == nil {
		return nil
	}
	if lost := t.lost(); lost != nil {
		return lost
	}
	return err
}

// lockRequest asks for appName's lock in d's namespace for d's holder,
// waiting up to d.WaitLock.
func (d Deps) lockRequest(appName string) lock.Request {
	return lock.Request{Client: d.Client, Namespace: d.Namespace, App: appName, Holder: d.Holder,
		Wait: d.WaitLock, Progress: d.Progress, Timing: d.LockTiming}
}
