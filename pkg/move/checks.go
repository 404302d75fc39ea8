package move

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
)

// movableSource refuses a copy that a move to o.To must not start from: a
// superseded copy (its new copy serves, or is gone: PoolSet says which);
// a move's new copy, whose old copy may still serve and whose move may
// still be running; and the serving source of an unfinished move to
// another cluster than o.To, whose half-made copy there only this copy's
// mark records (PoolSet gives that move up first). The serving source of
// an unfinished move to o.To itself is that move run again (staleTarget).
func movableSource(a *app.App, o Options) error {
	if c := a.Canary; c != nil {
		// a move copies one release; the other's units and the split
		// route would be left behind, or promoted there unseen
		return inputerr.Errorf("app %q runs v%d as a %s beside v%d, and moves only with one release: first 'tug release promote %s' or 'tug release abort %s'", a.Name, c.Release, c.Strategy, a.Release, a.Name, a.Name)
	}
	m := a.Move
	switch {
	case m == nil:
		return nil
	case m.Superseded:
		return inputerr.Errorf("this copy of app %q is superseded: it moved to cluster %q (%s); 'tug app pool set %s %s' (without --context) finishes that move, or, if no configured cluster holds the new copy any more, 'tug app pool set %s %s' makes this copy the app again", a.Name, m.To, m.Describe(), a.Name, m.Pool, a.Name, a.Pool)
	case m.Role == app.MoveTarget:
		return inputerr.Errorf("this copy of app %q is the new copy of an unfinished move from cluster %q (started %s), and moves only once that move is finished: 'tug app pool set %s %s' (without --context) finishes it", a.Name, m.From, m.StartedAt.Format(time.RFC3339), a.Name, m.Pool)
	case m.To != o.To && !o.GiveUpEarlier:
		return inputerr.Errorf("app %q records an unfinished move to cluster %q (started %s), whose half-made copy there only that record names; give that move up first, then move the app: 'tug app pool set %s %s' (without --context) removes that copy and keeps the app where it is, nothing restarted", a.Name, m.To, m.StartedAt.Format(time.RFC3339), a.Name, a.Pool)
	}
	return nil
}

// refuseStaged refuses to move a deployed app with config staged
// ('env set --no-restart') that does not run yet: a move moves what runs,
// and its rollout there would start from the staged release (BaseRelease)
// and put that config live unseen, without its release phase. A
// never-deployed app runs nothing; its staged releases move as they are.
func refuseStaged(ctx context.Context, store *app.Store, a *app.App) error {
	if a.Release == 0 || a.LastRelease <= a.Release {
		return nil
	}
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return err
	}
	for _, r := range rels {
		if r.Status == app.StatusStaged && r.Version > a.Release {
			return inputerr.Errorf("app %q has config staged with 'env set --no-restart' (release v%d) that does not run yet, and a move moves what runs; roll it out first ('tug app deploy', or 'tug env set' without --no-restart), then move the app", a.Name, r.Version)
		}
	}
	return nil
}

// staleTarget checks what the target cluster holds of the app: nothing, or
// the copy an earlier move left before switching over (true): marked as
// the target of the very move the source's mark (own) records. Any other
// app of that name is in the way, a copy marked by another move included.
func staleTarget(ctx context.Context, to *app.Store, appName string, own *app.Move, o Options) (bool, error) {
	there, err := to.GetApp(ctx, appName)
	switch {
	case app.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case there.Move != nil && there.Move.Role == app.MoveTarget:
		if own != nil && own.Role == app.MoveSource && !own.Superseded && there.Move.SameMove(own) {
			return true, nil
		}
		m := there.Move
		return false, inputerr.Errorf("app %q in cluster %q (namespace %q) is the copy of a move from cluster %q started %s, which this copy of the app did not start; tug will not remove it: if it is a leftover, remove it ('tug app remove %s --move-copy --context ...')", appName, o.To, to.Namespace, m.From, m.StartedAt.Format(time.RFC3339), appName)
	}
	return false, inputerr.Errorf("an app %q already exists in cluster %q (namespace %q); tug will not overwrite it: remove one of the two ('tug app remove %s --context ...')", appName, o.To, to.Namespace, appName)
}

// wholeCopy checks, under the target's lock, that the copy a move made is
// still there as it made it: its record carries the move's mark, and it
// runs the release the move rolled out (release, 0 for an app never
// deployed, which has only its pool set), deployed on the move's pool.
func wholeCopy(ctx context.Context, to *app.Store, appName string, mark *app.Move, release int, pool string) error {
	there, err := to.GetApp(ctx, appName)
	if err != nil {
		return fmt.Errorf("the new copy is not whole: %w", err)
	}
	switch {
	case there.Move == nil || !there.Move.SameMove(mark) || there.Move.Role != app.MoveTarget:
		return errors.New("the new copy's record no longer carries this move's mark")
	case there.Pool != pool:
		return fmt.Errorf("the new copy's pool is %q, not %q", there.Pool, pool)
	case there.Release != release:
		return fmt.Errorf("the new copy runs release v%d, not v%d as the move rolled out", there.Release, release)
	case release == 0:
		return nil
	}
	r, _, err := to.GetRelease(ctx, appName, release)
	if err != nil {
		return fmt.Errorf("the new copy is not whole: %w", err)
	}
	if r.Status != app.StatusDeployed {
		return fmt.Errorf("the new copy's release v%d is %s, not deployed", release, r.Status)
	}
	return nil
}

// servingSource reports whether m marks the copy of an unfinished move
// that still serves: its source, not superseded.
func servingSource(m *app.Move) bool {
	return m != nil && m.Role == app.MoveSource && !m.Superseded
}
