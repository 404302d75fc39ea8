package service

import (
	"context"

	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/lock"
)

// LockKey is what a service's lock is named for: the lock is a Lease
// tug-lock-service.NAME, taken as an app's deploy lock is (deploy.Hold),
// so two tugs changing one service's credentials or bindings at once (two
// rotates, a rotate and a remove) take turns instead of overwriting each
// other's passwords and record.
// The dot keeps it apart from every app's lock (app names are DNS labels).
func LockKey(name string) string { return lock.ServicePrefix + name }

// Hold takes the service's lock (waiting up to d.WaitLock): rotate,
// remove and update take it here; bind and unbind around their release,
// before the app's lock. The context it returns ends when the lock is
// lost, so the work stops with it; unlock releases the lock.
func (d Deps) Hold(ctx context.Context, name string) (context.Context, func(), error) {
	t, err := deploy.Hold(ctx, deploy.Deps{Client: d.Client, Namespace: d.Namespace, Progress: d.Progress, Holder: d.Holder, WaitLock: d.WaitLock}, LockKey(name))
	if err != nil {
		return nil, nil, err
	}
	return t.Ctx(), t.End, nil
}
