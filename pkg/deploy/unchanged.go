package deploy

import (
	"encoding/json"
	"maps"
	"reflect"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
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
	return sameRun(base, next) && r.runsBase()
}

// runsBase says each process type of the base release has its Deployment
// and that Deployment's units are the base release's: after a deploy with
// --no-rollback the units of a failed release may run instead, and a new
// rollout is what puts the base back. Unknown (the LIST failed) is no.
func (r *rolling) runsBase() bool {
	t, a, base := r.t, r.a, r.base
	list, err := t.d.Client.AppsV1().Deployments(t.d.Namespace).List(t.ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(a.Name)})
	if err != nil {
		return false
	}
	byName := map[string]string{}
	for _, d := range list.Items {
		byName[d.Name] = d.Spec.Template.Labels[kube.LabelRelease]
	}
	for proc := range base.Processes {
		if v, ok := byName[render.DeploymentName(a.Name, proc)]; !ok || v != strconv.Itoa(base.Version) {
			return false
		}
	}
	return true
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
