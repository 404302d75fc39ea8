package deploy

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
)

// Two releases side by side (a canary, blue-green) are pkg/canary's: this
// file is the seam. Rendering a record that names a canary is
// pkg/render's (render.Release must render whatever the record says:
// render/canary.go); what starts, moves, promotes, aborts and settles one
// is pkg/canary's, reached through Deps.SideBySide, and pkg/canary does
// its work through the Txn and the few steps of a rollout exported below.

// SideBySide runs a release beside the deployed one (pkg/canary's Runner).
type SideBySide interface {
	// Settle finishes, under the lock, what a stopped tug left of the
	// canary of t.App() (Txn.Read calls it when the record names one).
	Settle(t *Txn) error
	// Gate is what a change that rolls or reshapes the app does while a
	// canary runs: nil lets it go on, an error refuses it.
	Gate(t *Txn, what string) error
	// Start runs a canary or blue-green deploy once its release is stored
	// and counted (Options.Canary).
	Start(t *Txn, s *Started) (*Result, error)
	// Abort ends the canary for a rollback to the deployed release.
	Abort(t *Txn, start time.Time, why string) (*Result, error)
}

// Started is a canary or blue-green deploy whose release is stored and
// counted: what the rest of it (SideBySide.Start) needs of the rollout.
type Started struct {
	Next   *app.Release
	Config app.ConfigMap
	Opts   Options
	Begun  time.Time
	// Processes is the formation the change asks for once promoted
	// (tug.yaml's units); nil: the deployed release's.
	Processes map[string]app.Process
	// Failed is the Result of the release failed (with its release phase).
	Failed func() *Result
	// Interrupted records the release interrupted and returns the error.
	Interrupted func(err error) (*Result, error)
	// CutShort is the error of a start cut short whose canary could not
	// be undone: what is left is the next command's.
	CutShort func(err error) error
}

// NoSideBySideError is a change to an app that runs two releases side by
// side made through Deps without a SideBySide.
type NoSideBySideError struct{ App string }

func (e *NoSideBySideError) Error() string {
	return fmt.Sprintf("app %q runs two releases side by side, and this caller of pkg/deploy cannot settle them: set Deps.SideBySide (pkg/canary's Runner)", e.App)
}

// sideBySide is d's SideBySide, or an error for the app.
func (d Deps) sideBySide(appName string) (SideBySide, error) {
	if d.SideBySide == nil {
		return nil, &NoSideBySideError{App: appName}
	}
	return d.SideBySide, nil
}

// gate runs the SideBySide's Gate while a canary runs.
func gate(t *Txn, what string) error {
	if t.app.Canary == nil {
		return nil
	}
	s, err := t.d.sideBySide(t.app.Name)
	if err != nil {
		return err
	}
	return s.Gate(t, what)
}

// Update writes the app's record with fn and makes the result the Txn's
// record.
func (t *Txn) Update(fn func(*app.App) error) (*app.App, error) {
	a, err := t.store.UpdateApp(t.ctx, t.app.Name, fn)
	if err != nil {
		return nil, err
	}
	t.app = a
	return a, nil
}

// Reload reads the app's record again into the Txn.
func (t *Txn) Reload() error {
	a, err := t.store.GetApp(t.ctx, t.app.Name)
	if err == nil {
		t.app = a
	}
	return err
}

// Within is t on another context (a detached one, for cleanup).
func (t *Txn) Within(ctx context.Context) *Txn {
	c := *t
	c.ctx = ctx
	return &c
}

// Applied is what Apply applied, as the server returned it.
type Applied struct{ got *applied }

// Generations are the applied Deployments' generations, for a
// rollout.Watch.
func (a *Applied) Generations() map[string]int64 { return generations(a.got) }

// Routes are the applied HTTPRoutes, for Routes().Confirm.
func (a *Applied) Routes() []*unstructured.Unstructured { return a.got.routes }

// Apply server-side-applies objs in t (a render.Release, or part of it).
func (t *Txn) Apply(objs render.Objects) (*Applied, error) {
	got, err := applyObjects(t.ctx, t.d, objs, false)
	if err != nil {
		return nil, err
	}
	return &Applied{got: got}, nil
}

