package promote

import (
	"context"
	"maps"
	"strings"

	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
)

// Endpoint is one app of a promote: where it lives and a client there.
type Endpoint struct {
	Client    kubernetes.Interface
	Context   string // the kubeconfig context, "" for the command line's own
	Namespace string
	App       string
}

func (e Endpoint) String() string {
	s := e.Namespace + "/" + e.App
	if e.Context != "" {
		s = e.Context + ":" + s
	}
	return s
}

func (e Endpoint) store() *app.Store { return &app.Store{Client: e.Client, Namespace: e.Namespace} }

// Plan is a promote as read before anything changes: the release and
// image of the source, what the target runs now, what differs, and the
// copy the target's repository needs.
type Plan struct {
	Source Ref  `json:"source"`
	Target Ref  `json:"target"`
	Diff   Diff `json:"diff"`
	// Image is what the target will run: the source's image by digest, in
	// the target's repository when it was copied there.
	Image string `json:"image"`
	Copy  *Copy  `json:"copy,omitempty"`

	src, dst Side
}

// Ref is an app of a promote and the release it runs.
type Ref struct {
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace"`
	App       string `json:"app"`
	Release   int    `json:"release"`
	Image     string `json:"image,omitempty"`
	Digest    string `json:"digest,omitempty"`
}

// Prepare reads both apps and checks the promote: the source must run a
// release whose image a registry digest pins, and the target must be
// another app. toRepository, when set, is where the target pulls from
// (else its build settings' repository, if any). Nothing is written.
func Prepare(ctx context.Context, src, dst Endpoint, toRepository string) (*Plan, error) {
	if src.Context == dst.Context && src.Namespace == dst.Namespace && src.App == dst.App {
		return nil, inputerr.Errorf("the target is the source (%s): promote to another app, NAMESPACE/APP or --to-context", src)
	}
	// the two apps are read side by side: often two clusters, each a
	// round trip or two away
	var s, d Side
	var derr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		d, derr = read(ctx, dst)
	}()
	s, err := read(ctx, src)
	<-done
	if err != nil {
		return nil, err
	}
	if s.Release == nil || s.App.Release == 0 {
		return nil, inputerr.Errorf("app %s runs no release yet: deploy it before promoting it", src)
	}
	run := s.Release.RunImage()
	repo, digest, ok := strings.Cut(run, "@")
	if !ok {
		return nil, inputerr.Errorf("app %s v%d runs %s, which no registry digest pins (an image loaded onto the nodes, or one its units have not pulled yet): promote needs an image from a registry", src, s.Release.Version, run)
	}
	if derr != nil {
		return nil, derr
	}
	p := &Plan{src: s, dst: d, Image: run, Diff: Compare(s, d),
		Source: Ref{Context: src.Context, Namespace: src.Namespace, App: src.App, Release: s.Release.Version, Image: run, Digest: digest},
		Target: Ref{Context: dst.Context, Namespace: dst.Namespace, App: dst.App}}
	if d.Release != nil {
		p.Target.Release, p.Target.Image, p.Target.Digest = d.Release.Version, d.Release.RunImage(), d.Release.RunDigest()
	}
	if toRepository == "" && d.App.Build != nil {
		toRepository = d.App.Build.Repository
	}
	if toRepository != "" && app.ImageRepository(toRepository) != repo {
		p.Copy = &Copy{From: run, To: toRepository + "@" + digest}
		p.Image = p.Copy.To
	}
	return p, nil
}

// read reads an app of a promote; a missing app is an input error (exit
// 2), as every other argument a command refuses.
func read(ctx context.Context, e Endpoint) (Side, error) {
	st := e.store()
	a, err := st.GetApp(ctx, e.App)
	if app.IsNotFound(err) {
		return Side{}, inputerr.Wrap(err)
	}
	if err != nil {
		return Side{}, err
	}
	s := Side{App: a, Config: app.ConfigMap{}}
	if a.Release == 0 {
		return s, nil
	}
	r, cfg, err := st.GetRelease(ctx, a.Name, a.Release)
	if err != nil {
		return Side{}, err
	}
	s.Release, s.Config = r, cfg
	return s, nil
}

// Refusal is a promote the build inputs refuse: the image was built with
// a build env the target sets otherwise. --force promotes it anyway.
func (p *Plan) Refusal() error {
	if k := p.Diff.Build.PerStage; len(k) > 0 {
		return inputerr.Errorf("the image of %s was built with build env %s set otherwise than %s sets it (per-stage build inputs are baked into the image); nothing changed: rebuild for %s, or pass --force to promote it anyway",
			p.Source, strings.Join(k, ", "), p.Target, p.Target)
	}
	return nil
}

func (r Ref) String() string {
	s := r.Namespace + "/" + r.App
	if r.Context != "" {
		s = r.Context + ":" + s
	}
	return s
}

// Origin is what the target's new release records about the source.
func (p *Plan) Origin() *app.Origin {
	return &app.Origin{Context: p.Source.Context, Namespace: p.Source.Namespace, App: p.Source.App,
		Release: p.Source.Release, Digest: p.Source.Digest, Image: p.Source.Image}
}

// Change is the target's new release: the source's image by digest and
// its process types and release command (they come with the code), the
// target's own config, units, settings and jobs. Under the target's lock
// the source's release is taken as planned: a later deploy of the source
// is promoted by running the promote again.
func (p *Plan) Change(message string) deploy.Change {
	origin := p.Origin()
	if message == "" {
		message = "promoted from " + origin.String()
	}
	src := p.src.Release
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r := app.Next(a, base, app.KindPromote, message)
		r.Image, r.ImageID = p.Image, ""
		r.BuiltWith, r.BuildArgs = src.BuiltWith.Clone(), append([]string(nil), src.BuildArgs...)
		r.Processes, r.ReleaseCommand = maps.Clone(src.Processes), src.ReleaseCommand
		r.PromotedFrom = origin
		return r, maps.Clone(config), nil
	}
}

// Result is a promote as -o json prints it (docs/output.md).
type Result struct {
	*Plan
	DryRun bool `json:"dryRun,omitempty"`
	// Rollout is the target's rollout (absent on a dry run).
	Rollout *deploy.Result `json:"rollout,omitempty"`
}
