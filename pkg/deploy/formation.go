package deploy

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
)

// Reshape changes an app's formation — unit counts, stop and start,
// restarts, autoscaling — without making a release: under the app's lock it
// updates the record with change, re-applies the deployed release's objects
// and waits until the units match (unless opts.NoWait). It is all or
// nothing: when the new units cannot start (they cannot be placed, they
// crash) the previous formation is put back and waited for, and the error, a
// *ReshapeError, says so with the failure's class's exit code.
func Reshape(ctx context.Context, d Deps, appName string, change func(*app.App) error, opts Options) (*Result, error) {
	return reshape(ctx, d, appName, RecordChange{Edit: change}, opts, false)
}

// ReshapeError is a formation change whose units did not come up, and what
// was put back.
type ReshapeError struct {
	App     string
	Failure *rollout.Failure
	// Restored is the formation put back, e.g. "web=3, worker=1"; "" when
	// nothing was restored.
	Restored string
	// RestoreErr is why putting the previous formation back failed, if it did.
	RestoreErr error
}

func (e *ReshapeError) Error() string {
	msg := fmt.Sprintf("changing the units of app %q failed: %s", e.App, e.Failure.Message)
	switch {
	case e.RestoreErr != nil:
		msg += fmt.Sprintf("; putting the previous units back also failed: %v", e.RestoreErr)
	case e.Restored != "":
		msg += "; restored the previous units (" + e.Restored + ")"
	}
	return msg
}

func (e *ReshapeError) Unwrap() error { return e.Failure }

