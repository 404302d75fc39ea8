// Package promote brings the image one app runs to another (tug app
// promote), keeps pipelines of apps on their records (tug pipeline), and
// shows what differs between two apps before it does: config keys (never
// values), process types, and the inputs that built the image.
package promote

import (
	"maps"
	"slices"
	"strings"

	"tug.dev/tug/pkg/app"
)

// Side is one app of a promote as read from its cluster: its record, the
// release it runs (nil before its first deploy) and that release's config.
type Side struct {
	App     *app.App
	Release *app.Release
	Config  app.ConfigMap
}

// Diff is what differs between the source and the target of a promote;
// its JSON shape is documented in docs/output.md. Config and build env
// values are never part of it: only their names.
type Diff struct {
	// ConfigOnlyInSource and ConfigOnlyInTarget are config keys only one
	// app sets (a promote changes no config).
	ConfigOnlyInSource []string `json:"configOnlyInSource"`
	ConfigOnlyInTarget []string `json:"configOnlyInTarget"`
	// Processes are the process types the promote adds, removes or whose
	// command it changes in the target.
	Processes []ProcessDiff `json:"processes"`
	// Build is how the source's image was built against how the target
	// builds its own.
	Build BuildDiff `json:"build"`
}

// ProcessDiff is one process type that a promote changes in the target.
type ProcessDiff struct {
	Name string `json:"name"`
	// Change is added, removed or changed.
	Change string `json:"change"`
	Source string `json:"source,omitempty"` // the command in the source ("" if none)
	Target string `json:"target,omitempty"` // the command in the target now
}

// BuildDiff compares the build inputs: the builder and buildpacks, the
// build env's keys (--build-env; values never shown) and the Dockerfile
// build arguments' names (--build-arg).
type BuildDiff struct {
	SourceBuilder    string   `json:"sourceBuilder,omitempty"`
	TargetBuilder    string   `json:"targetBuilder,omitempty"`
	SourceBuildpacks []string `json:"sourceBuildpacks,omitempty"`
	TargetBuildpacks []string `json:"targetBuildpacks,omitempty"`
	// BuildEnvOnlyInSource and BuildEnvOnlyInTarget are build env keys
	// only one app sets.
	BuildEnvOnlyInSource []string `json:"buildEnvOnlyInSource,omitempty"`
	BuildEnvOnlyInTarget []string `json:"buildEnvOnlyInTarget,omitempty"`
	// PerStage are the build env keys whose values differ between the two
	// apps (a key only one sets counts): the image was built with the
	// source's, which the target does not want. A promote refuses them
	// without --force.
	PerStage []string `json:"perStage,omitempty"`
	// BuildArgsOnlyInSource and BuildArgsOnlyInTarget are names of
	// --build-arg given to the build of one release and not the other's.
	BuildArgsOnlyInSource []string `json:"buildArgsOnlyInSource,omitempty"`
	BuildArgsOnlyInTarget []string `json:"buildArgsOnlyInTarget,omitempty"`
}

// Compare is what differs between src and dst.
func Compare(src, dst Side) Diff {
	d := Diff{ConfigOnlyInSource: []string{}, ConfigOnlyInTarget: []string{}, Processes: []ProcessDiff{}}
	d.ConfigOnlyInSource, d.ConfigOnlyInTarget = onlyIn(src.Config.Keys(), dst.Config.Keys())
	d.Processes = compareProcesses(processes(src.Release), processes(dst.Release))
	d.Build = compareBuild(src, dst)
	return d
}

func processes(r *app.Release) map[string]string {
	if r == nil {
		return nil
	}
	return r.Processes
}

func compareProcesses(src, dst map[string]string) []ProcessDiff {
	names := slices.Collect(maps.Keys(src))
	for n := range dst {
		if _, ok := src[n]; !ok {
			names = append(names, n)
		}
	}
	app.SortProcesses(names)
	out := []ProcessDiff{}
	for _, n := range names {
		s, inSrc := src[n]
		t, inDst := dst[n]
		switch {
		case !inDst:
			out = append(out, ProcessDiff{Name: n, Change: "added", Source: s})
		case !inSrc:
			out = append(out, ProcessDiff{Name: n, Change: "removed", Target: t})
		case s != t:
			out = append(out, ProcessDiff{Name: n, Change: "changed", Source: s, Target: t})
		}
	}
	return out
}

