package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// maxRolloutChanges caps the in-place changes a release record keeps (the
// newest), so a record edited again and again stays far below the size
// limit of an annotation.
const maxRolloutChanges = 20

// ChangeRollout changes an app's rollout settings (`tug app settings
// set|unset`); edit sets them in a release (app.SetRolloutOptions.Apply)
// and may refuse. A change that leaves the pod spec alone — max surge, max
// unavailable, history, deploy timeout: how tug rolls out, not what runs —
// is made in place, so no unit restarts: under the app's lock the deployed
// release's record gets the new settings (and so does a staged release
// newer than it, which the next deploy starts from), each Deployment of the
// app gets the new strategy with its pod template untouched (as a kubectl
// edit of the strategy would), and the history beyond a lowered cap is
// deleted. A rollback to an older release brings back that release's
// settings; one to this release, the new ones. A change of the grace
// period, which is part of the pod spec, is a release of kind settings,
// rolled out like any other (Roll). Result.UnitsRestarted says which it was.
// A change that changes nothing is ErrNoChange.
func ChangeRollout(ctx context.Context, d Deps, appName, message string, edit func(*app.App, *app.Release) error, opts Options) (*Result, error) {
	start := time.Now()
	// what the record and releases say now, with the lock held: a deploy
	// that ran while we waited made a release the change must start from
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return nil, err
	}
	defer t.End()
	if err := gate(t, "changing the rollout settings"); err != nil {
		return nil, err
	}
	ctx, store, a := t.ctx, t.store, t.app
	targets, err := inPlaceTargets(ctx, store, a)
	if err != nil {
		return nil, err
	}
	changed, inPlace, err := tryRolloutEdits(a, targets, edit)
	if err != nil {
		return nil, err
	}
	if len(targets) > 0 && len(changed) == 0 {
		return nil, ErrNoChange
	}
	if !inPlace {
		res, err := roll(t, SettingsChange(app.KindSettings, message, unlessSame(edit)), opts, start)
		if res != nil && res.Status != app.StatusStaged {
			res.UnitsRestarted = new(true)
		}
		return res, err
	}
	return changeRolloutInPlace(t, targets, changed, edit, message, start)
}

// tryRolloutEdits edits the settings of every target before anything is
// written, so an edit that refuses leaves all as it was. It returns the
// versions whose settings changed, and whether the change can be made in
// place: there is a deployed release, and no grace period changed (it is
// part of the pod spec).
func tryRolloutEdits(a *app.App, targets []*app.Release, edit func(*app.App, *app.Release) error) (map[int]bool, bool, error) {
	inPlace, changed := len(targets) > 0, map[int]bool{}
	for _, r := range targets {
		before := r.Rollout
		if err := edit(a, r); err != nil {
			return nil, false, err
		}
		if r.Rollout != before {
			changed[r.Version] = true
		}
		inPlace = inPlace && r.Rollout.GracePeriod == before.GracePeriod
	}
	return changed, inPlace, nil
}

// changeRolloutInPlace records the changed settings in the targets'
// records, then gives the app's Deployments the new strategy without
// restarting a unit, and prunes the history beyond a lowered cap.
func changeRolloutInPlace(t *Txn, targets []*app.Release, changed map[int]bool, edit func(*app.App, *app.Release) error, message string, start time.Time) (*Result, error) {
	ctx, d, store, a := t.ctx, t.d, t.store, t.app
	if err := t.Lost(); err != nil {
		return nil, err
	}
	serving := targets[0]
	// a Deployment in the way stops the change before anything is written
	live, err := liveDeployments(ctx, d, a.Name, serving)
	if err != nil {
		return nil, err
	}

	d.Progress.Update(fmt.Sprintf("changing the settings of v%d in place", serving.Version))
	// The records first: they are what a later rollout, reshape or export
	// renders, so a Deployment left unpatched below (a failed request, a
	// killed tug) gets the new strategy from the next of them.
	if serving, err = recordRollout(ctx, store, a, targets, changed, edit, app.RolloutChange{At: time.Now().UTC(), Author: d.Holder.User, Message: message}); err != nil {
		return nil, err
	}
	if err := patchStrategy(ctx, d, live, serving.Rollout); err != nil {
		return nil, fmt.Errorf("the settings of v%d are recorded, but its Deployments still have the previous strategy (the next rollout or 'tug app restart' applies it): %w", serving.Version, err)
	}
	// a lowered cap applies now, not at the next deploy
	if err := prune(ctx, store, a, serving.Version); err != nil {
		return nil, err
	}
	res := NewResult(a, serving, app.StatusDeployed, start)
	res.UnitsRestarted = new(false)
	return res, nil
}

