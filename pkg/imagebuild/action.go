package imagebuild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/inputerr"
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
	// Dockerfile is the source's Dockerfile (a slash-separated path inside
	// it), "" for none: with no builder set, BuildKit builds it.
	Dockerfile    string
	BuildArgs     []string // K=V, for a Dockerfile build
	Target        string   // the stage of a Dockerfile build
	BuildKitImage string   // "" for BuildKitImage
	// Cluster is what the cluster's settings give the app's pool when the
	// command names nothing (pkg/clustersettings: buildAgentImage,
	// buildkitImage, defaultBuilder); nil for none.
	Cluster *clustersettings.Stored
}

// Plan is a build ready to run: the app and its settings resolved.
type Plan struct {
	App      *app.App
	Settings app.BuildSettings
	Timeout  time.Duration
	RunImage string // the image the app's layer goes on
	Source   *Source
	// Dockerfile is set for a BuildKit build of it (no builder).
	Dockerfile string
	// remember is what the app's record keeps of Settings once a build
	// worked: all of it but a builder that was the cluster's default.
	remember app.BuildSettings
	from     FromSource
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
	defaulted, repoDefaulted := f.clusterDefaults(a, &s)
	dockerfile, err := f.whatBuilds(a, s, defaulted)
	if err != nil {
		return nil, err
	}
	if _, err := ParseRepository(s.Repository); err != nil {
		if f.Want.Repository != "" {
			return nil, inputerr.Errorf("invalid --repository %q: %v; want HOST[:PORT]/PATH in lower case, without a tag or digest (tug pushes the tag latest and deploys by digest)", s.Repository, err)
		}
		return nil, inputerr.Errorf("app %s's remembered repository %q is invalid: %v; deploy with --repository HOST[:PORT]/PATH to replace it", a.Name, s.Repository, err)
	}
	if dockerfile != "" && (len(f.Want.Buildpacks) > 0 || len(f.Want.BuildEnv) > 0) {
		return nil, inputerr.Errorf("--buildpack and --build-env are for Cloud Native Buildpacks builders; app %s builds %s with BuildKit (name a CNB builder with --builder)", a.Name, dockerfile)
	}
	if dockerfile == "" && (len(f.BuildArgs) > 0 || f.Target != "") {
		return nil, inputerr.Errorf("--build-arg and --target are for Dockerfile builds; app %s builds with the builder %s", a.Name, s.Builder)
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
	if dockerfile != "" {
		run = ""
	}
	remember := s
	if defaulted {
		remember.Builder = "" // a later change of the default reaches the app
	}
	if repoDefaulted {
		remember.Repository = ""
	}
	return &Plan{App: a, Settings: s, remember: remember, Timeout: timeout, RunImage: run, Source: f.Source, Dockerfile: dockerfile, from: f}, nil
}

// clusterDefaults fills what the cluster settings give where s and f name
// nothing: the build images, the default builder (defaulted: s's builder
// is the cluster's, not the app's own) and the default repository
// (repoDefaulted: s's repository is under it).
func (f *FromSource) clusterDefaults(a *app.App, s *app.BuildSettings) (defaulted, repoDefaulted bool) {
	if f.Cluster == nil {
		return false, false
	}
	cs := f.Cluster.For(a.Pool)
	f.AgentImage = cmp.Or(f.AgentImage, cs.Get(clustersettings.BuildAgentImage))
	f.BuildKitImage = cmp.Or(f.BuildKitImage, cs.Get(clustersettings.BuildkitImage))
	if s.Builder == "" && f.Dockerfile == "" {
		s.Builder = cs.Get(clustersettings.DefaultBuilder)
		defaulted = s.Builder != ""
	}
	if prefix := cs.Get(clustersettings.DefaultRepository); s.Repository == "" && prefix != "" {
		// the namespace too: apps of one name in two namespaces (a
		// sandbox and prod) must not share an image, nor its build cache
		s.Repository = strings.TrimSuffix(prefix, "/") + "/" + a.Namespace + "/" + a.Name
		repoDefaulted = true
	}
	return defaulted, repoDefaulted
}

// whatBuilds is the Dockerfile BuildKit builds ("" for a builder image),
// or an input error saying which of builder and repository is missing.
func (f FromSource) whatBuilds(a *app.App, s app.BuildSettings, defaulted bool) (string, error) {
	switch {
	case s.Builder == "" && f.Dockerfile != "":
		if s.Repository == "" {
			return "", inputerr.Errorf("app %s has no repository yet: deploy from source once with --repository HOST/PATH for the image built from %s, or deploy an image with --image", a.Name, f.Dockerfile)
		}
		return f.Dockerfile, nil
	case s.Builder != "" && s.Repository == "":
		from := "the app's builder " + s.Builder
		if defaulted {
			from = "the cluster's default builder " + s.Builder
		}
		return "", inputerr.Errorf("app %s has no repository yet to push the image %s builds to: deploy from source once with --repository HOST/PATH, or deploy an image with --image", a.Name, from)
	case s.Builder == "" || s.Repository == "":
		return "", inputerr.Errorf("app %s has no builder or repository yet: deploy from source once with --builder IMAGE --repository HOST/PATH (or from a folder with a Dockerfile and --repository), or deploy an image with --image", a.Name)
	}
	return "", nil
}

// Run builds and pushes the image. The settings it worked with are
// Remember's, for the deploy's transaction to write in the app's record.
func (p *Plan) Run(ctx context.Context, d Deps, store *app.Store) (*Result, error) {
	a := p.App
	o := Options{
		App: a.Name, Namespace: a.Namespace, Pool: a.Pool, PullSecret: a.RegistrySecret,
		Builder: p.Settings.Builder, RunImage: p.Settings.RunImage, Repository: p.Settings.Repository,
		Timeout: p.Timeout, AgentImage: p.from.AgentImage, Source: p.Source,
		Dockerfile: p.Dockerfile, BuildArgs: p.from.BuildArgs, Target: p.from.Target, BuildKitImage: p.from.BuildKitImage,
		PlainHTTP: p.plainHTTP(),
	}
	if p.Dockerfile == "" {
		if err := p.inspect(ctx, d, store, &o); err != nil {
			return nil, err
		}
	}
	res, err := Build(ctx, d, o)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Remember is what the app's record must remember of the build once Run
// has worked (deploy.Options.RememberBuild), or nil when it does already:
// the next deploy from source builds the same way without the flags.
func (p *Plan) Remember() *app.BuildSettings {
	if a := p.App; a.Build != nil && a.Build.Equal(p.remember) {
		return nil
	}
	s := p.remember
	return &s
}

// inspect reads the builder: a Cloud Native Buildpacks builder's build runs
// its lifecycle (o.CNB), at a Platform API both speak, with buildpacks it
// has; --buildpack and --build-env need one.
func (p *Plan) inspect(ctx context.Context, d Deps, store *app.Store, o *Options) error {
	s := p.Settings
	c, err := p.inspected(ctx, d, store, *o)
	var unreadable *UnreadableError
	if errors.As(err, &unreadable) && len(s.Buildpacks) == 0 && len(s.BuildEnv) == 0 {
		// not a registry's image: it can only be a builder of tug's contract
		d.Progress.Done(unreadable.Error() + "; building with tug's builder contract")
		return nil
	}
	if err != nil {
		return err
	}
	if c == nil {
		if len(s.Buildpacks) > 0 || len(s.BuildEnv) > 0 {
			return inputerr.Errorf("--buildpack and --build-env are for Cloud Native Buildpacks builders; %s is not one (its config has no io.buildpacks.builder.metadata label)", s.Builder)
		}
		return nil
	}
	if err := c.Negotiate(); err != nil {
		return err
	}
	if err := c.CheckBuildpacks(s.Buildpacks); err != nil {
		return err
	}
	o.CNB, o.BuildEnv, o.Buildpacks = c, s.BuildEnv, s.Buildpacks
	return nil
}

// inspected is what the builder is: for a builder pinned by digest (it
// cannot change), what the app's record, or else another app's in the
// namespace, remembers of it; otherwise read by Inspect (a pod), and
// remembered once the build has worked when it is pinned. So the builder
// a namespace's apps share is read once, not once per app.
func (p *Plan) inspected(ctx context.Context, d Deps, store *app.Store, o Options) (*CNB, error) {
	pinned := strings.Contains(o.Builder, "@sha256:")
	if known := p.App.Build; pinned && known != nil && known.Inspected != nil && known.Inspected.Image == o.Builder {
		p.remember.Inspected = known.Inspected.Clone()
		return fromInspected(known.Inspected), nil
	}
	if known := inspectedByAnother(ctx, store, o.Builder); known != nil {
		p.remember.Inspected = known
		return fromInspected(known), nil
	}
	c, err := Inspect(ctx, d, o)
	if err == nil && pinned {
		p.remember.Inspected = toInspected(o.Builder, c)
	}
	return c, err
}

// inspectedByAnother is what another app of the namespace remembers of
// builder (pinned by digest), nil when none does or the apps cannot be
// listed (the pod reads it then).
func inspectedByAnother(ctx context.Context, store *app.Store, builder string) *app.InspectedBuilder {
	if store == nil || !strings.Contains(builder, "@sha256:") {
		return nil
	}
	apps, err := store.ListApps(ctx)
	if err != nil {
		return nil
	}
	for _, a := range apps {
		if b := a.Build; b != nil && b.Inspected != nil && b.Inspected.Image == builder {
			return b.Inspected.Clone()
		}
	}
	return nil
}

// plainHTTP are the registries a Dockerfile build speaks plain HTTP to,
// from the Dockerfile as it was packed (its links followed only inside
// the source).
func (p *Plan) plainHTTP() []string {
	if p.Dockerfile == "" {
		return nil
	}
	content := ""
	if p.Source != nil && p.Source.Dir != "" {
		if root, err := os.OpenRoot(p.Source.Dir); err == nil {
			b, _ := root.ReadFile(filepath.FromSlash(p.Dockerfile))
			content = string(b)
			root.Close()
		}
	}
	return PlainHTTPRegistries(p.Settings.Repository, content)
}
