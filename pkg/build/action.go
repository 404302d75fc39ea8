package build

import (
	"context"
	"fmt"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/usage"
)

// FromSource is `tug app deploy` without --image: build the app from a
// packed folder with the builder its record remembers (or the flags name),
// then remember the settings that worked.
type FromSource struct {
	App    string
	Want   app.BuildSettings // from the flags; empty fields come from the app
	Source *Source
	// AgentImage overrides the build agent's image ("" for AgentImage).
	AgentImage string
}

// Plan is a build ready to run: the app and its settings resolved.
type Plan struct {
	App      *app.App
	Settings app.BuildSettings
	Timeout  time.Duration
	RunImage string // the image the app's layer goes on
	Source   *Source
	agent    string
}

// Plan reads the app and resolves its build settings; it builds nothing.
func (f FromSource) Plan(ctx context.Context, store *app.Store) (*Plan, error) {
	a, err := store.GetApp(ctx, f.App)
	if err != nil {
		return nil, err
	}
	return f.plan(a)
}

func (f FromSource) plan(a *app.App) (*Plan, error) {
	s := f.Want.Merge(a.Build)
	if s.Builder == "" || s.Repository == "" {
		return nil, usage.Errorf("app %s has no builder or repository yet: deploy from source once with --builder IMAGE --repository HOST/PATH, or deploy an image with --image", a.Name)
	}
	timeout := DefaultTimeout
	if s.Timeout != "" {
		var err error
		if timeout, err = time.ParseDuration(s.Timeout); err != nil {
			return nil, fmt.Errorf("app %s's remembered build timeout %q: %w", a.Name, s.Timeout, err)
		}
	}
	run := s.RunImage
	if run == "" {
		run = s.Builder
	}
	return &Plan{App: a, Settings: s, Timeout: timeout, RunImage: run, Source: f.Source, agent: f.AgentImage}, nil
}

// Run builds and pushes the image, and remembers the settings in the app's
// record once a build has worked with them.
func (p *Plan) Run(ctx context.Context, d Deps, store *app.Store) (*Result, error) {
	a := p.App
	res, err := Build(ctx, d, Options{
		App: a.Name, Namespace: a.Namespace, Pool: a.Pool, PullSecret: a.RegistrySecret,
		Builder: p.Settings.Builder, RunImage: p.Settings.RunImage, Repository: p.Settings.Repository,
		Timeout: p.Timeout, AgentImage: p.agent, Source: p.Source,
	})
	if err != nil {
		return nil, err
	}
	if a.Build == nil || *a.Build != p.Settings {
		if _, err := store.UpdateApp(ctx, a.Name, func(x *app.App) error {
			s := p.Settings
			x.Build = &s
			return nil
		}); err != nil {
			return nil, fmt.Errorf("remembering the build settings: %w", err)
		}
	}
	return res, nil
}