// RemoveStale deletes what of the app tug made that objs do not name
// (render.Objects.Keep aside).
func (t *Txn) RemoveStale(objs render.Objects) error {
	return removeStale(t.ctx, t.d, t.app.Name, objs)
}

// Restore rolls the app's units back to release v and waits for them
// (the record's processes become v's).
func (t *Txn) Restore(v int) error {
	_, err := restore(t.ctx, t.d, t.store, t.app, v, 0)
	if err != nil {
		return err
	}
	return t.Reload()
}

// MarkDeployed records r as the deployed release (previous superseded).
func (t *Txn) MarkDeployed(r *app.Release, previous int) error {
	if err := markDeployed(t.ctx, t.store, t.app, r, previous, 0); err != nil {
		return err
	}
	return t.Reload()
}

// RecordImageID stores the image a release deployed by tag runs (best
// effort).
func (t *Txn) RecordImageID(r *app.Release, id string) { recordImageID(t.ctx, t.d, t.store, r, id) }

// IdleTimeout is how long a rollout of r may make no progress.
func IdleTimeout(r *app.Release) time.Duration { return idleTimeout(0, r) }

// CanaryOptions make a deploy run its release beside the deployed one
// (Options.Canary).
type CanaryOptions struct {
	// Strategy is app.StrategyCanary or app.StrategyBlueGreen.
	Strategy string
	// Weight is a canary's share of requests to start with (1-99).
	Weight int
	// Steps are the shares a canary moves to by itself, one every
	// StepInterval while it stays healthy; after the last, it is promoted.
	Steps        []int
	StepInterval time.Duration
	// Keep is how long blue-green keeps the previous release's units (0:
	// until the next deploy).
	Keep time.Duration
}

// CanaryResult is a canary's state in a Result (docs/output.md).
type CanaryResult struct {
	Release  int    `json:"release"`
	Stable   int    `json:"stable"`
	Strategy string `json:"strategy"`
	// Weight is the canary's share of requests, in percent.
	Weight int   `json:"weight"`
	Units  int32 `json:"units"`
	// Exact: the router splits by weight; false: by units on the Service.
	Exact bool `json:"exact"`
	// Others are the process types that keep running Stable meanwhile.
	Others []string `json:"others,omitempty"`
}

// checkCanaryStart vets a canary or blue-green deploy before anything is
// stored.
func checkCanaryStart(d Deps, a *app.App, next *app.Release, c *CanaryOptions) error {
	if _, err := d.sideBySide(a.Name); err != nil {
		return err
	}
	switch {
	case a.Release == 0:
		return inputerr.Errorf("app %q has no deployed release for a %s to run beside; deploy it once without --strategy or --canary", a.Name, c.Strategy)
	case next.Processes[app.WebProcess] == "" && !hasProcess(next, app.WebProcess):
		return inputerr.Errorf("release v%d of app %q has no web process: a %s splits web requests", next.Version, a.Name, c.Strategy)
	case a.Processes[app.WebProcess].Units() == 0:
		return inputerr.Errorf("app %q runs no web unit: 'tug app scale %s web=1' first", a.Name, a.Name)
	case a.Maintenance || a.Unroutable:
		return inputerr.Errorf("app %q takes no requests now (maintenance or routable off): a %s needs them", a.Name, c.Strategy)
	}
	return nil
}

func hasProcess(r *app.Release, p string) bool { _, ok := r.Processes[p]; return ok }

// started is the rollout r, its release stored and counted, as
// SideBySide.Start takes it.
func (r *rolling) started() *Started {
	return &Started{Next: r.next, Config: r.config, Opts: r.opts, Begun: r.start, Processes: r.wanted,
		Failed: func() *Result {
			res := r.result(app.StatusFailed)
			res.ReleasePhase = r.phase
			return res
		},
		Interrupted: r.interrupted,
		CutShort: func(err error) error {
			return &InterruptedError{App: r.a.Name, Release: r.next.Version, Previous: r.previous, Units: unitsByRelease(r.t.ctx, r.t.d, r.a.Name), Err: err}
		},
	}
}
