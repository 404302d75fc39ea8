// Package deploy makes the changes under an app's lock: it takes the
// lock, reads and reconciles the record, applies the objects pkg/render
// makes from the app and a release with server-side apply, watches the
// rollout, explains a failure and rolls back.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/text"
)

// Deps are what a rollout needs from outside.
type Deps struct {
	Client    kubernetes.Interface
	Namespace string
	Progress  progress.Reporter
	// Holder is who holds the app's lock while the change runs; its User
	// is the author of the releases the change makes.
	Holder lock.Holder
	// ReleasePhase runs a release's release-phase command (releasephase.go);
	// needed only by releases that have one.
	ReleasePhase ReleasePhaseRunner
	// WaitLock is how long to wait for the app's lock while another tug
	// holds it (--wait-lock); 0 fails at once with a *lock.HeldError.
	WaitLock time.Duration
	// LockTiming is how the app's lock keeps time; the zero value is the
	// defaults (tests shorten it).
	LockTiming lock.Timing
	// MaintenanceImage is the image of the page that answers while the app
	// is in maintenance, recorded when it is turned on; "" is
	// render.MaintenanceImage. cmd sets it from $TUG_MAINTENANCE_IMAGE.
	MaintenanceImage string
	// Dynamic reaches the Gateway API's HTTPRoutes (pkg/route); nil on a
	// client that routes only through Ingresses.
	Dynamic dynamic.Interface
	// Settings are the cluster's settings (pkg/clustersettings) as read by
	// the command; nil leaves the app's route as its record has it.
	Settings *clustersettings.Stored
	// Warn tells the user something that is not an error (an allow list
	// the router does not enforce); nil says nothing. A change may say the
	// same more than once (a rollout and its restore): cmd prints each
	// message once per command.
	Warn func(msg string)
	// Note tells what only -v shows (how the app's Gateway was found, or
	// why none was); nil says nothing.
	Note func(msg string)
	// Gateways remembers the Gateway found for the namespace's apps when
	// the cluster settings name none (route.Finder), for the whole
	// command; nil looks again each time the route is resolved.
	Gateways *route.Finder
	// SideBySide runs a release beside the deployed one (pkg/canary's
	// Runner); nil refuses every change to an app that runs a canary
	// (*NoSideBySideError).
	SideBySide SideBySide
	// Kinds are the kinds of the app's objects that changes apply, guard,
	// prune and remove (pkg/owned); nil is Kinds. A test adds a
	// kind here.
	Kinds owned.Table
	// Render renders release r of app a (nil: render.Release); a test that
	// adds a kind to Kinds renders it here (render.Objects.Extra).
	Render func(a *app.App, r *app.Release, config app.ConfigMap) render.Objects
}

// Rendering is release r of app a as d renders it: d.Render, or
// render.Release.
func (d Deps) Rendering(a *app.App, r *app.Release, config app.ConfigMap) render.Objects {
	if d.Render != nil {
		return d.Render(a, r, config)
	}
	return render.Release(a, r, config)
}

// OwnedKinds is d.Kinds, or Kinds.
func (d Deps) OwnedKinds() owned.Table {
	if d.Kinds != nil {
		return d.Kinds
	}
	return Kinds()
}

// rememberBuild writes opts.RememberBuild in the record, under the lock,
// before anything rolls: the build worked with them whatever the rollout
// does. A dry run writes nothing.
func rememberBuild(t *Txn, opts Options) error {
	b := opts.RememberBuild
	if b == nil || opts.DryRun || t.held == nil || (t.app.Build != nil && t.app.Build.Equal(*b)) {
		return nil
	}
	_, err := t.Update(func(x *app.App) error {
		s := *b
		x.Build = &s
		return nil
	})
	if err != nil {
		return fmt.Errorf("remembering the build settings: %w (not remembered: pass them again)", t.Explain(err))
	}
	return nil
}

// Options tune one rollout.
type Options struct {
	// RememberBuild, when set, are the build settings a build from source
	// just worked with (imagebuild.Plan.Remember), written in the record under
	// the lock so the next deploy from source builds the same way.
	RememberBuild *app.BuildSettings
	// Timeout is how long the rollout may go without progress before it
	// fails; it restarts whenever a unit moves. Default 10m.
	Timeout    time.Duration
	NoRollback bool
	NoWait     bool
	DryRun     bool
	// NoRestart stores the release without rolling it out; it runs at the
	// next deploy (env changes with --no-restart).
	NoRestart  bool
	HistoryMax int
	// SkipReleasePhase rolls out without running the release's
	// release-phase command.
	SkipReleasePhase bool
	// Probe is what a request through the router must get for the change
	// to count as served (routed.go); the default: the app answers.
	Probe route.Probe
	// Canary runs the release beside the deployed one (pkg/canary); nil:
	// a rolling update of every unit.
	Canary *CanaryOptions
	// Rollback is set by a rollback to release RollbackTo (0: the one
	// before): while a canary runs, it aborts the canary instead.
	Rollback   bool
	RollbackTo int
	// SkipUnchanged makes no release when the next one would run exactly
	// what runs (rolling.unchanged): a deploy of a build from source, whose
	// unchanged source builds the same image digest. The result is the
	// running release with Unchanged set.
	SkipUnchanged bool
}

