package move

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lifecycle"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/rollout"
)

// finish drops the target's mark (d) and removes the superseded source
// copy (e): src holds the source copy's lock, dst the target's; m is the
// move, as the source's mark records it. Only that move's mark is dropped:
// a new copy marked by another move is not known to be this copy's
// successor, and then both copies stay, with an error.
func finish(src, dst *deploy.Txn, appName string, m *app.Move) error {
	if err := dst.Lost(); err != nil {
		return err
	}
	other, err := dropMark(dst, &app.Move{Role: app.MoveTarget, From: m.From, To: m.To, StartedAt: m.StartedAt})
	if err != nil {
		return dst.Explain(err)
	}
	if other != nil {
		return fmt.Errorf("the new copy of app %q (namespace %q) carries the mark of another move (%s), not of the move that superseded its old copy; tug leaves both copies as they are", appName, dst.Deps().Namespace, other.Describe())
	}
	if err := src.Lost(); err != nil {
		return err
	}
	src.Deps().Progress.Update("removing the app from its old cluster")
	return src.Explain(lifecycle.RemoveHeld(src.Ctx(), src.Deps(), appName, lifecycle.RemoveOptions{}))
}

// errMarkKept ends the update of a dropMark that changes nothing.
var errMarkKept = errors.New("mark kept")

// dropMark clears m's mark from the record of t's app, in t: that side
// (m.Role) of that move (app.Move.SameMove), and no other. It returns the
// mark of another move it left in place (nil when it dropped m's, or the
// record had none). The check and the write are one compare-and-swap.
func dropMark(t *deploy.Txn, m *app.Move) (*app.Move, error) {
	var other *app.Move
	_, err := t.Update(func(x *app.App) error {
		other = nil
		switch {
		case x.Move == nil:
			return errMarkKept
		case !x.Move.SameMove(m) || x.Move.Role != m.Role:
			other = x.Move
			return errMarkKept
		}
		x.Move = nil
		return nil
	})
	if errors.Is(err, errMarkKept) {
		err = nil
	}
	return other, err
}

// Finish completes a move that a killed tug left after the switch:
// serving is the copy that serves (marked as the move's target, or already
// unmarked), old reaches the cluster of the superseded source copy (which
// the lookup found superseded; gone meanwhile is fine). It refuses when
// old's copy is not superseded: that move never switched over, and App
// redoes it. A target whose source no cluster holds is Adopt's. It
// holds the app's lock in both clusters: the serving copy's, whose mark
// it drops, and the old copy's (the move's own lock), which it removes.
func Finish(ctx context.Context, serving, old deploy.Deps, appName string) error {
	if serving.Progress == nil {
		serving.Progress = progress.Nop{}
	}
	if old.Progress == nil {
		old.Progress = serving.Progress
	}
	if old.Client == nil {
		return fmt.Errorf("finishing the move of app %q: no cluster to remove its old copy from", appName)
	}
	st, err := deploy.Begin(ctx, serving, appName, nil)
	if err != nil {
		return err
	}
	defer st.End()
	cur := st.App()
	// the old copy gone (a finish ran meanwhile, or it was removed): the
	// move is past its switch, and the serving copy's own mark goes
	gone := func() error {
		if cur.Move == nil || cur.Move.Role != app.MoveTarget {
			return nil
		}
		_, err := dropMark(st, cur.Move)
		return st.Explain(err)
	}
	ot, err := deploy.Begin(st.Ctx(), old, appName, func(a *app.App) error {
		if a.Move == nil || !a.Move.Superseded {
			return fmt.Errorf("the copy of app %q in namespace %q is not superseded: it still serves, so tug leaves it", appName, old.Namespace)
		}
		return nil
	})
	if app.IsNotFound(err) {
		return gone()
	}
	if err != nil {
		return err
	}
	defer ot.End()
	return finish(ot, st, appName, ot.App().Move)
}

// RolledOut reports whether a move's target copy, reached through d,
// had completed its rollout there when the move stopped: its deployed
// release is on the move's pool and every Deployment of the app runs that
// release, rolled out (kubectl rollout status's rule). A never-deployed
// app has only its pool to set. It says nothing of a copy with no target
// mark (false).
func RolledOut(ctx context.Context, d deploy.Deps, appName string) (bool, error) {
	a, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, appName)
	if err != nil {
		return false, err
	}
	if a.Move == nil || a.Move.Role != app.MoveTarget {
		return false, nil
	}
	if a.Release == 0 {
		return a.Pool == a.Move.Pool, nil
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	r, _, err := store.GetRelease(ctx, appName, a.Release)
	if app.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.Pool != a.Move.Pool || r.Status != app.StatusDeployed {
		return false, nil
	}
	deps, err := d.Client.AppsV1().Deployments(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return false, kube.TranslateError(err)
	}
	units := 0
	for _, p := range a.Processes {
		units += int(p.Units())
	}
	if units > 0 && len(deps.Items) == 0 {
		return false, nil
	}
	for i := range deps.Items {
		dep := &deps.Items[i]
		if dep.Spec.Template.Labels[kube.LabelRelease] != strconv.Itoa(a.Release) || !rollout.RolledOut(dep) {
			return false, nil
		}
	}
	return true, nil
}

