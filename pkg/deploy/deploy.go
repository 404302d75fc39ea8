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
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
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
	// MaintenanceImage. cmd sets it from $TUG_MAINTENANCE_IMAGE.
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
}

// Options tune one rollout.
type Options struct {
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
}

// Change builds the next release from the app and its base release (the
// newest release that is deployed or staged; nil before the first) and that
// release's config. It returns the new release's image, processes, kind and
// message, and its config. Version, author, time and status are filled in by
// Roll.
type Change func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error)

// Result is what a rollout did; its JSON shape is documented in docs/output.md.
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
	// UnitsRestarted, set by a rollout settings change (ChangeRollout)
	// only, says whether the change replaced the units (a new release) or
	// took effect on the running release in place, units untouched.
	UnitsRestarted *bool `json:"unitsRestarted,omitempty"`
	DurationMS     int64 `json:"durationMs"`
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
}

func (e *Error) Error() string {
	r := e.Result
	msg := fmt.Sprintf("release v%d of app %q failed: %s", r.Release, r.App, r.Failure.Message)
	switch {
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
		return nil, err
	}
	defer t.End()
	return roll(t, change, opts, start)
}

// roll is Roll in txn t: the app's lock is held (none for a dry run) and
// t.app was read and reconciled under it. Everything it asks of the
// cluster runs on t.ctx, so a lost lock stops it at the next request;
// what records how it ended runs on a detached context.
func roll(t *Txn, change Change, opts Options, start time.Time) (*Result, error) {
	ctx, d, store, a := t.ctx, t.d, t.store, t.app
	base, baseConfig, err := BaseRelease(ctx, store, a)
	if err != nil {
		return nil, err
	}
	next, config, err := change(a, base, baseConfig)
	if err != nil {
		return nil, err
	}
	next.App, next.Version, next.CreatedAt, next.Author = a.Name, a.LastRelease+1, time.Now().UTC(), d.Holder.User
	removed := RemovedProcesses(base, next)
	resultOf := func(st app.Status) *Result {
		res := result(a, next, st, start)
		res.RemovedProcesses = removed
		return res
	}
	unitsBefore := maps.Clone(a.Processes)
	withProcesses(a, next)
	want := d.routes().Want(ctx, d.Settings, a, next.Pool)
	// A restore after a failure waits by the restored release's own
	// deploy-timeout, unless the command gave one.
	givenTimeout := opts.Timeout
	withTimeout(&opts, next)

	if opts.DryRun {
		a.Route = want
		return dryRun(ctx, d, store, a, base, baseConfig, next, config, opts, start)
	}
	if opts.NoRestart || next.Image == "" {
		// store only: the config waits for the next rollout
		next.Status = app.StatusStaged
		if err := store.CreateRelease(ctx, next, config); err != nil {
			return nil, t.Explain(err)
		}
		if _, err := store.UpdateApp(ctx, a.Name, func(x *app.App) error { x.LastRelease = next.Version; return nil }); err != nil {
			return nil, t.Explain(err)
		}
		return resultOf(app.StatusStaged), nil
	}

	previous := a.Release
	next.Status = app.StatusPending
	a.Route = want
	phase := runsReleasePhase(a, base, next)
	if phase && !opts.SkipReleasePhase && d.ReleasePhase == nil {
		return nil, fmt.Errorf("release v%d of app %q has a release-phase command but nothing can run it", next.Version, a.Name)
	}
	// before the release is stored: an object in the way leaves no trace
	if err := guardOwned(ctx, d, Render(a, next, config)); err != nil {
		return nil, t.Explain(err)
	}
	if err := store.CreateRelease(ctx, next, config); err != nil {
		return nil, t.Explain(err)
	}
	// From here every way out records how the rollout ended: a release is
	// never left pending by a tug that is still running.
	name, v := a.Name, next.Version
	interrupted := func(err error) (*Result, error) {
		err = t.Explain(err)
		if settle(ctx, store, name, v, err) == app.StatusDeployed {
			return nil, err
		}
		return nil, &InterruptedError{App: name, Release: v, Previous: previous, Units: unitsByRelease(ctx, d, name), Err: err}
	}
	a, err = store.UpdateApp(ctx, a.Name, func(x *app.App) error {
		x.LastRelease = next.Version
		x.Processes = a.Processes
		x.Route = want
		return nil
	})
	if err != nil {
		return interrupted(err)
	}
	var phaseResult *ReleasePhaseResult
	switch {
	case phase && opts.SkipReleasePhase:
		phaseResult = &ReleasePhaseResult{Command: SanitizeCommand(next.ReleaseCommand), Status: PhaseSkipped}
	case phase:
		// Before anything of the new release is applied: a failing phase
		// (a migration, say) leaves what runs untouched, config included.
		pr, err := releasePhase(ctx, d, a, next, config, previous)
		phaseResult = pr
		if err != nil {
			if t.cause() != nil {
				return interrupted(err)
			}
			wctx, cancel := detached(ctx)
			defer cancel()
			_, _ = store.UpdateApp(wctx, a.Name, func(x *app.App) error { x.Processes = unitsBefore; return nil })
			reason := "release phase: " + err.Error()
			failed := (*ReleasePhaseError)(nil)
			if errors.As(err, &failed) {
				reason = failed.Reason()
			}
			_ = store.SetReleaseStatus(wctx, a.Name, next.Version, app.StatusFailed, reason)
			_ = prune(wctx, store, a, previous)
			if failed == nil {
				return nil, err
			}
			a.Processes = unitsBefore
			res := resultOf(app.StatusFailed)
			res.ReleasePhase = pr
			res.Failure = releasePhaseFailure(failed)
			failed.Result = res
			return res, err
		}
	}
	// The phase may have run for minutes: the lock must still be ours
	// before anything of the release is applied.
	if err := t.Lost(); err != nil {
		return interrupted(err)
	}
	objs := Render(a, next, config)
	d.Progress.Update(fmt.Sprintf("applying release v%d", next.Version))
	got, err := applyObjects(ctx, d, objs, false)
	if err != nil {
		if t.cause() != nil {
			return interrupted(err)
		}
		// the API server refused the objects: the release failed
		wctx, cancel := detached(ctx)
		_ = store.SetReleaseStatus(wctx, a.Name, next.Version, app.StatusFailed, err.Error())
		cancel()
		return nil, err
	}
	if err := removeStale(ctx, d, a.Name, objs); err != nil {
		return interrupted(err)
	}

	var failure *rollout.Failure
	if !opts.NoWait {
		ro := &rollout.Watch{Client: d.Client, Namespace: d.Namespace, App: a.Name, Release: next.Version,
			Generations: generations(got), Idle: opts.Timeout, Progress: d.Progress}
		err := ro.Wait(ctx)
		if err == nil {
			recordImageID(ctx, d, store, next, ro.ImageID())
		}
		if lost := t.Lost(); lost != nil {
			return interrupted(lost)
		}
		if err != nil && !errors.As(err, &failure) {
			return interrupted(err) // Ctrl-C, SIGTERM, or the API failed
		}
	}
	if err := t.Lost(); err != nil {
		return interrupted(err)
	}
	if failure == nil {
		if err := markDeployed(ctx, store, a, next, previous, opts.HistoryMax); err != nil {
			// The units run the release: record that once more with a
			// fresh deadline (the command's may be gone, or one request
			// timed out). Once the record names the release it is
			// deployed, even if a status write after that failed.
			wctx, cancel := detached(ctx)
			again := markDeployed(wctx, store, a, next, previous, opts.HistoryMax)
			cancel()
			if again != nil && settle(ctx, store, name, v, err) != app.StatusDeployed {
				return nil, t.Explain(err)
			}
		}
		res := resultOf(app.StatusDeployed)
		res.ReleasePhase = phaseResult
		res.URLs = app.URLs(a)
		var rerr error
		if !opts.NoWait {
			res.Routing, rerr = d.routes().Confirm(ctx, d.Progress, nil, a, got.routes, opts.Probe)
		}
		res.DurationMS = time.Since(start).Milliseconds()
		return res, t.Explain(rerr)
	}

	// The rollout failed: record why, then put back what ran before.
	wctx, cancel := detached(ctx)
	_ = store.SetReleaseStatus(wctx, a.Name, next.Version, app.StatusFailed, failure.Message)
	cancel()
	// failed releases count against the history cap too
	_ = prune(ctx, store, a, previous)
	res := resultOf(app.StatusFailed)
	res.Failure = failure
	res.ReleasePhase = phaseResult
	if !opts.NoRollback {
		back, err := restore(ctx, d, store, a, previous, givenTimeout)
		if err != nil {
			res.DurationMS = time.Since(start).Milliseconds()
			return res, &Error{Result: res, RollbackErr: t.Explain(err), RollbackTo: previous}
		}
		res.RolledBackTo = back
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res, &Error{Result: res, Kept: opts.NoRollback, Previous: previous}
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
		return 0, removeStale(ctx, d, a.Name, Objects{})
	}
	d.Progress.Update(fmt.Sprintf("rolling back to v%d", v))
	prev, config, err := store.GetRelease(ctx, a.Name, v)
	if err != nil {
		return 0, err
	}
	withProcesses(a, prev)
	objs := Render(a, prev, config)
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
		if historyMax > 0 {
			x.HistoryMax = historyMax
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := store.SetReleaseStatus(ctx, a.Name, v, app.StatusDeployed, ""); err != nil {
		return err
	}
	if previous > 0 && previous != v {
		if err := store.SetReleaseStatus(ctx, a.Name, previous, app.StatusSuperseded, ""); err != nil && !app.IsNotFound(err) {
			return err
		}
	}
	// staged config that this release took in is no longer waiting
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return err
	}
	for _, r := range rels {
		if r.Status == app.StatusStaged && r.Version < v {
			if err := store.SetReleaseStatus(ctx, a.Name, r.Version, app.StatusSuperseded, ""); err != nil && !app.IsNotFound(err) {
				return err
			}
		}
	}
	return store.PruneReleasesIn(ctx, a.Name, rels, app.HistoryLimit(updated, rels, v), v)
}