// Change builds the next release from the app and its base release (the
// newest release that is deployed or staged; nil before the first) and that
// release's config. It returns the new release's image, processes, kind and
// message, and its config. Version, author, time and status are filled in by
// Roll.
type Change func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error)

// Result is what a rollout did; its JSON shape is documented in docs/output.md.
// StatusApplied is a Result's status when the change was applied and not
// waited for (--no-wait): the record names the release, whether its units
// run it is not known. A release record never has it.
const StatusApplied app.Status = "applied"

type Result struct {
	App          string           `json:"app"`
	Namespace    string           `json:"namespace"`
	Release      int              `json:"release"`
	Status       app.Status       `json:"status"`
	Image        string           `json:"image"`
	Processes    []ProcessResult  `json:"processes"`
	RolledBackTo int              `json:"rolledBackTo,omitempty"`
	Failure      *rollout.Failure `json:"failure,omitempty"`
	// ReleasePhase is what became of the release's release phase; omitted
	// when the release has none to run (releasephase.go).
	ReleasePhase *ReleasePhaseResult `json:"releasePhase,omitempty"`
	Plan         []string            `json:"plan,omitempty"` // dry-run: what would change
	// URLs are where the app answers: its own URL under the cluster's apps
	// domain, then its domains (deploy.URLs).
	URLs []string `json:"urls,omitempty"`
	// Routing says how far its routes through the Gateway got: served,
	// accepted, pending (routed.go); omitted without a Gateway.
	Routing string `json:"routing,omitempty"`
	// RemovedProcesses names the process types the release drops (their
	// units stop), sorted; omitted when none.
	RemovedProcesses []string `json:"removedProcesses,omitempty"`
	// Staged, on a dry run, says the release would only be stored, to
	// apply at the next deploy (--no-restart, or an app never deployed).
	Staged bool `json:"staged,omitempty"`
	// UnitsRestarted, set by a rollout settings change (ChangeRollout) and
	// a job change (ChangeJobs, always false) only, says whether the change replaced the units (a new release) or
	// took effect on the running release in place, units untouched.
	UnitsRestarted *bool `json:"unitsRestarted,omitempty"`
	// Canary is the release running beside the deployed one, while one
	// runs (pkg/canary).
	Canary *CanaryResult `json:"canary,omitempty"`
	// Build is the build from source that made the release's image, set
	// by the caller that ran it (pkg/imagebuild: Result.Summary); omitted for
	// a deploy of an image.
	Build *BuildSummary `json:"build,omitempty"`
	// Unchanged says the change would have run exactly what runs, so no
	// release was made: Release is the running one (Options.SkipUnchanged).
	Unchanged  bool  `json:"unchanged,omitempty"`
	DurationMS int64 `json:"durationMs"`
}

// BuildSummary is a build from source as a deploy's result shows it.
type BuildSummary struct {
	Image string `json:"image"`
	// BuiltWith and Upload are a Cloud Native Buildpacks build's: its
	// builder and buildpacks, and the layers its push sent against those
	// the registry held in the previous image (nil when unknown).
	BuiltWith *app.BuiltWith   `json:"builtWith,omitempty"`
	Upload    *protocol.Upload `json:"upload,omitempty"`
}

// ProcessResult is one process of the release.
type ProcessResult struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Units   int32  `json:"units"`
}

// Error is a failed rollout: the result (with the failure and whether it
// was rolled back) and the exit code of the failure's class.
type Error struct {
	Result *Result
	// RollbackErr is why restoring the previous release failed, if it did.
	RollbackErr error
	// RollbackTo is the release that restore tried to bring back.
	RollbackTo int
	// Kept says the failed release was left in place (NoRollback); Previous
	// is the release that ran before it (0: none).
	Kept     bool
	Previous int
	// Moved says the failed release was the new copy of a move, which
	// removes it and says where the app serves: nothing is added here.
	Moved bool
	// CanaryAborted: the failed release was a canary, aborted, and
	// Previous keeps every request; CanaryKept: a promote failed and the
	// canary runs beside Previous again.
	CanaryAborted, CanaryKept bool
}

