package promote

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
)

// A pipeline is an ordered list of apps, NAMESPACE/APP each, in one
// cluster, kept on the record of every stage (app.Pipeline): no server and
// no object of its own. Promote moves the image of one stage to the next.

// Stage is one app of a pipeline.
type Stage struct{ Namespace, App string }

func (s Stage) String() string { return s.Namespace + "/" + s.App }

// ParseStage reads NAMESPACE/APP, or APP in namespace ns.
func ParseStage(s, ns string) (Stage, error) {
	n, a, ok := strings.Cut(s, "/")
	if !ok {
		n, a = ns, s
	}
	if err := app.ValidateNamespace(n); err != nil {
		return Stage{}, err
	}
	if err := app.ValidateName(a); err != nil {
		return Stage{}, err
	}
	return Stage{Namespace: n, App: a}, nil
}

// ValidatePipeline checks a pipeline's name and stages: two at least, none
// twice. Its errors are input errors.
func ValidatePipeline(name string, stages []Stage) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return inputerr.Errorf("invalid pipeline name %q: %s", name, strings.Join(errs, "; "))
	}
	if len(stages) < 2 {
		return inputerr.Errorf("a pipeline needs two stages at least, NAMESPACE/APP each, in order")
	}
	for i, s := range stages {
		if slices.Contains(stages[:i], s) {
			return inputerr.Errorf("stage %s is given twice", s)
		}
	}
	return nil
}