// formation says an app's unit counts as "web=3, worker=1" (autoscaled
// processes as web=auto).
func formation(a *app.App) string {
	names := make([]string, 0, len(a.Processes))
	for n := range a.Processes {
		names = append(names, n)
	}
	app.SortProcesses(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p := a.Processes[n]
		if p.Autoscale != nil {
			parts = append(parts, n+"=auto")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%d", n, p.Units()))
	}
	return strings.Join(parts, ", ")
}

// Configure changes what the app record says about traffic (domains,
// certificates, routable, maintenance, allowed sources, registry) and
// re-applies the deployed release like Reshape. Before the first deploy it
// only stores the change, which the first deploy then applies.
func Configure(ctx context.Context, d Deps, appName string, change func(*app.App) error, opts Options) (*Result, error) {
	return reshape(ctx, d, appName, RecordChange{Edit: change}, opts, true)
}

// RecordChange is a record change with a side effect, for ConfigureChange.
type RecordChange struct {
	// Edit changes the record and nothing else: it runs once before the
	// lock, to check the change, and again under it on every try of the
	// record's update (a conflict retries).
	Edit func(*app.App) error
	// Locked, when set, runs once with the lock held, after the checking
	// Edit and before the record is written: the side effects the change
	// needs (a certificate's Secret) or checks too costly to retry (a LIST).
	// It gets the record as checked. When the record is then not written,
	// undo (if not nil) takes the side effect back.
	Locked func(ctx context.Context, a *app.App) (undo func(context.Context), err error)
}

// ConfigureChange is Configure with a side effect: c.Locked runs only once
// the app's lock is held, and is undone when the record is not written, so
// a change that fails (a lock someone else holds, a bad record) leaves
// nothing behind.
func ConfigureChange(ctx context.Context, d Deps, appName string, c RecordChange, opts Options) (*Result, error) {
	return reshape(ctx, d, appName, c, opts, true)
}

func reshape(ctx context.Context, d Deps, appName string, c RecordChange, opts Options, storeOnlyBeforeDeploy bool) (*Result, error) {
	start := time.Now()
	// Check the change on the record as it is before taking the lock, so
	// bad input fails fast and leaves no trace; the same checks run again
	// on the record read under the lock, the only copy written back.
	check := func(a *app.App) error {
		if err := c.Edit(a.Copy()); err != nil {
			return err
		}
		if a.Release == 0 && !storeOnlyBeforeDeploy {
			return fmt.Errorf("app %q has not been deployed yet; deploy it first with 'tug app deploy %s --image IMAGE'", appName, appName)
		}
		return nil
	}
	before, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	if err := check(before); err != nil {
		return nil, err
	}
	t, err := Begin(ctx, d, appName, check)
	if err != nil {
		return nil, err
	}
	defer t.End()
	if !storeOnlyBeforeDeploy {
		// a change of units; traffic changes keep the split (render.Release)
		if err := gate(t, "changing the units"); err != nil {
			return nil, err
		}
	}
	s := &reshaping{t: t, c: c, opts: opts, start: start, storeOnly: storeOnlyBeforeDeploy}
	if err := s.guard(); err != nil {
		return nil, err
	}
	a, err := s.write()
	if err != nil {
		return nil, err
	}
	if a.Release == 0 {
		return &Result{App: a.Name, Namespace: a.Namespace, Status: app.StatusStaged, Processes: []ProcessResult{}}, nil
	}
	return s.roll(a)
}

// reshaping is a change of the app's record under way in txn t: it rolls
// out with the release the app runs. Its methods are its steps in order.
type reshaping struct {
	t         *Txn
	c         RecordChange
	opts      Options
	start     time.Time
	storeOnly bool // before the first deploy the change is only stored
	// the release the app runs (nil before its first deploy) and its config
	r      *app.Release
	config app.ConfigMap
	// the formation the change started from, and what the router served
	formationBefore map[string]app.Process
	routedBefore    *app.App
}

// guard stops the change before anything is written when objects of the
// changed record exist and are not the app's (see guardOwned).
func (s *reshaping) guard() error {
	ctx, d, a := s.t.ctx, s.t.d, s.t.app
	if a.Release == 0 {
		return nil
	}
	var err error
	if s.r, s.config, err = s.t.store.GetRelease(ctx, a.Name, a.Release); err != nil {
		return err
	}
	changed := a.Copy()
	changed.Route = d.Routes().Want(ctx, d.Settings, a, s.r.Pool)
	if err := s.c.Edit(changed); err != nil {
		return err
	}
	if err := guardOwned(ctx, d, d.Rendering(changed, s.r, s.config)); err != nil {
		return err
	}
	if leavesPage(a, changed, s.r) && !s.opts.NoWait {
		return s.t.Explain(awaitServing(ctx, d, changed, s.r, idleTimeout(s.opts.Timeout, s.r)))
	}
	return nil
}

// write runs the change's side effect, then writes the changed record
// with the route as the cluster settings give it now (re-resolved like
// with every rollout); a record not written undoes the side effect.
func (s *reshaping) write() (*app.App, error) {
	t, ctx, d, a := s.t, s.t.ctx, s.t.d, s.t.app
	var undo func(context.Context)
	if s.c.Locked != nil {
		var err error
		if undo, err = s.c.Locked(ctx, a); err != nil {
			return nil, err
		}
	}
	var want *app.Route
	if s.r != nil {
		want = d.Routes().Want(ctx, d.Settings, a, s.r.Pool)
	}
	s.routedBefore = a.Copy()
	changed, err := t.store.UpdateApp(ctx, a.Name, func(x *app.App) error {
		s.formationBefore = maps.Clone(x.Processes)
		if s.r != nil {
			x.Route = want
		}
		return s.c.Edit(x)
	})
	if err != nil {
		if undo != nil {
			uctx, cancel := Detached(ctx)
			undo(uctx)
			cancel()
		}
		return nil, t.Explain(err)
	}
	return changed, nil
}

// roll applies the changed record with the release the app runs and waits
// for its units and then the router; a formation that cannot run is put
// back (all or nothing) unless --no-rollback.
func (s *reshaping) roll(a *app.App) (*Result, error) {
	t, ctx, d, opts := s.t, s.t.ctx, s.t.d, s.opts
	r, config, err := s.running(a)
	if err != nil {
		return nil, t.Explain(err)
	}
	withTimeout(&opts, r)
	if err := t.Lost(); err != nil {
		return nil, err
	}
	objs := d.Rendering(a, r, config)
	got, err := applyObjects(ctx, d, objs, false)
	if err != nil {
		return nil, t.Explain(err)
	}
	stale := objs
	leaving := leavesPage(s.routedBefore, a, r)
	if leaving {
		// the page answers until the router serves the units (unpage.go)
		stale.Maintenance = render.Maintenance(s.routedBefore)
	}
	if err := removeStale(ctx, d, a.Name, stale); err != nil {
		return nil, t.Explain(err)
	}
	dropPage := func() error {
		if !leaving {
			return nil
		}
		return pageDrop(ctx, d, a.Name)
	}
	res := NewResult(a, r, app.StatusDeployed, s.start)
	res.URLs = app.URLs(a)
	if opts.NoWait {
		res.Status = StatusApplied
		return res, t.Explain(dropPage())
	}
	err = (&rollout.Watch{Client: d.Client, Namespace: d.Namespace, App: a.Name, Release: a.Release, Purpose: rollout.PurposeScale,
		Generations: generations(got), Idle: opts.Timeout, Progress: d.Progress}).Wait(ctx)
	res.DurationMS = time.Since(s.start).Milliseconds()
	f, ok := err.(*rollout.Failure)
	if !ok {
		if err == nil {
			res.Routing, err = d.Routes().Confirm(ctx, d.Progress, s.routedBefore, a, got.routes, opts.Probe)
			if err == nil {
				err = dropPage()
			}
			res.DurationMS = time.Since(s.start).Milliseconds()
		}
		return res, t.Explain(err)
	}
	res.Failure = f
	if s.storeOnly || opts.NoRollback {
		_ = dropPage() // the record says the page is gone; the failure is what to report
		return res, f
	}
	return res, s.putBack(a, r, config, res, f, opts.Timeout)
}

// running is the release the app runs, with its config: the one the
// reshaping read, unless the record names another by now.
func (s *reshaping) running(a *app.App) (*app.Release, app.ConfigMap, error) {
	if s.r != nil && s.r.Version == a.Release {
		return s.r, s.config, nil
	}
	return s.t.store.GetRelease(s.t.ctx, a.Name, a.Release)
}

// putBack makes a reshaping that failed with f all or nothing: it puts
// the previous formation back, still under the lock (t.ctx): a restore
// must not write once another tug may hold it. res then says what runs;
// the error says whether the restore worked.
func (s *reshaping) putBack(a *app.App, r *app.Release, config app.ConfigMap, res *Result, f *rollout.Failure, timeout time.Duration) error {
	t := s.t
	rerr := &ReshapeError{App: a.Name, Failure: f}
	rctx, cancel := context.WithTimeout(t.ctx, timeout)
	defer cancel()
	prev, err := restoreFormation(rctx, t.d, t.store, a.Name, r, config, s.formationBefore, timeout)
	if err != nil {
		rerr.RestoreErr = t.Explain(err)
	} else {
		rerr.Restored = formation(prev)
		res.Processes = NewResult(prev, r, app.StatusDeployed, s.start).Processes
	}
	res.DurationMS = time.Since(s.start).Milliseconds()
	return rerr
}

// restoreFormation writes procs back into the app's record, re-applies
// release r with them and waits for its units.
func restoreFormation(ctx context.Context, d Deps, store *app.Store, appName string, r *app.Release, config app.ConfigMap, procs map[string]app.Process, timeout time.Duration) (*app.App, error) {
	d.Progress.Update("putting the previous units back")
	a, err := store.UpdateApp(ctx, appName, func(x *app.App) error { x.Processes = maps.Clone(procs); return nil })
	if err != nil {
		return nil, err
	}
	objs := d.Rendering(a, r, config)
	got, err := applyObjects(ctx, d, objs, false)
	if err != nil {
		return nil, err
	}
	if err := removeStale(ctx, d, a.Name, objs); err != nil {
		return nil, err
	}
	err = (&rollout.Watch{Client: d.Client, Namespace: d.Namespace, App: a.Name, Release: a.Release, Purpose: rollout.PurposeScale,
		Generations: generations(got), Idle: timeout, Progress: d.Progress, CountsOnly: true}).Wait(ctx)
	return a, err
}

// UnsetAutoscale is the formation change of `tug app autoscale unset`: proc
// stops autoscaling and keeps the units its autoscaler reached, read from
// its Deployment (the recorded count when there is none).
func UnsetAutoscale(ctx context.Context, client kubernetes.Interface, namespace, proc string) func(*app.App) error {
	return func(a *app.App) error {
		var current *int32
		if d, err := client.AppsV1().Deployments(namespace).Get(ctx, render.DeploymentName(a.Name, proc), metav1.GetOptions{}); err == nil {
			current = d.Spec.Replicas
		}
		return a.UnsetAutoscale(proc, current)
	}
}