func (e *Error) Error() string {
	r := e.Result
	msg := fmt.Sprintf("release v%d of app %q failed: %s", r.Release, r.App, r.Failure.Message)
	switch {
	case e.Moved:
	case e.CanaryAborted:
		msg += fmt.Sprintf("; the canary was aborted: v%d keeps every request", e.Previous)
	case e.CanaryKept && e.RollbackErr == nil:
		msg += fmt.Sprintf("; the promote was undone: v%d's units are back and the canary runs beside them", e.Previous)
	case e.RollbackErr != nil:
		msg += fmt.Sprintf("; rolling back to v%d also failed: %v", e.RollbackTo, e.RollbackErr)
	case r.RolledBackTo > 0:
		msg += fmt.Sprintf("; rolled back to v%d", r.RolledBackTo)
	case e.Kept && e.Previous > 0:
		msg += fmt.Sprintf("; not rolled back (--no-rollback): its units are left for inspection beside what still runs of v%d; 'tug release rollback %s v%d' puts v%d back", e.Previous, r.App, e.Previous, e.Previous)
	case e.Kept:
		msg += fmt.Sprintf("; not rolled back (--no-rollback): its units are left for inspection; 'tug app remove %s' or a new deploy clears them", r.App)
	case r.Status == app.StatusFailed:
		msg += "; nothing to roll back to"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.RollbackErr }

// Roll makes a new release of an app with change and rolls it out: take the
// app's lock, store the release, apply its objects, watch until its units run
// or fail, and on failure restore the last good release. Every deploy, env
// change and rollback goes through here.
func Roll(ctx context.Context, d Deps, appName string, change Change, opts Options) (*Result, error) {
	start := time.Now()
	if opts.DryRun {
		store := &app.Store{Client: d.Client, Namespace: d.Namespace}
		a, err := store.GetApp(ctx, appName)
		if err != nil {
			return nil, err
		}
		// Number the release as the real run would: after any release a
		// killed tug stored without counting it (Reconcile counts it under
		// the lock; a dry run takes no lock and writes nothing).
		rels, err := store.ListReleases(ctx, appName)
		if err != nil {
			return nil, err
		}
		for _, r := range rels {
			a.LastRelease = max(a.LastRelease, r.Version)
		}
		return roll(unlocked(ctx, d, a), change, opts, start)
	}
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return nil, notRemembered(err, opts)
	}
	defer t.End()
	return roll(t, change, opts, start)
}

// notRemembered says, of a roll that stopped before it could take the
// lock and write opts.RememberBuild (interrupted, the lock held, the
// record unreadable), that the build's settings are not in the record:
// the next deploy from source would not build the same way unless they
// are passed again.
func notRemembered(err error, opts Options) error {
	if opts.RememberBuild == nil || opts.DryRun {
		return err
	}
	return fmt.Errorf("%w (build settings not remembered: pass them again)", err)
}

// roll is Roll in txn t: the app's lock is held (none for a dry run) and
// t.app was read and reconciled under it. Everything it asks of the
// cluster runs on t.ctx, so a lost lock stops it at the next request;
// what records how it ended runs on a detached context. Its steps are
// rolling's methods, in the order below.
func roll(t *Txn, change Change, opts Options, start time.Time) (*Result, error) {
	if res, done, err := beforeRoll(t, opts, start); done {
		return res, err
	}
	r, err := newRolling(t, change, opts, start)
	if err != nil {
		return nil, err
	}
	if res, done, err := r.shortcut(); done {
		return res, err
	}
	return r.run()
}

// beforeRoll is what comes before a release is made: the build settings
// to remember, and a running canary's say (a rollback aborts it; another
// change waits for it). done says the change ends there.
func beforeRoll(t *Txn, opts Options, start time.Time) (res *Result, done bool, err error) {
	if err := rememberBuild(t, opts); err != nil {
		return nil, true, err
	}
	if t.app.Canary == nil || opts.DryRun {
		return nil, false, nil
	}
	s, err := t.d.sideBySide(t.app.Name)
	if err != nil {
		return nil, true, err
	}
	if opts.Rollback && (opts.RollbackTo == 0 || opts.RollbackTo == t.app.Release) {
		res, err := s.Abort(t, start, "rolled back")
		return res, true, err
	}
	if err := s.Gate(t, "this change"); err != nil {
		return nil, true, err
	}
	return nil, false, nil
}

// shortcut ends a change that rolls nothing out: a dry run, a change
// staged for the next rollout, a build of unchanged source.
func (r *rolling) shortcut() (res *Result, done bool, err error) {
	t, start := r.t, r.start
	switch {
	case r.opts.DryRun:
		r.a.Route = r.want
		res, err := dryRun(t.ctx, t.d, t.store, r.a, r.base, r.baseConfig, r.next, r.config, r.unitsBefore, r.opts, start)
		return res, true, err
	case r.opts.NoRestart || r.next.Image == "":
		res, err := r.stage()
		return res, true, err
	case r.opts.SkipUnchanged && r.opts.Canary == nil && r.unchanged():
		res := NewResult(r.a, r.base, app.StatusDeployed, start)
		res.Unchanged, res.URLs = true, app.URLs(r.a)
		return res, true, nil
	}
	return nil, false, nil
}

