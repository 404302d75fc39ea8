package review

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/service"
)

// Service is what review up does with one service bound to the app: the
// review app gets its own (Name) of the same plan and version, bound with
// the same prefix, so its variables and files are named as the app's; an
// external service (one tug does not run) gets no copy.
type Service struct {
	Base          app.ServiceBinding
	Name          string
	Plan, Version string
	External      bool
	// Fork restores the review's service from the app's data
	// (--fork-service), once.
	Fork bool
}

// CheckServices reads the services bound to the app's release (the
// deployed one, or one staged after it) and checks forks, each of which
// must name one of them that tug runs. Its errors about forks are input
// errors, found before anything changes.
func CheckServices(ctx context.Context, store *app.Store, base *app.App, reviewApp string, forks []string) ([]Service, error) {
	from, _, err := deploy.BaseRelease(ctx, store, base)
	if err != nil {
		return nil, err
	}
	var bound []app.ServiceBinding
	if from != nil {
		bound = from.Services
	}
	out := make([]Service, 0, len(bound))
	for _, b := range bound {
		rec, err := service.Lookup(ctx, store.Client, store.Namespace, b.Service)
		if err != nil {
			return nil, fmt.Errorf("service %q bound to app %q: %w", b.Service, base.Name, err)
		}
		s := Service{Base: b, Plan: rec.Plan, Version: rec.Version, External: rec.External, Fork: slices.Contains(forks, b.Service)}
		if !s.External {
			s.Name = service.ReviewServiceName(reviewApp, b.Service)
			if err := notInTheWay(ctx, store, s.Name, reviewApp); err != nil {
				return nil, err
			}
		}
		if s.Fork && s.External {
			return nil, inputerr.Errorf("--fork-service %s: service %q is external (a database tug does not run): tug has no backup of it to fork; nothing changed", b.Service, b.Service)
		}
		out = append(out, s)
	}
	for _, f := range forks {
		if !slices.ContainsFunc(bound, func(b app.ServiceBinding) bool { return b.Service == f }) {
			return nil, inputerr.Errorf("--fork-service %s: service %q is not bound to app %q (bound: %s); nothing changed", f, f, base.Name, boundNames(bound))
		}
	}
	return out, nil
}

// CheckOverrides refuses, as bad input, a --review-override of a variable
// that a binding the review app gets sets too: the review app would have
// it twice, and which one its units see would depend on the order of
// their environment (env set and service bind refuse the same).
// An external service is bound to the review app only with --copy-config
// (else its variables are the override's to set).
func CheckOverrides(svcs []Service, overrides app.ConfigMap, copyConfig bool) error {
	for _, s := range svcs {
		if s.External && !copyConfig {
			continue
		}
		for _, v := range render.BindingVariables(s.Base) {
			if _, ok := overrides[v]; ok {
				return inputerr.Errorf("--review-override %s: the review app's binding of service %q sets %s (its own copy of the database, or with --copy-config the same external one); nothing changed: leave it out, or override another variable", v, s.Base.Service, v)
			}
		}
	}
	return nil
}

// notInTheWay fails, as bad input, when a service named as the review
// app's copy exists and is not that review app's: it is never taken over.
func notInTheWay(ctx context.Context, store *app.Store, name, reviewApp string) error {
	rec, err := service.Lookup(ctx, store.Client, store.Namespace, name)
	switch {
	case inputerr.Is(err):
		return nil // no such service: review up makes it
	case err != nil:
		return err
	case rec.Review == nil || rec.Review.App != reviewApp:
		return inputerr.Errorf("service %q exists and is not review app %q's: it would be that app's copy of an app's service; remove or rename it; nothing changed", name, reviewApp)
	}
	return nil
}

func boundNames(bound []app.ServiceBinding) string {
	if len(bound) == 0 {
		return "none"
	}
	names := make([]string, len(bound))
	for i, b := range bound {
		names[i] = b.Service
	}
	return strings.Join(names, ", ")
}

// reviewBindings are the bindings the review app's first release starts
// with: never the app's own services (their copies are bound after they
// are made), only its external ones and only with CopyConfig (the same
// database, as the app's config is the same).
func reviewBindings(o UpOptions) []app.ServiceBinding {
	var out []app.ServiceBinding
	for _, s := range o.Services {
		switch {
		case !s.External:
		case o.CopyConfig:
			out = append(out, s.Base)
			o.note(fmt.Sprintf("external service %s bound to the review app as to %s (--copy-config): the same database", s.Base.Service, o.Of))
		default:
			o.note(fmt.Sprintf("external service %s (a database tug does not run) not bound to the review app: --copy-config binds the same one, or give it its own with --review-override %s_URL=...", s.Base.Service, s.Base.Prefix))
		}
	}
	return out
}