// compareBuild compares what built the source's image (its release's
// builder and buildpacks, the source app's build env) with what the
// target builds with (its record's build settings).
func compareBuild(src, dst Side) BuildDiff {
	var b BuildDiff
	if src.Release != nil && src.Release.BuiltWith != nil {
		b.SourceBuilder, b.SourceBuildpacks = src.Release.BuiltWith.Builder, slices.Clone(src.Release.BuiltWith.Buildpacks)
	} else if s := src.App.Build; s != nil {
		b.SourceBuilder, b.SourceBuildpacks = s.Builder, slices.Clone(s.Buildpacks)
	}
	if s := dst.App.Build; s != nil {
		b.TargetBuilder, b.TargetBuildpacks = s.Builder, slices.Clone(s.Buildpacks)
	}
	if b.SourceBuilder == b.TargetBuilder && slices.Equal(b.SourceBuildpacks, b.TargetBuildpacks) {
		// the same on both sides: nothing to show
		b.SourceBuilder, b.TargetBuilder, b.SourceBuildpacks, b.TargetBuildpacks = "", "", nil, nil
	}
	se, de := buildEnv(src.App), buildEnv(dst.App)
	b.BuildEnvOnlyInSource, b.BuildEnvOnlyInTarget = onlyIn(slices.Collect(maps.Keys(se)), slices.Collect(maps.Keys(de)))
	for k, v := range se {
		if w, ok := de[k]; !ok || w != v {
			b.PerStage = append(b.PerStage, k)
		}
	}
	for k := range de {
		if _, ok := se[k]; !ok {
			b.PerStage = append(b.PerStage, k)
		}
	}
	slices.Sort(b.PerStage)
	var sa, da []string
	if src.Release != nil {
		sa = src.Release.BuildArgs
	}
	if dst.Release != nil {
		da = dst.Release.BuildArgs
	}
	b.BuildArgsOnlyInSource, b.BuildArgsOnlyInTarget = onlyIn(sa, da)
	if len(b.BuildEnvOnlyInSource)+len(b.BuildEnvOnlyInTarget) == 0 {
		b.BuildEnvOnlyInSource, b.BuildEnvOnlyInTarget = nil, nil
	}
	if len(b.BuildArgsOnlyInSource)+len(b.BuildArgsOnlyInTarget) == 0 {
		b.BuildArgsOnlyInSource, b.BuildArgsOnlyInTarget = nil, nil
	}
	return b
}

// buildEnv is an app's build env (--build-env K=V) by key.
func buildEnv(a *app.App) map[string]string {
	out := map[string]string{}
	if a == nil || a.Build == nil {
		return out
	}
	for _, kv := range a.Build.BuildEnv {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// onlyIn are the names only in a and only in b, each sorted, never nil.
func onlyIn(a, b []string) (onlyA, onlyB []string) {
	onlyA, onlyB = []string{}, []string{}
	for _, k := range a {
		if !slices.Contains(b, k) && !slices.Contains(onlyA, k) {
			onlyA = append(onlyA, k)
		}
	}
	for _, k := range b {
		if !slices.Contains(a, k) && !slices.Contains(onlyB, k) {
			onlyB = append(onlyB, k)
		}
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return onlyA, onlyB
}

// Lines are the diff as a person reads it, one difference a line; none
// when the two apps differ in nothing shown.
func (d Diff) Lines() []string {
	var out []string
	if len(d.ConfigOnlyInSource) > 0 {
		out = append(out, "config only in the source (not copied): "+strings.Join(d.ConfigOnlyInSource, ", "))
	}
	if len(d.ConfigOnlyInTarget) > 0 {
		out = append(out, "config only in the target (kept): "+strings.Join(d.ConfigOnlyInTarget, ", "))
	}
	for _, p := range d.Processes {
		switch p.Change {
		case "added":
			out = append(out, "process "+p.Name+": added ("+command(p.Source)+")")
		case "removed":
			out = append(out, "process "+p.Name+": removed (was "+command(p.Target)+"); its units stop")
		default:
			out = append(out, "process "+p.Name+": "+command(p.Target)+" -> "+command(p.Source))
		}
	}
	return append(out, d.Build.lines()...)
}

func (b BuildDiff) lines() []string {
	var out []string
	if b.SourceBuilder != b.TargetBuilder {
		out = append(out, "builder: the image was built with "+orNone(b.SourceBuilder)+"; the target builds with "+orNone(b.TargetBuilder))
	}
	if !slices.Equal(b.SourceBuildpacks, b.TargetBuildpacks) {
		out = append(out, "buildpacks: "+orNone(strings.Join(b.SourceBuildpacks, ", "))+" in the source; "+orNone(strings.Join(b.TargetBuildpacks, ", "))+" in the target")
	}
	if len(b.BuildEnvOnlyInSource) > 0 {
		out = append(out, "build env only in the source: "+strings.Join(b.BuildEnvOnlyInSource, ", "))
	}
	if len(b.BuildEnvOnlyInTarget) > 0 {
		out = append(out, "build env only in the target: "+strings.Join(b.BuildEnvOnlyInTarget, ", "))
	}
	if len(b.PerStage) > 0 {
		out = append(out, "build env differing by app (baked into the image): "+strings.Join(b.PerStage, ", "))
	}
	if len(b.BuildArgsOnlyInSource) > 0 {
		out = append(out, "build args only in the source's build: "+strings.Join(b.BuildArgsOnlyInSource, ", "))
	}
	if len(b.BuildArgsOnlyInTarget) > 0 {
		out = append(out, "build args only in the target's build: "+strings.Join(b.BuildArgsOnlyInTarget, ", "))
	}
	return out
}

func command(c string) string {
	if c == "" {
		return "the image's own command"
	}
	return c
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