// run stores the release and rolls it out: its steps are rolling's
// methods, in the order below.
func (r *rolling) run() (*Result, error) {
	t := r.t
	if c := r.opts.Canary; c != nil {
		if err := checkCanaryStart(t.d, r.a, r.next, c); err != nil {
			return nil, err
		}
		r.keepFormationForPromote()
	}
	if err := r.store(); err != nil {
		return nil, err
	}
	// From here every way out records how the rollout ended: a release is
	// never left pending by a tug that is still running.
	if out := r.count(); out != nil {
		return out.res, out.err
	}
	if out := r.releasePhase(); out != nil {
		return out.res, out.err
	}
	// The phase may have run for minutes: the lock must still be ours
	// before anything of the release is applied.
	if err := t.Lost(); err != nil {
		return r.interrupted(err)
	}
	if r.opts.Canary != nil {
		return t.d.SideBySide.Start(t, r.started())
	}
	got, out := r.apply()
	if out != nil {
		return out.res, out.err
	}
	failure, out := r.wait(got)
	if out != nil {
		return out.res, out.err
	}
	if failure == nil {
		return r.deployed(got)
	}
	return r.failed(failure)
}

// keepFormationForPromote keeps the record's formation the deployed
// release's until a canary's promote (only web units start beside it);
// the one the change asks for (tug.yaml's units) waits on the canary.
func (r *rolling) keepFormationForPromote() {
	if !maps.EqualFunc(r.a.Processes, r.unitsBefore, func(a, b app.Process) bool { return a.Equal(b) }) {
		r.wanted = maps.Clone(r.a.Processes)
	}
	r.a.Processes = maps.Clone(r.unitsBefore)
}

// rolling is one release's rollout under way.
type rolling struct {
	t     *Txn
	opts  Options
	start time.Time
	// a is the record as the rollout last wrote it.
	a           *app.App
	base, next  *app.Release
	baseConfig  app.ConfigMap
	config      app.ConfigMap
	removed     []string
	unitsBefore map[string]app.Process
	// wanted is the formation a canary's promote applies (tug.yaml's
	// units), when the change asks for another than unitsBefore.
	wanted       map[string]app.Process
	givenTimeout time.Duration
	previous     int
	runsPhase    bool
	phase        *ReleasePhaseResult
	// want is the app's route as the cluster settings give it now.
	want *app.Route
}

// ended is how a step ended the rollout; nil: it goes on.
type ended struct {
	res *Result
	err error
}

// newRolling builds the next release with change from the base release.
func newRolling(t *Txn, change Change, opts Options, start time.Time) (*rolling, error) {
	a := t.app
	base, baseConfig, err := BaseRelease(t.ctx, t.store, a)
	if err != nil {
		return nil, err
	}
	// before the change, which may set unit counts (tug.yaml's units)
	unitsBefore := maps.Clone(a.Processes)
	next, config, err := change(a, base, baseConfig)
	if err != nil {
		return nil, err
	}
	next.App, next.Version, next.CreatedAt, next.Author = a.Name, a.LastRelease+1, time.Now().UTC(), t.d.Holder.User
	r := &rolling{t: t, start: start, a: a, base: base, baseConfig: baseConfig, next: next, config: config,
		removed: RemovedProcesses(base, next), unitsBefore: unitsBefore}
	WithProcesses(a, next)
	r.want = t.d.Routes().Want(t.ctx, t.d.Settings, a, next.Pool)
	// A restore after a failure waits by the restored release's own
	// deploy-timeout, unless the command gave one.
	r.givenTimeout = opts.Timeout
	withTimeout(&opts, next)
	r.opts = opts
	return r, nil
}

// result is the rollout's result with status st.
func (r *rolling) result(st app.Status) *Result {
	res := NewResult(r.a, r.next, st, r.start)
	res.RemovedProcesses = r.removed
	return res
}

// stage stores the release only: its config waits for the next rollout.
func (r *rolling) stage() (*Result, error) {
	ctx, store, next := r.t.ctx, r.t.store, r.next
	next.Status = app.StatusStaged
	if err := store.CreateRelease(ctx, next, r.config); err != nil {
		return nil, r.t.Explain(err)
	}
	if _, err := store.UpdateApp(ctx, r.a.Name, func(x *app.App) error { x.LastRelease = next.Version; return nil }); err != nil {
		return nil, r.t.Explain(err)
	}
	return r.result(app.StatusStaged), nil
}

// store stores the release, pending, once nothing is in the way: an
// object that is not the app's leaves no trace.
func (r *rolling) store() error {
	t, a, next := r.t, r.a, r.next
	r.previous = a.Release
	next.Status = app.StatusPending
	a.Route = r.want
	r.runsPhase = runsReleasePhase(a, r.base, next)
	if r.runsPhase && !r.opts.SkipReleasePhase && t.d.ReleasePhase == nil {
		return fmt.Errorf("release v%d of app %q has a release-phase command but nothing can run it", next.Version, a.Name)
	}
	if err := guardOwned(t.ctx, t.d, t.d.Rendering(a, next, r.config)); err != nil {
		return t.Explain(err)
	}
	return t.Explain(t.store.CreateRelease(t.ctx, next, r.config))
}