// recordRollout writes the edited settings, and the change, into each
// changed release of targets (targets[0] is the deployed one); it returns
// the deployed release as written.
func recordRollout(ctx context.Context, store *app.Store, a *app.App, targets []*app.Release, changed map[int]bool, edit func(*app.App, *app.Release) error, change app.RolloutChange) (*app.Release, error) {
	serving := targets[0]
	for _, t := range targets {
		if !changed[t.Version] {
			continue
		}
		updated, err := store.UpdateReleaseRollout(ctx, a.Name, t.Version, func(r *app.Release) error {
			if err := edit(a, r); err != nil {
				return err
			}
			r.RolloutChanges = append(r.RolloutChanges, change)
			if n := len(r.RolloutChanges); n > maxRolloutChanges {
				r.RolloutChanges = r.RolloutChanges[n-maxRolloutChanges:]
			}
			return nil
		})
		if err != nil {
			if t.Version != serving.Version {
				return nil, fmt.Errorf("the settings of v%d changed, but not those of the staged release v%d: %w", serving.Version, t.Version, err)
			}
			return nil, err
		}
		if t.Version == serving.Version {
			serving = updated
		}
	}
	return serving, nil
}

// inPlaceTargets are the releases whose settings a change in place edits:
// the deployed one first, then any staged release newer than it (config
// waiting for the next rollout, which BaseRelease makes the next deploy
// start from). None before the first deploy.
func inPlaceTargets(ctx context.Context, store *app.Store, a *app.App) ([]*app.Release, error) {
	if a.Release == 0 {
		return nil, nil
	}
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return nil, err
	}
	var serving *app.Release
	var staged []*app.Release
	for _, r := range rels {
		switch {
		case r.Version == a.Release:
			serving = r
		case r.Status == app.StatusStaged && r.Version > a.Release:
			staged = append(staged, r)
		}
	}
	if serving == nil || serving.Image == "" {
		return nil, nil // roll says what is wrong
	}
	return append([]*app.Release{serving}, staged...), nil
}

// unlessSame makes an edit that leaves the settings as they are no change
// at all: no release.
func unlessSame(edit func(*app.App, *app.Release) error) func(*app.App, *app.Release) error {
	return func(a *app.App, r *app.Release) error {
		before := r.Rollout
		if err := edit(a, r); err != nil {
			return err
		}
		if r.Rollout == before {
			return ErrNoChange
		}
		return nil
	}
}

// liveDeployments are release r's Deployments as they are, after checking
// each is the app's; one that is missing is left to the next rollout.
func liveDeployments(ctx context.Context, d Deps, appName string, r *app.Release) ([]*appsv1.Deployment, error) {
	var out []*appsv1.Deployment
	for _, proc := range r.ProcessNames() {
		name := render.DeploymentName(appName, proc)
		cur, err := d.Client.AppsV1().Deployments(d.Namespace).Get(ctx, name, metav1.GetOptions{})
		if exists, err := kube.CheckOwned("Deployment", d.Namespace, name, appName, cur, err); err != nil {
			return nil, err
		} else if exists {
			out = append(out, cur)
		}
	}
	return out, nil
}

// patchStrategy gives each Deployment the strategy the settings say, and
// nothing else: the pod template stays as it is, so the Deployment starts
// no new ReplicaSet and no unit restarts (a merge patch: server-side apply
// of the strategy alone would drop the rest of tug's fields).
func patchStrategy(ctx context.Context, d Deps, deployments []*appsv1.Deployment, settings app.Rollout) error {
	want := render.Strategy(settings)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"strategy": want}})
	if err != nil {
		return err
	}
	for _, cur := range deployments {
		if equality.Semantic.DeepEqual(cur.Spec.Strategy, want) {
			continue
		}
		_, err := d.Client.AppsV1().Deployments(d.Namespace).Patch(ctx, cur.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: kube.FieldManager})
		if err != nil {
			return fmt.Errorf("changing the strategy of deployment %s: %w", cur.Name, kube.TranslateError(err))
		}
	}
	return nil
}
