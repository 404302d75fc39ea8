// Package lifecycle holds an app's beginning and end and its way out:
// Create stores a new app, Remove deletes everything of it, Export writes
// it as plain manifests. The changes in between are pkg/deploy's.
//
// It sits above pkg/deploy, not in pkg/app beside the records: removal
// runs as a deploy.Txn (the app's lock held, its record read under it) and
// export renders the deployed release with render.Release, and pkg/deploy
// itself builds on pkg/app.
package lifecycle

import (
	"context"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// CreateOptions are the fields a new app may set.
type CreateOptions struct {
	Name, Description, Team, Pool string
}

// Create stores a new app record. Nothing runs until the first deploy.
func Create(ctx context.Context, s *app.Store, o CreateOptions) (*app.App, error) {
	if err := app.ValidateName(o.Name); err != nil {
		return nil, err
	}
	if o.Pool != "" {
		if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
			return nil, err
		}
	}
	a := &app.App{Name: o.Name, Namespace: s.Namespace, Description: o.Description, Team: o.Team, Pool: o.Pool,
		CreatedAt: time.Now().UTC().Truncate(time.Second), Processes: map[string]app.Process{}}
	if err := s.CreateApp(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}