// interrupted records how a rollout cut short ended and says what runs.
func (r *rolling) interrupted(err error) (*Result, error) {
	t, name, v := r.t, r.next.App, r.next.Version
	err = t.Explain(err)
	if settle(t.ctx, t.store, name, v, err) == app.StatusDeployed {
		return nil, err
	}
	return nil, &InterruptedError{App: name, Release: v, Previous: r.previous, Units: unitsByRelease(t.ctx, t.d, name), Err: err}
}

// count records the release in the app's record, with its unit counts.
func (r *rolling) count() *ended {
	procs, v, want := r.a.Processes, r.next.Version, r.want
	a, err := r.t.store.UpdateApp(r.t.ctx, r.a.Name, func(x *app.App) error {
		x.LastRelease = v
		x.Processes = procs
		x.Route = want
		return nil
	})
	if err != nil {
		res, err := r.interrupted(err)
		return &ended{res, err}
	}
	r.a = a
	return nil
}

// releasePhase runs the release's release phase, before anything of the
// release is applied: a failing phase (a migration, say) leaves what runs
// untouched, config included.
func (r *rolling) releasePhase() *ended {
	switch {
	case !r.runsPhase:
		return nil
	case r.opts.SkipReleasePhase:
		r.phase = &ReleasePhaseResult{Command: SanitizeCommand(r.next.ReleaseCommand), Status: PhaseSkipped}
		return nil
	}
	t, a, next := r.t, r.a, r.next
	pr, err := releasePhase(t.ctx, t.d, a, next, r.config, r.previous)
	r.phase = pr
	if err == nil {
		return nil
	}
	if t.cause() != nil {
		res, err := r.interrupted(err)
		return &ended{res, err}
	}
	wctx, cancel := Detached(t.ctx)
	defer cancel()
	_, _ = t.store.UpdateApp(wctx, a.Name, func(x *app.App) error { x.Processes = r.unitsBefore; return nil })
	reason := "release phase: " + err.Error()
	failed := (*ReleasePhaseError)(nil)
	if errors.As(err, &failed) {
		reason = failed.Reason()
	}
	_ = t.store.SetReleaseStatus(wctx, a.Name, next.Version, app.StatusFailed, reason)
	_ = prune(wctx, t.store, a, r.previous)
	if failed == nil {
		return &ended{nil, err}
	}
	a.Processes = r.unitsBefore
	res := r.result(app.StatusFailed)
	res.ReleasePhase = pr
	res.Failure = releasePhaseFailure(failed)
	failed.Result = res
	return &ended{res, err}
}

// apply applies the release's objects and removes what it no longer has.
func (r *rolling) apply() (*applied, *ended) {
	t, a, next := r.t, r.a, r.next
	objs := t.d.Rendering(a, next, r.config)
	t.d.Progress.Update(fmt.Sprintf("applying release v%d", next.Version))
	got, err := applyObjects(t.ctx, t.d, objs, false)
	if err != nil {
		if t.cause() != nil {
			res, err := r.interrupted(err)
			return nil, &ended{res, err}
		}
		// the API server refused the objects: the release failed
		wctx, cancel := Detached(t.ctx)
		_ = t.store.SetReleaseStatus(wctx, a.Name, next.Version, app.StatusFailed, err.Error())
		cancel()
		return nil, &ended{nil, err}
	}
	if err := removeStale(t.ctx, t.d, a.Name, objs); err != nil {
		res, err := r.interrupted(err)
		return nil, &ended{res, err}
	}
	return got, nil
}

// wait waits for the release's units (unless --no-wait): nil when they
// run, their failure when they cannot.
func (r *rolling) wait(got *applied) (*rollout.Failure, *ended) {
	t, next := r.t, r.next
	interrupted := func(err error) *ended {
		res, err := r.interrupted(err)
		return &ended{res, err}
	}
	var failure *rollout.Failure
	if !r.opts.NoWait {
		ro := &rollout.Watch{Client: t.d.Client, Namespace: t.d.Namespace, App: r.a.Name, Release: next.Version,
			Generations: generations(got), Idle: r.opts.Timeout, Progress: t.d.Progress}
		err := ro.Wait(t.ctx)
		if err == nil {
			recordImageID(t.ctx, t.d, t.store, next, ro.ImageID(t.ctx))
		}
		if lost := t.Lost(); lost != nil {
			return nil, interrupted(lost)
		}
		if err != nil && !errors.As(err, &failure) {
			return nil, interrupted(err) // Ctrl-C, SIGTERM, or the API failed
		}
	}
	if err := t.Lost(); err != nil {
		return nil, interrupted(err)
	}
	return failure, nil
}

