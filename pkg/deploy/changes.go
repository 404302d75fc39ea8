package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/text"
)

// ErrNoChange says a change would make a release identical to the current
// one, so none is made.
var ErrNoChange = errors.New("nothing to change")

// DeployChange is a new image with exactly these process types (types the
// release before had and processes lacks are removed). Config carries
// over; the release command does not (it comes with the code:
// WithReleaseCommand). Commands use DeployProcesses, which says what
// carries over.
func DeployChange(image string, processes map[string]string, message string) Change {
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r := app.Next(a, base, app.KindDeploy, message)
		r.Image, r.ImageID, r.BuiltWith, r.BuildArgs, r.Processes = image, "", nil, nil, maps.Clone(processes)
		r.PromotedFrom = nil
		return r, maps.Clone(config), nil
	}
}

// DeployProcesses is a new image whose process types are the base
// release's changed by pc (app.ProcessChange.Apply). A type with units, or
// web while domains route to it (app.Guarded), is removed only when the
// command was told it may be: allowed lists those (checked again here,
// under the lock, on the record as it is now), or all says any may go
// (--yes). Otherwise the change is refused with a *RemovalError and
// nothing is made.
func DeployProcesses(image string, pc app.ProcessChange, allowed []string, all bool, message string) Change {
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		var from map[string]string
		if base != nil {
			from = base.Processes
		}
		procs, removed, err := pc.Apply(from)
		if err != nil {
			return nil, nil, err
		}
		if !all {
			for _, name := range app.Guarded(a, removed) {
				if !slices.Contains(allowed, name) {
					return nil, nil, &RemovalError{App: a.Name, Processes: app.Guarded(a, removed)}
				}
			}
		}
		r := app.Next(a, base, app.KindDeploy, message)
		// a new image: how it was built is WithBuiltWith's to say
		r.Image, r.ImageID, r.BuiltWith, r.BuildArgs, r.Processes = image, "", nil, nil, procs
		r.PromotedFrom = nil // a new image comes from here
		return r, maps.Clone(config), nil
	}
}

// WithBuildArgs records in the release change makes the names of the
// Dockerfile build arguments its image was built with (values are not kept).
func WithBuildArgs(change Change, args []string) Change {
	if len(args) == 0 {
		return change
	}
	names := make([]string, 0, len(args))
	for _, kv := range args {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r, c, err := change(a, base, config)
		if r != nil {
			r.BuildArgs = slices.Clone(names)
		}
		return r, c, err
	}
}

// WithBuiltWith records in the release change makes what built its image
// from source (nil: nothing known, the change's release is kept as made).
func WithBuiltWith(change Change, built *app.BuiltWith) Change {
	if built == nil {
		return change
	}
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r, c, err := change(a, base, config)
		if r != nil {
			r.BuiltWith = built.Clone()
		}
		return r, c, err
	}
}

// RemovalError refuses a deploy that would remove process types that run
// units (or web, which domains route to) without being told it may.
type RemovalError struct {
	App       string
	Processes []string
}

func (e *RemovalError) Error() string {
	return fmt.Sprintf("the deploy would remove %s %s of app %q, which %s units or routes; nothing changed: pass --yes to remove %s, or --process to keep %s",
		text.Plural(len(e.Processes), "process", "processes"), strings.Join(e.Processes, ", "), e.App,
		text.Plural(len(e.Processes), "has", "have"), text.Plural(len(e.Processes), "it", "them"), text.Plural(len(e.Processes), "it", "them"))
}

// RemovedProcesses is what a release drops of the one before it, sorted.
func RemovedProcesses(before, after *app.Release) []string {
	if before == nil {
		return nil
	}
	var gone []string
	for name := range before.Processes {
		if _, ok := after.Processes[name]; !ok {
			gone = append(gone, name)
		}
	}
	app.SortProcesses(gone)
	return gone
}

// EnvChange sets and unsets config variables on top of the base release.
func EnvChange(set app.ConfigMap, unset []string, message string) Change {
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		next := maps.Clone(config)
		if next == nil {
			next = app.ConfigMap{}
		}
		for _, k := range unset {
			if _, ok := next[k]; !ok {
				return nil, nil, fmt.Errorf("config %q is not set on app %q; see 'tug env get %s'", k, a.Name, a.Name)
			}
			delete(next, k)
		}
		maps.Copy(next, set)
		if config.Equal(next) {
			return nil, nil, ErrNoChange
		}
		if err := notBound(a.Name, base, set); err != nil {
			return nil, nil, err
		}
		r := app.Next(a, base, app.KindEnv, message)
		carryReleaseCommand(r, base)
		if r.Message == "" {
			r.Message = "env: " + config.Diff(next)
		}
		return r, next, nil
	}
}