// Adopt makes a move's target copy the app when the move's source is
// gone (removed, or its cluster left tug's map) without the move having
// switched over: only when its rollout had completed (RolledOut), and
// only when asked ('tug app pool set --adopt'). It drops the copy's mark,
// under the app's lock.
func Adopt(ctx context.Context, d deploy.Deps, appName string) error {
	t, err := deploy.Begin(ctx, d, appName, nil)
	if err != nil {
		return err
	}
	defer t.End()
	ok, err := RolledOut(t.Ctx(), d, appName)
	if err != nil {
		return t.Explain(err)
	}
	if !ok {
		return fmt.Errorf("the copy of app %q in namespace %q is not a move's completed new copy; tug will not make it the app", appName, d.Namespace)
	}
	other, err := dropMark(t, t.App().Move)
	if err == nil && other != nil {
		err = errors.New("its move mark changed meanwhile")
	}
	return t.Explain(err)
}

// Abandon gives up a move that a killed tug left before its switch:
// under the app's lock in src it removes the copy the move was making,
// looked for in each of made (none when the tug was killed before copying,
// or no cluster holds a copy), and drops src's mark. PoolSet calls it when
// the app is asked to stay where it serves ('tug app pool set' to a pool of
// its own cluster), or to move to a third cluster. It does nothing when
// src's copy is not a move's serving source; a copy in made that is not
// that move's target (its mark records another move, or none) is left
// alone.
func Abandon(ctx context.Context, src deploy.Deps, made []deploy.Deps, appName string) error {
	a, err := (&app.Store{Client: src.Client, Namespace: src.Namespace}).GetApp(ctx, appName)
	if err != nil {
		return err
	}
	if !servingSource(a.Move) {
		return nil
	}
	t, err := deploy.Begin(ctx, src, appName, nil)
	if err != nil {
		return err
	}
	defer t.End()
	m := t.App().Move
	if !servingSource(m) {
		return nil
	}
	if err := removeMade(t.Ctx(), t.Deps(), made, appName, m); err != nil {
		return t.Explain(err)
	}
	if err := t.Lost(); err != nil {
		return err
	}
	_, err = dropMark(t, m)
	return t.Explain(err)
}

// removeMade removes the copy that move m, cut short before its switch,
// made: looked for in each of made, and removed only where it carries m's
// target mark, checked under that copy's lock (any other app of that name
// is left alone). The caller holds the source's lock.
func removeMade(ctx context.Context, src deploy.Deps, made []deploy.Deps, appName string, m *app.Move) error {
	for _, dst := range made {
		there, err := (&app.Store{Client: dst.Client, Namespace: dst.Namespace}).GetApp(ctx, appName)
		switch {
		case app.IsNotFound(err):
		case err != nil:
			return err
		case there.Move != nil && there.Move.Role == app.MoveTarget && there.Move.SameMove(m):
			src.Progress.Update(fmt.Sprintf("giving up the unfinished move to cluster %s: removing the copy it left there", m.To))
			err := lifecycle.Remove(ctx, dst, appName, lifecycle.RemoveOptions{OfMove: m})
			if err != nil && !app.IsNotFound(err) && !errors.Is(err, lifecycle.ErrNotThatCopy) {
				return fmt.Errorf("removing the copy of app %q an unfinished move left in cluster %q: %w", appName, m.To, err)
			}
		}
	}
	return nil
}

// Reclaim makes a superseded copy the app again when its move's new
// copy is gone (removed by hand): under the app's lock it drops the
// superseded mark. Only PoolSet knows that no configured cluster holds
// the new copy (every cluster answered the lookup) and calls it; the
// caller then rolls the release out again, since the copy's removal may
// have begun (its Deployments, Services). A copy that is not superseded
// is left as it is.
func Reclaim(ctx context.Context, d deploy.Deps, appName string) error {
	t, err := deploy.Begin(ctx, d, appName, nil)
	if err != nil {
		return err
	}
	defer t.End()
	if t.App().Move == nil || !t.App().Move.Superseded {
		return nil
	}
	_, err = dropMark(t, t.App().Move)
	return t.Explain(err)
}