// deployed records that the units run the release, then waits for the
// router to serve it (unless --no-wait).
func (r *rolling) deployed(got *applied) (*Result, error) {
	t, a, next := r.t, r.a, r.next
	if err := markDeployed(t.ctx, t.store, a, next, r.previous, r.opts.HistoryMax); err != nil {
		// The units run the release: record that once more with a
		// fresh deadline (the command's may be gone, or one request
		// timed out). Once the record names the release it is
		// deployed, even if a status write after that failed.
		// Not once the lock is lost: another tug may have changed the
		// app since, and the next lock taker's Reconcile records it.
		again := t.Lost()
		if again == nil {
			wctx, cancel := Detached(t.ctx)
			again = markDeployed(wctx, t.store, a, next, r.previous, r.opts.HistoryMax)
			cancel()
		}
		if again != nil && settle(t.ctx, t.store, next.App, next.Version, err) != app.StatusDeployed {
			return nil, t.Explain(err)
		}
	}
	res := r.result(app.StatusDeployed)
	if r.opts.NoWait {
		res.Status = StatusApplied
	}
	res.ReleasePhase = r.phase
	res.URLs = app.URLs(a)
	var rerr error
	if !r.opts.NoWait {
		res.Routing, rerr = t.d.Routes().Confirm(t.ctx, t.d.Progress, nil, a, got.routes, r.opts.Probe)
	}
	res.DurationMS = time.Since(r.start).Milliseconds()
	return res, t.Explain(rerr)
}

// failed records why the rollout failed, then puts back what ran before
// (unless --no-rollback).
func (r *rolling) failed(failure *rollout.Failure) (*Result, error) {
	t, a, next := r.t, r.a, r.next
	wctx, cancel := Detached(t.ctx)
	_ = t.store.SetReleaseStatus(wctx, a.Name, next.Version, app.StatusFailed, failure.Message)
	cancel()
	// failed releases count against the history cap too
	_ = prune(t.ctx, t.store, a, r.previous)
	res := r.result(app.StatusFailed)
	res.Failure = failure
	res.ReleasePhase = r.phase
	if !r.opts.NoRollback {
		// what ran before runs as many units as before
		a.Processes = r.unitsBefore
		back, err := restore(t.ctx, t.d, t.store, a, r.previous, r.givenTimeout)
		if err != nil {
			res.DurationMS = time.Since(r.start).Milliseconds()
			return res, &Error{Result: res, RollbackErr: t.Explain(err), RollbackTo: r.previous}
		}
		res.RolledBackTo = back
	}
	res.DurationMS = time.Since(r.start).Milliseconds()
	return res, &Error{Result: res, Kept: r.opts.NoRollback, Previous: r.previous}
}

// withTimeout makes the rollout's idle timeout, when the command did not
// give one (--timeout), release r's deploy-timeout setting or its default.
func withTimeout(opts *Options, r *app.Release) { opts.Timeout = idleTimeout(opts.Timeout, r) }

// idleTimeout is how long a rollout of r may go without progress: the
// command's --timeout (given), else r's deploy-timeout setting or its
// default.
func idleTimeout(given time.Duration, r *app.Release) time.Duration {
	if given > 0 {
		return given
	}
	var settings app.Rollout
	if r != nil {
		settings = r.Rollout
	}
	return settings.DeployTimeoutDuration()
}

// restore re-applies release v (the one that ran before a failed rollout)
// and waits for it. Before an app's first successful deploy there is nothing
// to restore: its Deployments are removed so no crashing units linger.
// timeout is the command's --timeout; 0 means release v's deploy-timeout
// (not the failed release's: a short one there must not fail the restore).
func restore(ctx context.Context, d Deps, store *app.Store, a *app.App, v int, timeout time.Duration) (int, error) {
	if v == 0 {
		d.Progress.Update("removing the failed release's units")
		return 0, removeStale(ctx, d, a.Name, render.Objects{})
	}
	d.Progress.Update(fmt.Sprintf("rolling back to v%d", v))
	prev, config, err := store.GetRelease(ctx, a.Name, v)
	if err != nil {
		return 0, err
	}
	WithProcesses(a, prev)
	objs := d.Rendering(a, prev, config)
	got, err := applyObjects(ctx, d, objs, false)
	if err != nil {
		return 0, err
	}
	if err := removeStale(ctx, d, a.Name, objs); err != nil {
		return 0, err
	}
	if _, err := store.UpdateApp(ctx, a.Name, func(x *app.App) error { x.Processes = a.Processes; return nil }); err != nil {
		return 0, err
	}
	err = (&rollout.Watch{Client: d.Client, Namespace: d.Namespace, App: a.Name, Release: v, Purpose: rollout.PurposeRestore,
		Generations: generations(got), Idle: idleTimeout(timeout, prev), Progress: d.Progress}).Wait(ctx)
	if err != nil {
		return 0, err
	}
	return v, nil
}

