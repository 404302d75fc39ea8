// Package review keeps review apps: a copy of an app per pull request
// (tug review up), under a derived name in the app's namespace, marked on
// its record with what it reviews and when it expires. There is no
// background process: every review command removes the expired ones
// first (Sweep).
package review

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lifecycle"
	"tug.dev/tug/pkg/service"
)

// DefaultTTL is how long a review app lives unless --ttl says.
const DefaultTTL = 72 * time.Hour

// MaxTTL is the longest a review app may live between two review ups: it
// is a pull request's copy, and one meant to stay is an app ('tug app
// create'), not a review nobody removes.
const MaxTTL = 30 * 24 * time.Hour

// AppName is the review app's name: the app's, then the review's.
func AppName(of, name string) string { return of + "-" + name }

// Validate checks a review's names and TTL before anything is asked:
// the name must be a DNS label, the derived app name a valid app name,
// the TTL positive. Its errors are input errors (exit 2).
func Validate(of, name string, ttl time.Duration) error {
	if err := app.ValidateName(of); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return inputerr.Errorf("invalid review name %q: it must be a DNS label (lower-case letters, digits and '-', such as pr-42): %s", name, strings.Join(errs, "; "))
	}
	if err := app.ValidateName(AppName(of, name)); err != nil {
		return inputerr.Errorf("review %q of app %q: its app name %q is not valid: %v", name, of, AppName(of, name), err)
	}
	if ttl <= 0 {
		return inputerr.Errorf("--ttl must be positive, not %s", ttl)
	}
	if ttl > MaxTTL {
		return inputerr.Errorf("--ttl %s is longer than a review app may live (%s, 30 days): each review up moves its expiry again; for an app that stays, use 'tug app create'", ttl, MaxTTL)
	}
	return nil
}

// UpOptions make or refresh a review app.
type UpOptions struct {
	Of, Name string
	TTL      time.Duration
	// CopyConfig copies the app's config values; without it the review app
	// gets only Overrides (never production secrets by accident).
	CopyConfig bool
	// Overrides are config values the review app gets in place of the
	// app's (--review-override KEY=VALUE).
	Overrides map[string]string
	Now       time.Time
	// Note, when not nil, is told what the review app did not get from
	// the app (said on stderr).
	Note func(string)
	// Services are the app's bound services (CheckServices); the review
	// app gets its own copy of each, made with ServiceDeps, of ServiceSize
	// ("": the plan's default).
	Services    []Service
	ServiceDeps service.Deps
	ServiceSize string
}