// ensureServices makes the review app's own services (or finishes those a
// killed tug began), forks those asked for that were not forked yet, and
// binds each that its newest release does not bind, as a staged release
// the deploy that follows rolls out.
func ensureServices(ctx context.Context, d deploy.Deps, o UpOptions, reviewApp string) error {
	for _, s := range o.Services {
		if s.External {
			continue
		}
		owner := &service.ReviewOwner{Of: o.Of, Name: o.Name, App: reviewApp, Base: s.Base.Service}
		if _, err := service.Create(ctx, o.ServiceDeps, service.CreateOptions{Name: s.Name, Plan: s.Plan, Version: s.Version, Size: o.ServiceSize, Review: owner}); err != nil {
			return err
		}
		if err := fork(ctx, o, s); err != nil {
			return err
		}
		if err := bind(ctx, d, o, reviewApp, s); err != nil {
			return err
		}
	}
	return nil
}

// fork restores s from the app's service when asked and not done before:
// a later review up keeps the data the review app wrote.
func fork(ctx context.Context, o UpOptions, s Service) error {
	if !s.Fork {
		return nil
	}
	sd := o.ServiceDeps
	rec, err := service.Lookup(ctx, sd.Client, sd.Namespace, s.Name)
	if err != nil {
		return err
	}
	if f := rec.Review.ForkedFrom; f != nil {
		o.note(fmt.Sprintf("service %s keeps its data (forked from %s); 'tug review down' then 'up' forks it anew", s.Name, f))
		return nil
	}
	f, err := service.ForkInto(ctx, sd, s.Base.Service, s.Name, o.Now)
	if err != nil {
		return err
	}
	o.note(fmt.Sprintf("service %s forked from %s", s.Name, f))
	return nil
}

// bind binds s to the review app with the app's prefix, unless its newest
// release does already.
func bind(ctx context.Context, d deploy.Deps, o UpOptions, reviewApp string, s Service) error {
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, err := store.GetApp(ctx, reviewApp)
	if err != nil {
		return err
	}
	if a.LastRelease > 0 {
		r, _, err := store.GetRelease(ctx, a.Name, a.LastRelease)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(r.Services, func(b app.ServiceBinding) bool { return b.Service == s.Name }) {
			return nil
		}
	}
	_, err = deploy.Roll(ctx, d, reviewApp, bindChange(ctx, o, reviewApp, s), deploy.Options{NoRestart: true})
	if errors.Is(err, deploy.ErrNoChange) {
		return nil
	}
	return err
}

// bindChange binds s to the review app as 'tug service bind' does; to a
// review app not deployed yet (its first up, or one a kill stopped before
// its deploy) the binding goes in a staged release with no image, which
// the deploy that follows carries.
func bindChange(ctx context.Context, o UpOptions, reviewApp string, s Service) deploy.Change {
	b := service.Bind{App: reviewApp, Service: s.Name, Prefix: s.Base.Prefix, Dir: s.Base.BindingDir()}
	deployed := service.BindChange(ctx, o.ServiceDeps, b)
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		if base != nil && base.Image != "" {
			return deployed(a, base, config)
		}
		sb, err := service.Binding(ctx, o.ServiceDeps.Client, o.ServiceDeps.Namespace, s.Name, s.Base.Prefix)
		if err != nil {
			return nil, nil, err
		}
		sb.Dir = b.Dir
		r := app.Next(a, base, app.KindService, "service "+s.Name+" bound")
		if base != nil {
			r.ReleaseCommand = base.ReleaseCommand
		}
		r.Services = append(slices.Clone(r.Services), sb)
		return r, maps.Clone(config), nil
	}
}

// RemoveServices removes review name of app of's own services, data and
// all; a service of the app's, or of another review, is never touched.
// Down and Sweep call it once the review app is removed; it is called on
// its own for a review whose app is gone (a kill between the two, or
// 'tug app remove' of the review app).
func RemoveServices(ctx context.Context, sd service.Deps, of, name string) ([]string, error) {
	recs, err := service.ReviewServices(ctx, sd.Client, sd.Namespace, of, name)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, r := range recs {
		done, err := service.RemoveReview(ctx, sd, r.Name, *r.Review)
		if err != nil {
			return removed, err
		}
		if done {
			removed = append(removed, r.Name)
		}
	}
	return removed, nil
}