// recordImageID stores what the units of a release deployed by tag run, so
// a rollback to it or a config change runs the same bytes however the tag
// moves. Best effort: without it a redeploy runs the tag, as before.
func recordImageID(ctx context.Context, d Deps, store *app.Store, r *app.Release, id string) {
	if id == "" || id == r.ImageID || strings.Contains(r.Image, "@") {
		return
	}
	if err := store.SetReleaseImageID(ctx, r.App, r.Version, id); err != nil {
		d.Progress.Update(fmt.Sprintf("could not record the image digest of v%d: %v", r.Version, err))
		return
	}
	r.ImageID = id
}

// setDeployed writes v's status deployed and previous's superseded, side
// by side: the record names v already, so their order does not matter,
// and a command's end waits for both.
func setDeployed(ctx context.Context, store *app.Store, appName string, v, previous int) error {
	superseded := make(chan error, 1)
	go func() {
		var err error
		if previous > 0 && previous != v {
			if err = store.SetReleaseStatus(ctx, appName, previous, app.StatusSuperseded, ""); app.IsNotFound(err) {
				err = nil
			}
		}
		superseded <- err
	}()
	deployedErr := store.SetReleaseStatus(ctx, appName, v, app.StatusDeployed, "")
	return errors.Join(deployedErr, <-superseded)
}