// prune caps an app's release history at what release current (the one
// that runs) says, never removing current (see app.ReleasesToPrune).
func prune(ctx context.Context, store *app.Store, a *app.App, current int) error {
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return err
	}
	return store.PruneReleasesIn(ctx, a.Name, rels, app.HistoryLimit(a, rels, current), current)
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

// withProcesses makes the app's unit counts follow the release's process
// types: a new type starts with one unit, a dropped type is forgotten.
func withProcesses(a *app.App, r *app.Release) {
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

// ResultOf is the Result of a change to app a that started at start and
// left release r with status st.
func ResultOf(a *app.App, r *app.Release, st app.Status, start time.Time) *Result {
	return result(a, r, st, start)
}

func result(a *app.App, r *app.Release, st app.Status, start time.Time) *Result {
	res := &Result{App: a.Name, Namespace: a.Namespace, Release: r.Version, Status: st, Image: r.Image,
		Processes: []ProcessResult{}, DurationMS: time.Since(start).Milliseconds()}
	for _, name := range sortedProcesses(r.Processes) {
		res.Processes = append(res.Processes, ProcessResult{Name: name, Command: r.Processes[name], Units: a.Processes[name].Units()})
	}
	return res
}

// dryRun asks the server to validate, without storing anything, the
// release record (its Secret holds the config) and every object the release
// would apply, so admission and validation speak; then it describes the
// change in the app's own terms. No lock is taken and nothing is written.
func dryRun(ctx context.Context, d Deps, store *app.Store, a *app.App, base *app.Release, baseConfig app.ConfigMap, next *app.Release, config app.ConfigMap, opts Options, start time.Time) (*Result, error) {
	staged := opts.NoRestart || next.Image == ""
	if staged {
		next.Status = app.StatusStaged
	} else {
		next.Status = app.StatusPending
	}
	if err := store.ValidateRelease(ctx, next, config); err != nil {
		return nil, err
	}
	res := result(a, next, "dry-run", start)
	if staged {
		// what a real run does: store the release, apply nothing (an app
		// never deployed has no image to apply)
		res.Staged = true
		why := "(--no-restart: no unit restarts)"
		if next.Image == "" {
			why = "(the app has no image yet)"
		}
		res.Plan = []string{fmt.Sprintf("release v%d would be stored; it applies at the next deploy %s", next.Version, why)}
		if !sameConfig(baseConfig, config) {
			res.Plan = append(res.Plan, "env: "+configDiff(baseConfig, config)+" (values hidden)")
		}
		return res, nil
	}
	objs := Render(a, next, config)
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
	res.Plan = plan(a, cur, curConfig, next, config)
	if line, phase := plannedReleasePhase(a, base, next, opts); phase != nil {
		res.Plan = append([]string{line}, res.Plan...)
		res.ReleasePhase = phase
	}
	return res, nil
}

// plan says what a release changes: "web: image a -> b, 3 units restart",
// "env: +DB_URL, ~TOKEN (values hidden)".
func plan(a *app.App, base *app.Release, baseConfig app.ConfigMap, next *app.Release, config app.ConfigMap) []string {
	var lines []string
	oldProcs := map[string]string{}
	oldImage := ""
	if base != nil {
		oldProcs, oldImage = base.Processes, base.Image
	}
	envChanged := !sameConfig(baseConfig, config)
	for _, name := range sortedProcesses(next.Processes) {
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
			if len(changes) > 0 || envChanged {
				changes = append(changes, fmt.Sprintf("%d %s restart", units, text.Plural(int(units), "unit", "units")))
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
		lines = append(lines, "env: "+configDiff(baseConfig, config)+" (values hidden)")
	}
	return lines
}

func sameConfig(a, b app.ConfigMap) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// configDiff names added (+), changed (~) and removed (-) keys, never values.
func configDiff(old, cur app.ConfigMap) string {
	var parts []string
	for _, k := range cur.Keys() {
		v, ok := old[k]
		switch {
		case !ok:
			parts = append(parts, "+"+k)
		case v != cur[k]:
			parts = append(parts, "~"+k)
		}
	}
	for _, k := range old.Keys() {
		if _, ok := cur[k]; !ok {
			parts = append(parts, "-"+k)
		}
	}
	return strings.Join(parts, ", ")
}

// routes is the app's routes through the Gateway API in d's namespace.
func (d Deps) routes() route.Client { return route.Client{Dynamic: d.Dynamic, Namespace: d.Namespace} }
