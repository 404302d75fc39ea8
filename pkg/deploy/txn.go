package deploy

import (
	"context"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/route"
)

// A Txn is one change to an app made under its deploy lock: the one way to
// change an app, here and in the packages above (pkg/move,
// pkg/lifecycle). Every change that writes what runs or what the record
// says (Roll, Reshape, ChangeRollout, RecordFailed, an app's removal, the
// steps of a move) begins with Begin: take the lock, then read the record
// afresh and settle what a stopped tug left (Reconcile), so nothing read
// before the lock (when another tug could still change the app) is ever
// written back. The rest of the change runs on Ctx, which ends as soon as
// the lock is lost: no release phase runs and nothing is applied once
// another tug may hold it. What records how a change ended once it was
// cut short runs on a context detached from the command's, with one
// deadline (cleanupTimeout). End releases the lock.
//
//	t, err := deploy.Begin(ctx, d, "shop", nil)
//	if err != nil {
//		return err
//	}
//	defer t.End()
//	res, err := t.Roll(change, deploy.Options{})
type Txn struct {
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

// Begin takes appName's deploy lock (waiting up to d.WaitLock) and reads
// its record under it; check, if not nil, vets that fresh record (whatever
// a command checked before taking the lock must hold under it too). An app
// that does not exist fails before the lock is taken. The caller ends the
// Txn; on an error the lock is released here.
func Begin(ctx context.Context, d Deps, appName string, check func(*app.App) error) (*Txn, error) {
	if _, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, appName); err != nil {
		return nil, err
	}
	l, err := lock.Acquire(ctx, d.lockRequest(appName))
	if err != nil {
		return nil, err
	}
	t := hold(ctx, d, l)
	if err := t.Read(appName, check); err != nil {
		t.End()
		return nil, err
	}
	return t, nil
}

// Hold takes appName's deploy lock (waiting up to d.WaitLock) without
// reading its record, which may not exist yet: a move takes the target's
// lock before its copy is made there, and reads the copy with Read once
// made. It is also the narrow form for a change that writes no record: a
// node drain surges a process's units under the lock, with a Role that may
// not read the record (pkg/node). The caller ends the Txn.
func Hold(ctx context.Context, d Deps, appName string) (*Txn, error) {
	l, err := lock.Acquire(ctx, d.lockRequest(appName))
	if err != nil {
		return nil, err
	}
	return hold(ctx, d, l), nil
}

// hold makes a Txn of lock l, held (nil for a dry run's).
func hold(ctx context.Context, d Deps, l *lock.Lock) *Txn {
	if d.Progress == nil {
		d.Progress = progress.Nop{}
	}
	tctx, stop := context.WithCancelCause(ctx)
	t := &Txn{d: d, store: &app.Store{Client: d.Client, Namespace: d.Namespace}, held: l, ctx: tctx, stop: stop}
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

// unlocked is a Txn for a dry run, which takes no lock and writes nothing.
func unlocked(ctx context.Context, d Deps, a *app.App) *Txn {
	t := hold(ctx, d, nil)
	t.app = a
	return t
}

// Read reads the record afresh, settles it (Reconcile: a tug killed
// mid-rollout may have left the units on a release the record does not
// name yet) and vets it with check; App is that record from then on.
func (t *Txn) Read(appName string, check func(*app.App) error) error {
	t.store = &app.Store{Client: t.d.Client, Namespace: t.d.Namespace}
	a, err := t.store.GetApp(t.ctx, appName)
	if err == nil {
		a, err = Reconcile(t.ctx, t.d.Client, t.store, a)
	}
	if err == nil {
		a, err = withRouteToken(t.ctx, t.store, a)
	}
	if err == nil && a.Canary != nil {
		// what a stopped tug left of a canary (pkg/canary)
		t.app = a
		var s SideBySide
		if s, err = t.d.sideBySide(appName); err == nil {
			err = s.Settle(t)
		}
		a = t.app
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

// End releases the lock.
func (t *Txn) End() {
	t.stop(nil)
	if t.held != nil {
		t.held.Unlock()
	}
}

// Ctx is the context every request of the change runs on: it ends with the
// command's, or as soon as the lock is lost.
func (t *Txn) Ctx() context.Context { return t.ctx }

// App is the record as read and settled under the lock (nil before Read,
// for a Txn made by Hold).
func (t *Txn) App() *app.App { return t.app }

// Store reads and writes the app's records in the Txn's namespace.
func (t *Txn) Store() *app.Store { return t.store }

// Deps are the Txn's dependencies (Progress never nil).
func (t *Txn) Deps() Deps { return t.d }

// Lost says whether the lock was lost (see lock.Lock.Lost); nil for a dry
// run.
func (t *Txn) Lost() error {
	if t.held == nil {
		return nil
	}
	return t.held.Lost()
}

// cause is why t.ctx ended: the lost lock's error, or the command's own
// (context.Canceled on Ctrl-C); nil while it runs.
func (t *Txn) cause() error {
	if t.ctx.Err() == nil {
		return nil
	}
	if err := t.Lost(); err != nil {
		return err
	}
	return context.Cause(t.ctx)
}

// cleanupTimeout bounds the writes that record how a change ended once it
// was cut short (Ctrl-C, SIGTERM, a lost lock, a deadline): long enough
// for a slow API server, short enough that a second Ctrl-C is rarely
// needed. (Undoing a half-made move, which waits for units to stop, has its
// own: pkg/move's cleanupTimeout.)
const cleanupTimeout = 10 * time.Second

// Detached is a context for that cleanup: it outlives ctx's cancellation,
// keeps its values, and ends after cleanupTimeout.
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// Explain makes an error of a change cut short say why: once the lock is
// lost, that is what the user must hear (another tug may be changing the
// app), not the "context canceled" of the request it cut.
func (t *Txn) Explain(err error) error {
	if err == nil {
		return nil
	}
	if lost := t.Lost(); lost != nil {
		return lost
	}
	return err
}

// Roll makes a new release with change and rolls it out in t, as Roll
// does once it holds the lock (a move rolls the app out in its target
// this way, under the lock it took there).
func (t *Txn) Roll(change Change, opts Options) (*Result, error) {
	return roll(t, change, opts, time.Now())
}

// lockRequest asks for appName's lock in d's namespace for d's holder,
// waiting up to d.WaitLock.
func (d Deps) lockRequest(appName string) lock.Request {
	return lock.Request{Client: d.Client, Namespace: d.Namespace, App: appName, Holder: d.Holder,
		Wait: d.WaitLock, Progress: d.Progress, Timing: d.LockTiming}
}

// withRouteToken gives a route through a Gateway that a tug from before
// route tokens made its token, once, under the lock: a change that renders
// the route from the record without resolving it again (a canary's steps,
// a scale) would otherwise render a split with no probe rule, whose
// Tug-Split never answers, and end "accepted" after a wait.
func withRouteToken(ctx context.Context, store *app.Store, a *app.App) (*app.App, error) {
	if a.Route == nil || a.Route.Gateway == "" || a.Route.Token != "" {
		return a, nil
	}
	return store.UpdateApp(ctx, a.Name, func(x *app.App) error {
		if x.Route != nil && x.Route.Gateway != "" && x.Route.Token == "" {
			x.Route.Token = route.NewToken()
		}
		return nil
	})
}