func markDeployed(ctx context.Context, store *app.Store, a *app.App, r *app.Release, previous, historyMax int) error {
	v := r.Version
	// The record first: once it names v, v is what runs, and a release
	// status left unwritten below is repaired by Reconcile.
	updated, err := store.UpdateApp(ctx, a.Name, func(x *app.App) error {
		x.Release, x.Image, x.Pool = v, r.Image, r.Pool
		x.Volumes = nil
		for _, b := range r.Volumes {
			if !slices.Contains(x.Volumes, b.Volume) {
				x.Volumes = append(x.Volumes, b.Volume)
			}
		}
		x.Services = nil
		for _, b := range r.Services {
			x.Services = append(x.Services, b.Service)
		}
		if historyMax > 0 {
			x.HistoryMax = historyMax
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := setDeployed(ctx, store, a.Name, v, previous); err != nil {
		return err
	}
	// staged config that this release took in is no longer waiting
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return err
	}
	for _, r := range rels {
		// and a release a stopped promote left deployed is not any more
		if r.Status == app.StatusStaged && r.Version < v || r.Status == app.StatusDeployed && r.Version != v {
			if err := store.SetReleaseStatus(ctx, a.Name, r.Version, app.StatusSuperseded, ""); err != nil && !app.IsNotFound(err) {
				return err
			}
		}
	}
	// Pruning is housekeeping: the release is deployed whatever it does.
	// Every Deployment of the app now runs v (a canary's, its release),
	// so what units use needs no LIST here.
	var inUse []int
	if updated.Canary != nil {
		inUse = append(inUse, updated.Canary.Release)
	}
	_ = store.PruneReleasesIn(ctx, a.Name, rels, app.HistoryLimit(updated, rels, v), v, inUse...)
	return nil
}

// BaseRelease is the release a change starts from: the newest one that is
// deployed or staged. Failed releases never carry their config forward.
func BaseRelease(ctx context.Context, store *app.Store, a *app.App) (*app.Release, app.ConfigMap, error) {
	if a.LastRelease == 0 {
		return nil, app.ConfigMap{}, nil
	}
	rel, cfg, err := store.FindRelease(ctx, a.Name, func(r *app.Release) bool {
		return r.Version == a.Release || (r.Status == app.StatusStaged && r.Version > a.Release)
	})
	if err != nil || rel == nil {
		return nil, app.ConfigMap{}, err
	}
	return rel, cfg, nil
}

// WithProcesses makes the app's unit counts follow the release's process
// types: a new type starts with one unit, a dropped type is forgotten.
func WithProcesses(a *app.App, r *app.Release) {
	procs := map[string]app.Process{}
	for name := range r.Processes {
		p, ok := a.Processes[name]
		if !ok {
			p = app.Process{Replicas: 1}
		}
		procs[name] = p
	}
	a.Processes = procs
}

func generations(got *applied) map[string]int64 {
	g := map[string]int64{}
	for name, d := range got.deployments {
		g[name] = d.Generation
	}
	return g
}

// NewResult is the Result of release r of a with status st, begun at start.
func NewResult(a *app.App, r *app.Release, st app.Status, start time.Time) *Result {
	res := &Result{App: a.Name, Namespace: a.Namespace, Release: r.Version, Status: st, Image: r.Image,
		Processes: []ProcessResult{}, DurationMS: time.Since(start).Milliseconds()}
	for _, name := range r.ProcessNames() {
		res.Processes = append(res.Processes, ProcessResult{Name: name, Command: r.Processes[name], Units: a.Processes[name].Units()})
	}
	return res
}

// dryRun asks the server to validate, without storing anything, the
// release record (its Secret holds the config) and every object the release
// would apply, so admission and validation speak; then it describes the
// change in the app's own terms. No lock is taken and nothing is written.
func dryRun(ctx context.Context, d Deps, store *app.Store, a *app.App, base *app.Release, baseConfig app.ConfigMap, next *app.Release, config app.ConfigMap, unitsBefore map[string]app.Process, opts Options, start time.Time) (*Result, error) {
	staged := opts.NoRestart || next.Image == ""
	if staged {
		next.Status = app.StatusStaged
	} else {
		next.Status = app.StatusPending
	}
	if err := store.ValidateRelease(ctx, next, config); err != nil {
		return nil, err
	}
	res := NewResult(a, next, "dry-run", start)
	if staged {
		// what a real run does: store the release, apply nothing (an app
		// never deployed has no image to apply)
		res.Staged = true
		why := "(--no-restart: no unit restarts)"
		if next.Image == "" {
			why = "(the app has no image yet)"
		}
		res.Plan = []string{fmt.Sprintf("release v%d would be stored; it applies at the next deploy %s", next.Version, why)}
		if !baseConfig.Equal(config) {
			res.Plan = append(res.Plan, "env: "+baseConfig.Diff(config)+" (values hidden)")
		}
		return res, nil
	}
	objs := d.Rendering(a, next, config)
	if err := guardOwned(ctx, d, objs); err != nil {
		return nil, err
	}
	if _, err := applyObjects(ctx, d, objs, true); err != nil {
		return nil, err
	}
	// The plan compares with what runs, which a release staged since
	// (--no-restart) does not: the rollout would carry its config too.
	cur, curConfig := base, baseConfig
	switch {
	case a.Release == 0:
		cur, curConfig = nil, app.ConfigMap{}
	case base == nil || base.Version != a.Release:
		r, cfg, err := store.GetRelease(ctx, a.Name, a.Release)
		if err != nil {
			return nil, err
		}
		cur, curConfig = r, cfg
	}
	res.Plan = append(plan(a, unitsBefore, cur, curConfig, next, config), planJobs(cur, next)...)
	if line, phase := plannedReleasePhase(a, base, next, opts); phase != nil {
		res.Plan = append([]string{line}, res.Plan...)
		res.ReleasePhase = phase
	}
	return res, nil
}

// plan says what a release changes: "web: image a -> b, 3 units restart",
// "env: +DB_URL, ~TOKEN (values hidden)".
// Units, limits, healthchecks and the release's settings (tug.yaml sets
// them with the image) are part of it: unitsBefore are the counts before.
func plan(a *app.App, unitsBefore map[string]app.Process, base *app.Release, baseConfig app.ConfigMap, next *app.Release, config app.ConfigMap) []string {
	var lines []string
	oldProcs := map[string]string{}
	oldImage := ""
	if base != nil {
		oldProcs, oldImage = base.Processes, base.Image
	}
	envChanged := !baseConfig.Equal(config)
	settings, _ := appSettings(base, next)
	for _, name := range next.ProcessNames() {
		units := a.Processes[name].Replicas
		oldCmd, existed := oldProcs[name]
		var changes []string
		switch {
		case !existed:
			changes = append(changes, fmt.Sprintf("new process, %d %s, command %s", units, text.Plural(int(units), "unit", "units"), describeCommand(next.Processes[name])))
		default:
			if oldImage != next.Image {
				changes = append(changes, fmt.Sprintf("image %s -> %s", oldImage, next.Image))
			}
			if oldCmd != next.Processes[name] {
				changes = append(changes, fmt.Sprintf("command %s -> %s", describeCommand(oldCmd), describeCommand(next.Processes[name])))
			}
			procSettings, _ := processSettings(base, next, name)
			changes = append(changes, procSettings...)
			if c := unitCount(unitsBefore, a, name); c != "" {
				changes = append(changes, c)
			}
			// every release is a new pod template (its release label), so
			// the units that run restart, whatever changed (a count that
			// grows starts the others new)
			running := units
			if before, ok := unitsBefore[name]; ok {
				running = min(units, before.Units())
			}
			if running > 0 {
				changes = append(changes, fmt.Sprintf("%d %s restart", running, text.Plural(int(running), "unit", "units")))
			}
		}
		if len(changes) == 0 {
			changes = append(changes, "unchanged")
		}
		lines = append(lines, name+": "+strings.Join(changes, ", "))
	}
	var gone []string
	for name := range oldProcs {
		if _, ok := next.Processes[name]; !ok {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		lines = append(lines, name+": removed")
	}
	if envChanged {
		lines = append(lines, "env: "+baseConfig.Diff(config)+" (values hidden)")
	}
	return append(lines, settings...)
}

// describeCommand is how a process's command reads in summaries.
func describeCommand(cmd string) string {
	if cmd == "" {
		return "(image default)"
	}
	return fmt.Sprintf("%q", cmd)
}

// Routes writes and reads the app's routes, Middlewares and Certificates
// with d's clients.
func (d Deps) Routes() route.Client {
	return route.Client{Dynamic: d.Dynamic, Namespace: d.Namespace, Kube: d.Client, Finder: d.Gateways, Warn: d.Warn, Note: d.Note}
}