// notBound refuses config that sets a variable a service binding of base
// sets: which value a unit saw would depend on their order in its spec
// (service bind refuses the same clash from the other side).
func notBound(appName string, base *app.Release, set app.ConfigMap) error {
	if base == nil {
		return nil
	}
	for _, b := range base.Services {
		for _, v := range render.BindingVariables(b) {
			if _, ok := set[v]; ok {
				return inputerr.Errorf("%s is set by app %q's binding of service %q: unbind it first ('tug service unbind %s %s') or bind it with --as OTHER_PREFIX", v, appName, b.Service, appName, b.Service)
			}
		}
	}
	return nil
}

// RollbackChange restores release target's image, processes and config as a
// new release. target 0 means the release that ran before the current one,
// or the current one when a later rollout was cut short: its units run a
// mix, and the current one is what ran before.
func RollbackChange(ctx context.Context, store *app.Store, target int) Change {
	return func(a *app.App, _ *app.Release, _ app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		if a.Release == 0 {
			return nil, nil, fmt.Errorf("app %q has no deployed release to roll back from", a.Name)
		}
		if target == 0 || target == a.Release {
			rels, err := store.ListReleases(ctx, a.Name)
			if err != nil {
				return nil, nil, err
			}
			// After a rollout cut short, the units run a mix of the
			// deployed release and the interrupted one: going back means
			// the deployed release again, not the one before it.
			cut := cutShort(rels, a.Release)
			switch {
			case target == a.Release && !cut:
				return nil, nil, fmt.Errorf("v%d is already the deployed release of app %q", target, a.Name)
			case target == 0 && cut:
				target = a.Release
			case target == 0:
				if target = app.RollbackTarget(rels, a.Release); target == 0 {
					return nil, nil, fmt.Errorf("app %q has no earlier good release to roll back to; see 'tug release list %s'", a.Name, a.Name)
				}
			}
		}
		old, config, err := store.GetRelease(ctx, a.Name, target)
		if err != nil {
			return nil, nil, err
		}
		if old.Image == "" {
			return nil, nil, fmt.Errorf("release v%d of app %q has no image (it only staged config); choose another", target, a.Name)
		}
		if err := bindingsExist(ctx, store, old); err != nil {
			return nil, nil, err
		}
		r := app.Next(a, old, app.KindRollback, fmt.Sprintf("rollback to v%d", target))
		r.RollbackOf = target
		carryReleaseCommand(r, old)
		return r, config, nil
	}
}

// bindingsExist fails, as an input error, when release r binds a service
// whose binding Secret is gone (the service was removed): its units would
// never start, and a rollback of the rollback could not help.
func bindingsExist(ctx context.Context, store *app.Store, r *app.Release) error {
	for _, b := range r.Services {
		_, err := store.Client.CoreV1().Secrets(store.Namespace).Get(ctx, render.ServiceBindingSecret(b.Service), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return inputerr.Errorf("release v%d of app %q binds service %q, which no longer exists: create service %s first (or unbind it, then roll back)", r.Version, r.App, b.Service, b.Service)
		} else if err != nil {
			return kube.TranslateError(err)
		}
	}
	return nil
}

// cutShort says whether a rollout after release current (of rels) stopped
// before it finished: its release is interrupted, or still pending.
func cutShort(rels []*app.Release, current int) bool {
	// the newest release that rolled out or tried to (staged config made
	// since rolled nothing): after an interrupted v6, a v7 that failed and
	// was rolled back is what the user last did
	for _, r := range rels {
		if r.Status != app.StatusStaged {
			return r.Version > current && (r.Status == app.StatusInterrupted || r.Status == app.StatusPending)
		}
	}
	return false
}

// SettingsChange changes what travels with a release besides image and
// config — limits, healthchecks, pool, tags — as a new release of that kind.
// edit may refuse (an unknown process, say), and then nothing is made.
func SettingsChange(kind, message string, edit func(a *app.App, r *app.Release) error) Change {
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		if base == nil || base.Image == "" {
			return nil, nil, fmt.Errorf("app %q has not been deployed yet; deploy it first with 'tug app deploy %s --image IMAGE'", a.Name, a.Name)
		}
		r := app.Next(a, base, kind, message)
		carryReleaseCommand(r, base)
		if err := edit(a, r); err != nil {
			return nil, nil, err
		}
		return r, maps.Clone(config), nil
	}
}

// carryReleaseCommand keeps base's release-phase command in r: it belongs
// to the code, which a config change, a settings change and a rollback keep
// (a rollback the restored release's). Whether r runs it is
// runsReleasePhase's call.
func carryReleaseCommand(r, base *app.Release) {
	if base != nil {
		r.ReleaseCommand = base.ReleaseCommand
	}
}