// SetPipeline writes the pipeline on every stage's record, and takes it off
// the apps that were stages of a pipeline of that name and are no more
// (returned, NAMESPACE/APP each).
// Every stage must exist (a missing one is an input error, and nothing is
// written).
func SetPipeline(ctx context.Context, d deploy.Deps, name string, stages []Stage) ([]string, error) {
	if err := ValidatePipeline(name, stages); err != nil {
		return nil, err
	}
	old, err := formerStages(ctx, d.Client, name, stages)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(stages))
	for i, s := range stages {
		names[i] = s.String()
	}
	removed := []string{}
	for _, o := range old {
		if slices.Contains(names, o) {
			continue
		}
		s, err := ParseStage(o, "")
		if err != nil {
			continue
		}
		took := false
		err = update(ctx, d, s, func(a *app.App) error {
			if took = a.Pipeline != nil && a.Pipeline.Name == name; took {
				a.Pipeline = nil
			}
			return nil
		})
		if err != nil && !app.IsNotFound(err) {
			return removed, err
		}
		if took && err == nil {
			removed = append(removed, o)
		}
	}
	// the new list last: until it is written, the stages kept from the old
	// list still name it, so a set killed part way leaves the next set
	// every former stage to find, whatever namespace it is in
	for _, s := range stages {
		if err := update(ctx, d, s, func(a *app.App) error {
			a.Pipeline = &app.Pipeline{Name: name, Stages: slices.Clone(names)}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return removed, nil
}

// formerStages are every stage that any record names for pipeline name:
// the stages' own and those of the other apps of their namespaces. A set
// stopped part way leaves records that disagree, and the next set must
// take the pipeline off every app any of them names. Every new stage must
// exist (an input error when one does not).
func formerStages(ctx context.Context, c kubernetes.Interface, name string, stages []Stage) ([]string, error) {
	var old []string
	add := func(a *app.App) {
		if a.Pipeline != nil && a.Pipeline.Name == name {
			for _, s := range a.Pipeline.Stages {
				if !slices.Contains(old, s) {
					old = append(old, s)
				}
			}
		}
	}
	// one LIST of each namespace's apps: the stages, and the other apps
	// that may name the pipeline
	listed := map[string][]*app.App{}
	for _, s := range stages {
		apps, ok := listed[s.Namespace]
		if !ok {
			var err error
			if apps, err = (&app.Store{Client: c, Namespace: s.Namespace}).ListApps(ctx); err != nil {
				return nil, err
			}
			listed[s.Namespace] = apps
			for _, a := range apps {
				add(a)
			}
		}
		if !slices.ContainsFunc(apps, func(a *app.App) bool { return a.Name == s.App }) {
			// the error a read of it gives (not found, and where to look)
			_, err := (&app.Store{Client: c, Namespace: s.Namespace}).GetApp(ctx, s.App)
			switch {
			case app.IsNotFound(err):
				return nil, inputerr.Wrap(err)
			case err == nil:
				return nil, inputerr.Wrap(&app.NotFoundError{What: "app", Name: s.App, Namespace: s.Namespace})
			}
			return nil, err
		}
	}
	return old, nil
}

// update changes stage s's record under its lock.
func update(ctx context.Context, d deploy.Deps, s Stage, fn func(*app.App) error) error {
	d.Namespace = s.Namespace
	t, err := deploy.Begin(ctx, d, s.App, nil)
	if err != nil {
		return err
	}
	defer t.End()
	_, err = t.Update(fn)
	return err
}

// FindPipeline reads pipeline name's stages from the record of an app of
// namespace ns that is one of them.
func FindPipeline(ctx context.Context, c kubernetes.Interface, ns, name string) ([]Stage, error) {
	apps, err := (&app.Store{Client: c, Namespace: ns}).ListApps(ctx)
	if err != nil {
		return nil, err
	}
	// every stage's record keeps the whole list; a 'pipeline set' stopped
	// part way leaves records that disagree, and which one is meant
	// cannot be told: promoting along either could promote to the wrong app
	var found *app.App
	for _, a := range apps {
		if a.Pipeline == nil || a.Pipeline.Name != name {
			continue
		}
		if found == nil {
			found = a
			continue
		}
		if !slices.Equal(found.Pipeline.Stages, a.Pipeline.Stages) {
			return nil, fmt.Errorf("the apps of namespace %q disagree on the stages of pipeline %q (a 'pipeline set' stopped part way?): %s has %s, %s has %s; nothing changed: run 'tug pipeline set %s STAGE...' again with the stages you want",
				ns, name, found.Name, strings.Join(found.Pipeline.Stages, " -> "), a.Name, strings.Join(a.Pipeline.Stages, " -> "), name)
		}
	}
	if found == nil {
		return nil, inputerr.Errorf("no app of namespace %q is a stage of pipeline %q: run from a stage's namespace (-n), or set it with 'tug pipeline set %s NAMESPACE/APP...'", ns, name, name)
	}
	out := make([]Stage, 0, len(found.Pipeline.Stages))
	for _, s := range found.Pipeline.Stages {
		st, err := ParseStage(s, ns)
		if err != nil {
			return nil, fmt.Errorf("app %q records a bad stage %q of pipeline %q: %w", found.Name, s, name, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// StageStatus is one stage as pipeline status shows it (docs/output.md).
type StageStatus struct {
	Stage   string     `json:"stage"` // NAMESPACE/APP
	Release int        `json:"release"`
	Image   string     `json:"image,omitempty"`
	Digest  string     `json:"digest,omitempty"`
	Status  app.Status `json:"status,omitempty"`
	// PromotedFrom is where its release's image came from, if promoted.
	PromotedFrom *app.Origin `json:"promotedFrom,omitempty"`
	// NextBehind is how many images this stage ran, newest first, before
	// the one the next stage runs: 0 when the next runs this stage's
	// digest, -1 when the next runs none of this stage's kept history (or
	// nothing yet); omitted for the last stage.
	NextBehind *int `json:"nextBehind,omitempty"`
	// Error says why the stage could not be read (it was removed, or the
	// user may not read its namespace).
	Error string `json:"error,omitempty"`
}

// Status reads every stage and how far the next one is behind it.
func Status(ctx context.Context, c kubernetes.Interface, stages []Stage) []StageStatus {
	out := make([]StageStatus, len(stages))
	history := make([][]*app.Release, len(stages))
	for i, s := range stages {
		out[i] = StageStatus{Stage: s.String()}
		st := &app.Store{Client: c, Namespace: s.Namespace}
		a, err := st.GetApp(ctx, s.App)
		if err == nil {
			history[i], err = st.ListReleases(ctx, s.App)
		}
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		out[i].Release = a.Release
		for _, r := range history[i] {
			if r.Version == a.Release {
				out[i].Image, out[i].Digest, out[i].Status, out[i].PromotedFrom = r.RunImage(), r.RunDigest(), r.Status, r.PromotedFrom.Clone()
			}
		}
	}
	for i := 0; i+1 < len(stages); i++ {
		n := behind(history[i], out[i].Release, out[i+1].Digest)
		out[i].NextBehind = &n
	}
	return out
}

// onlyStage is the index of the one stage whose name(s) is which, -1 when
// none; several is an input error.
func onlyStage(stages []Stage, which string, name func(Stage) string) (int, error) {
	i := -1
	for j, s := range stages {
		if name(s) != which {
			continue
		}
		if i >= 0 {
			return -1, inputerr.Errorf("stage %q is ambiguous: name it NAMESPACE/APP", which)
		}
		i = j
	}
	return i, nil
}

// behind counts the distinct digests of rels, from release current down,
// until digest: how many images the next stage has not got.
func behind(rels []*app.Release, current int, digest string) int {
	if digest == "" {
		return -1
	}
	slices.SortFunc(rels, func(a, b *app.Release) int { return b.Version - a.Version })
	var seen []string
	for _, r := range rels {
		d := r.RunDigest()
		if r.Version > current || d == "" || r.Status == app.StatusFailed {
			continue
		}
		if d == digest {
			return len(seen)
		}
		if !slices.Contains(seen, d) {
			seen = append(seen, d)
		}
	}
	return -1
}

// Next is the stage after the one named by which: NAMESPACE/APP, a
// namespace, or an app name that only one stage has.
func Next(stages []Stage, which string) (from, to Stage, err error) {
	i := slices.IndexFunc(stages, func(s Stage) bool { return which == s.String() })
	if i < 0 {
		// a namespace, else an app name: either must name one stage only
		for _, name := range []func(Stage) string{func(s Stage) string { return s.Namespace }, func(s Stage) string { return s.App }} {
			var err error
			if i, err = onlyStage(stages, which, name); err != nil || i >= 0 {
				if err != nil {
					return Stage{}, Stage{}, err
				}
				break
			}
		}
	}
	names := make([]string, len(stages))
	for j, s := range stages {
		names[j] = s.String()
	}
	switch {
	case i < 0:
		return Stage{}, Stage{}, inputerr.Errorf("no stage %q in the pipeline (%s)", which, strings.Join(names, " -> "))
	case i+1 == len(stages):
		return stages[i], Stage{}, inputerr.Errorf("stage %s is the pipeline's last: nothing to promote it to", stages[i])
	}
	return stages[i], stages[i+1], nil
}
