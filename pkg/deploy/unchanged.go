package deploy

import (
	"encoding/json"
	"maps"
	"reflect"
	"time"

	"tug.dev/tug/pkg/app"
)

// unchanged says the rollout would run exactly what runs now, so no
// release is made (Options.SkipUnchanged): the base release is the
// deployed one, and the next one has its image, process types, settings,
// jobs and config; the app's units and route stay as they are. A build
// from source asks for it: a reproducible build of unchanged source makes
// the same image digest, and rolling every unit onto the image it already
// runs would only restart them.
func (r *rolling) unchanged() bool {
	a, base, next := r.a, r.base, r.next
	if base == nil || base.Status != app.StatusDeployed || base.Version != a.Release {
		return false
	}
	if !maps.Equal(r.baseConfig, r.config) || !reflect.DeepEqual(r.unitsBefore, a.Processes) || !reflect.DeepEqual(a.Route, r.want) {
		return false
	}
	return sameRun(base, next)
}

// sameRun says two releases run the same: they differ at most in what
// describes a release (number, kind, message, author, time, status) and in
// what is recorded about it once it ran (the runtime's image ID, in-place
// rollout changes).
func sameRun(a, b *app.Release) bool {
	strip := func(r *app.Release) []byte {
		c := *r
		c.App, c.Version, c.Kind, c.Message, c.Author = "", 0, "", "", ""
		c.CreatedAt, c.Status, c.RollbackOf, c.FailReason = time.Time{}, "", 0, ""
		c.ImageID, c.RolloutChanges, c.ConfigKeys = "", nil, nil
		b, err := json.Marshal(c)
		if err != nil {
			return nil
		}
		return b
	}
	x, y := strip(a), strip(b)
	return x != nil && string(x) == string(y)
}