// Up makes the review app when it does not exist: its record (the app's
// processes with at most one unit each, build settings in a repository of
// its own, registry credentials, allow list, suspended jobs; no domains)
// and a staged first release with the app's process types, settings and
// jobs, and config as UpOptions says; its volumes are never bound. When
// it exists, its expiry moves to now + TTL (and a release a killed tug did
// not stage is staged). The caller then deploys the new code to it.
func Up(ctx context.Context, d deploy.Deps, o UpOptions) (*app.App, error) {
	if err := CheckOverrides(o.Services, o.Overrides, o.CopyConfig); err != nil {
		return nil, err
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	base, err := Check(ctx, store, o.Of, o.Name)
	if err != nil {
		return nil, err
	}
	name := AppName(o.Of, o.Name)
	a, err := createOrExtend(ctx, d, store, base, o)
	if err != nil {
		return nil, err
	}
	if a.LastRelease == 0 {
		if err := stage(ctx, d, store, base, a, o); err != nil {
			return nil, err
		}
		return a, ensureServices(ctx, d, o, name)
	}
	if err := ensureServices(ctx, d, o, name); err != nil {
		return nil, err
	}
	if len(o.Overrides) > 0 {
		// the overrides as this run gives them, for the deploy that follows
		_, err := deploy.Roll(ctx, d, name, deploy.EnvChange(o.Overrides, nil, "review overrides"), deploy.Options{NoRestart: true})
		if err != nil && !errors.Is(err, deploy.ErrNoChange) {
			return nil, err
		}
	}
	return a, nil
}

// Check is Up's input checks, made before anything changes (a review
// command's sweep included): the app exists and is no review app, and an
// app named as the review app is that review. It returns the app.
func Check(ctx context.Context, store *app.Store, of, name string) (*app.App, error) {
	base, err := store.GetApp(ctx, of)
	if app.IsNotFound(err) {
		return nil, inputerr.Wrap(err)
	}
	if err != nil {
		return nil, err
	}
	if base.Review != nil {
		return nil, inputerr.Errorf("app %q is itself a review app (of %q): review the app it copies", of, base.Review.Of)
	}
	a, err := store.GetApp(ctx, AppName(of, name))
	if err == nil && !isReview(a, of, name) {
		return nil, inputerr.Errorf("app %q exists and is not review %q of app %q; nothing changed", a.Name, name, of)
	}
	if err != nil && !app.IsNotFound(err) {
		return nil, err
	}
	return base, nil
}

// createOrExtend makes the review app, or extends the one there.
func createOrExtend(ctx context.Context, d deploy.Deps, store *app.Store, base *app.App, o UpOptions) (*app.App, error) {
	name := AppName(o.Of, o.Name)
	a, err := store.GetApp(ctx, name)
	if app.IsNotFound(err) {
		a, err = create(ctx, store, base, o)
		if !app.IsExists(err) {
			return a, err
		}
		// another review up of this review (a CI job run twice) made it
		// after the read: extend that one
		a, err = store.GetApp(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	if !isReview(a, o.Of, o.Name) {
		return nil, inputerr.Errorf("app %q exists and is not review %q of app %q; nothing changed", name, o.Name, o.Of)
	}
	return extend(ctx, d, name, o)
}

// extend moves the review app's expiry to now + TTL, under its lock.
func extend(ctx context.Context, d deploy.Deps, name string, o UpOptions) (*app.App, error) {
	t, err := deploy.Begin(ctx, d, name, nil)
	if err != nil {
		return nil, err
	}
	defer t.End()
	return t.Update(func(x *app.App) error {
		x.Review.UpdatedAt, x.Review.ExpiresAt = o.Now.UTC(), o.Now.Add(o.TTL).UTC()
		return nil
	})
}

// create stores the review app's record, marked as one from the start, so
// a tug killed before its first release leaves an app the next review
// command finishes or removes.
func create(ctx context.Context, store *app.Store, base *app.App, o UpOptions) (*app.App, error) {
	now := o.Now.UTC().Truncate(time.Second)
	a := &app.App{Name: AppName(o.Of, o.Name), Namespace: store.Namespace, Team: base.Team, Pool: base.Pool,
		Description: fmt.Sprintf("review %s of %s", o.Name, o.Of), CreatedAt: now, HistoryMax: 3,
		Processes: map[string]app.Process{}, RegistrySecret: base.RegistrySecret,
		Allow: append([]string(nil), base.Allow...), SuspendedJobs: append([]string(nil), base.SuspendedJobs...),
		Review: &app.Review{Of: o.Of, Name: o.Name, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(o.TTL)}}
	for n, p := range base.Processes {
		// a preview needs no production scale
		p.Replicas, p.Autoscale, p.RestartedAt = min(p.Replicas, 1), nil, ""
		a.Processes[n] = p
	}
	a.Build = reviewBuild(base, o)
	if err := suspendJobs(ctx, store, base, a, o); err != nil {
		return nil, err
	}
	if err := store.CreateApp(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// reviewBuild are the review app's build settings: the app's, pushing to
// a repository of its own, without the app's build env unless CopyConfig.
func reviewBuild(base *app.App, o UpOptions) *app.BuildSettings {
	b := base.Copy().Build
	if b == nil {
		return nil
	}
	if b.Repository != "" {
		// its builds push to a repository of their own, never over the app's tags
		b.Repository += "-" + o.Name
	}
	if len(b.BuildEnv) > 0 && !o.CopyConfig {
		// build env values are often build secrets (a package token):
		// a pull request's code builds with none of the app's
		b.BuildEnv = nil
		o.note(fmt.Sprintf("build env of %s not copied (--copy-config copies it): %s", base.Name, strings.Join(envKeys(base.Build.BuildEnv), ", ")))
	}
	return b
}

// suspendJobs suspends every job of the app's release on the review app:
// a preview must not send the app's mails or run its reports on a
// schedule. With CopyConfig, a release command runs against the app's
// config (its database, say): that is warned.
func suspendJobs(ctx context.Context, store *app.Store, base, a *app.App, o UpOptions) error {
	from, _, err := deploy.BaseRelease(ctx, store, base)
	if err != nil || from == nil {
		return err
	}
	names := make([]string, 0, len(from.Jobs))
	for n := range from.Jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 0 {
		a.SuspendedJobs = names
		o.note(fmt.Sprintf("jobs suspended on the review app ('tug job resume %s NAME' runs one): %s", a.Name, strings.Join(names, ", ")))
	}
	if o.CopyConfig && from.ReleaseCommand != "" {
		o.note(fmt.Sprintf("warning: %s's release command (%s) runs on each review deploy, with the config --copy-config copied", base.Name, from.ReleaseCommand))
	}
	return nil
}

func (o UpOptions) note(s string) {
	if o.Note != nil {
		o.Note(s)
	}
}

// envKeys are the keys of KEY=VALUE entries, sorted.
func envKeys(env []string) []string {
	keys := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// stage stores the review app's first release: the app's deployed (or
// staged) release's process types, settings and jobs, no image yet.
func stage(ctx context.Context, d deploy.Deps, store *app.Store, base, a *app.App, o UpOptions) error {
	from, config, err := deploy.BaseRelease(ctx, store, base)
	if err != nil {
		return err
	}
	bindings := reviewBindings(o)
	change := func(ra *app.App, _ *app.Release, _ app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r := app.Next(ra, from, app.KindDeploy, fmt.Sprintf("review %s of %s", o.Name, o.Of))
		r.Image, r.ImageID, r.BuiltWith, r.BuildArgs, r.PromotedFrom = "", "", nil, nil, nil
		r.Volumes, r.Pool = nil, ra.Pool    // never the app's volumes
		r.Services = slices.Clone(bindings) // nor its services
		c := app.ConfigMap{}
		if o.CopyConfig {
			c = maps.Clone(config)
		}
		maps.Copy(c, o.Overrides)
		return r, c, nil
	}
	_, err = deploy.Roll(ctx, d, a.Name, change, deploy.Options{NoRestart: true})
	return err
}

// Entry is a review app as review list shows it (docs/output.md).
type Entry struct {
	App       string    `json:"app"`
	Of        string    `json:"of"`
	Name      string    `json:"name"`
	Release   int       `json:"release"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	URL       string    `json:"url,omitempty"`
	// Services are the review app's own services (made by review up for
	// the app's), by name.
	Services []ServiceEntry `json:"services"`
}

// ServiceEntry is a review app's own service as review list shows it.
type ServiceEntry struct {
	Name    string `json:"name"`
	Base    string `json:"base"`
	Plan    string `json:"plan"`
	Version string `json:"version,omitempty"`
	// ForkedFrom says where its data came from (--fork-service); absent:
	// it started empty.
	ForkedFrom *service.Fork `json:"forkedFrom,omitempty"`
}

// List lists the namespace's review apps, by app name (of, when not "",
// keeps those of one app).
func List(ctx context.Context, store *app.Store, of string) ([]Entry, error) {
	apps, err := store.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := service.ReviewServices(ctx, store.Client, store.Namespace, of, "")
	if err != nil {
		return nil, err
	}
	svcs := map[string][]ServiceEntry{}
	for _, r := range recs {
		svcs[r.Review.App] = append(svcs[r.Review.App], ServiceEntry{Name: r.Name, Base: r.Review.Base, Plan: r.Plan, Version: r.Version, ForkedFrom: r.Review.ForkedFrom})
	}
	out := []Entry{}
	for _, a := range apps {
		r := a.Review
		if r == nil || of != "" && r.Of != of {
			continue
		}
		e := Entry{App: a.Name, Of: r.Of, Name: r.Name, Release: a.Release, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ExpiresAt: r.ExpiresAt,
			Services: append([]ServiceEntry{}, svcs[a.Name]...)}
		sort.Slice(e.Services, func(i, j int) bool { return e.Services[i].Name < e.Services[j].Name })
		if urls := app.URLs(a); len(urls) > 0 {
			e.URL = urls[0]
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].App < out[j].App })
	return out, nil
}

// Sweep removes the namespace's review apps that expired by now, each
// as 'tug app remove' does, with their own services (data and all); it
// returns those removed. A review app it could not remove (another tug
// changes it) is left for the next sweep and said in the error. Services
// of a review whose app is gone (a tug killed between the two removals)
// go too.
func Sweep(ctx context.Context, d deploy.Deps, sd service.Deps, now time.Time) ([]string, error) {
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	apps, err := store.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	afterList()
	removed := []string{}
	var failed []string
	for _, a := range apps {
		if !a.Review.Expired(now) {
			continue
		}
		of, name := a.Review.Of, a.Review.Name
		// the list was read without the lock: a review up may have
		// extended (or made anew) this review app since, so it is
		// removed only if it is still that review, and still expired
		_, err := removeIf(ctx, d, sd, a.Name, func(x *app.App) error {
			if !isReview(x, of, name) || !x.Review.Expired(now) {
				return errNoLongerExpired
			}
			return nil
		})
		switch {
		case errors.Is(err, errNoLongerExpired):
			continue
		case err != nil && !app.IsNotFound(err):
			failed = append(failed, fmt.Sprintf("%s: %v", a.Name, err))
			continue
		}
		removed = append(removed, a.Name)
	}
	if err := removeOrphans(ctx, d, sd); err != nil {
		failed = append(failed, err.Error())
	}
	if len(failed) > 0 {
		return removed, fmt.Errorf("expired review apps not removed (the next review command tries again): %s", strings.Join(failed, "; "))
	}
	return removed, nil
}

// afterList runs between Sweep's list and its removals; a test extends a
// review app there, as a concurrent review up would.
var afterList = func() {}

// errNoLongerExpired: a review app Sweep listed as expired was extended
// before Sweep took its lock; Sweep leaves it.
var errNoLongerExpired = errors.New("no longer an expired review app")

// isReview says whether a is review name of app of.
func isReview(a *app.App, of, name string) bool {
	return a.Review != nil && a.Review.Of == of && a.Review.Name == name
}

// removeIf removes review app appName as 'tug app remove' does when
// check, run on its record read under its lock, passes, then its own
// services, still under its lock; nothing is removed otherwise. The app
// goes first: its units stop using the services before those go.
func removeIf(ctx context.Context, d deploy.Deps, sd service.Deps, appName string, check func(*app.App) error) ([]string, error) {
	var owner *app.Review
	t, err := deploy.Begin(ctx, d, appName, func(a *app.App) error {
		owner = a.Review
		return check(a)
	})
	if err != nil {
		return nil, err
	}
	err = lifecycle.RemoveHeld(t.Ctx(), t.Deps(), appName, lifecycle.RemoveOptions{})
	t.End()
	if err != nil {
		return nil, err
	}
	// the services' locks once the app's is let go: every other path
	// (bind, rotate, a tug.yaml deploy) takes a service's lock before an
	// app's, and two tugs taking them in opposite orders would each wait
	// for the other. A kill in between leaves services the next sweep
	// removes (removeOrphans).
	return RemoveServices(ctx, sd, owner.Of, owner.Name)
}

// removeOrphans removes review services whose review app is gone. A
// review up makes its app's record before its services, so a service
// whose review app has no record is left from a removal that stopped.
func removeOrphans(ctx context.Context, d deploy.Deps, sd service.Deps) error {
	recs, err := service.ReviewServices(ctx, d.Client, d.Namespace, "", "")
	if err != nil {
		return err
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	var failed []string
	for _, r := range recs {
		if _, err := store.GetApp(ctx, r.Review.App); !app.IsNotFound(err) {
			continue
		}
		// RemoveReview checks again, under the service's lock, that the
		// app is gone: a review up may make it again meanwhile
		if _, err := service.RemoveReview(ctx, sd, r.Name, *r.Review); err != nil {
			failed = append(failed, fmt.Sprintf("service %s: %v", r.Name, err))
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// Down removes review name of app of: every object it made, its own
// services with their data included (named in what it returns).
func Down(ctx context.Context, d deploy.Deps, sd service.Deps, of, name string) ([]string, error) {
	appName := AppName(of, name)
	// checked under the app's lock: what an unlocked read saw may have
	// changed by the time the lock is held
	return removeIf(ctx, d, sd, appName, func(a *app.App) error {
		if !isReview(a, of, name) {
			return inputerr.Errorf("app %q is not review %q of app %q; nothing removed", appName, name, of)
		}
		return nil
	})
}
