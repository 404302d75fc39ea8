package deploy

import (
	"context"
	"time"

	"tug.dev/tug/pkg/app"
)

// RecordFailed stores a release that failed before anything rolled out (a
// build from source that failed), so `release list` shows the attempt and
// why, while the current release keeps running untouched. It carries the
// base release's settings and config keys, and no image: nothing was built.
func RecordFailed(ctx context.Context, d Deps, appName, message, reason string) (*app.Release, error) {
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return nil, err
	}
	defer t.End()
	ctx, store, a := t.ctx, t.store, t.app
	base, config, err := BaseRelease(ctx, store, a)
	if err != nil {
		return nil, err
	}
	next := app.Next(a, base, app.KindDeploy, message)
	next.Image, next.ImageID, next.BuiltWith = "", "", nil
	next.App, next.Version, next.CreatedAt, next.Author = a.Name, a.LastRelease+1, time.Now().UTC(), d.Holder.User
	next.Status, next.FailReason = app.StatusFailed, reason
	if err := store.CreateRelease(ctx, next, config); err != nil {
		return nil, err
	}
	if _, err := store.UpdateApp(ctx, a.Name, func(x *app.App) error { x.LastRelease = next.Version; return nil }); err != nil {
		return nil, err
	}
	_ = prune(ctx, store, a, a.Release)
	return next, nil
}
