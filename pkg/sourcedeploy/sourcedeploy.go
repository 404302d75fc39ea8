// Package sourcedeploy is a deploy from source as one action: pack a
// folder, build its image in a build pod (a Dockerfile with BuildKit, a
// Cloud Native Buildpacks builder, or a builder image of tug's contract,
// as pkg/imagebuild does), and roll the pushed digest out as a new release
// (deploy.Roll). It is `tug app deploy` without --image, callable from Go:
// Pack checks and packs the folder (nothing is read from the cluster),
// Deploy builds and rolls out.
package sourcedeploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// Source is what to build: the folder and how.
type Source struct {
	// Dir is the folder to build. Dockerfile, when set, is the Dockerfile
	// to build (a path inside Dir, relative to the current folder); ""
	// builds Dir/Dockerfile when there is one.
	Dir        string
	Dockerfile string
	// Want are the build settings asked for; empty fields are the app's
	// remembered ones, then the cluster's defaults.
	Want      app.BuildSettings
	BuildArgs []string // K=V, for a Dockerfile build
	Target    string   // the Dockerfile stage to build, "" for the last
	// AgentImage and BuildKitImage override the build pod's images (""
	// for the cluster's settings, then pkg/imagebuild's defaults).
	AgentImage, BuildKitImage string
	// Limit is the most the packed folder may weigh compressed (0 for
	// build.DefaultSourceLimit).
	Limit int64
}

// Options are the release a deploy from source makes.
type Options struct {
	App     string
	Message string
	// Processes are the release's process types (app.ProcessSource). When
	// ProcessesNamed is false, the process types a Cloud Native Buildpacks
	// image declares replace them: the source's Procfile is the
	// buildpacks' to read.
	Processes      app.ProcessChange
	ProcessesNamed bool
	// ReleaseCommand is the release phase's command ("" for none).
	ReleaseCommand string
	// RemoveProcesses are the process types to drop (--remove-process):
	// from a CNB image's too.
	RemoveProcesses []string
	// Allowed are the process types running units that the caller agreed
	// to remove; Yes removes any (deploy.DeployProcesses).
	Allowed []string
	Yes     bool
	// Amend, when set, changes the release further (a tug.yaml's
	// settings: manifest.Change).
	Amend func(deploy.Change) deploy.Change
	// Rollout are the rollout's options; Deploy sets RememberBuild and
	// SkipUnchanged (an unchanged source builds the image that runs).
	// With DryRun nothing is built: Deploy returns the build's plan.
	Rollout deploy.Options
	// WaitLock is how long the rollout waits for the app's lock while
	// another change holds it (0: fail at once).
	WaitLock time.Duration
}

// Deps are what a deploy from source reaches the cluster with.
type Deps struct {
	// Deploy are the rollout's dependencies; their Client and Namespace
	// are the build's too, and their Settings what the cluster offers
	// builds.
	Deploy deploy.Deps
	// Executor streams the source into the build pod.
	Executor session.Executor
	// Log receives the source's summary and the build's live log; the
	// caller makes it safe for its terminal.
	Log io.Writer
	// Progress reports the build's steps.
	Progress imagebuild.Progress
	// Hold, when set, runs the rollout (not the build) inside it: the
	// locks of the services a tug.yaml binds are held for the rollout
	// only, never for a build of minutes.
	Hold func(ctx context.Context, roll func(context.Context) error) error
}

// Packed is a checked and packed folder, ready to build (Pack).
type Packed struct {
	src        Source
	source     *imagebuild.Source
	dockerfile string // inside the folder, slash-separated; "" for none
}

// Source is the packed folder.
func (p *Packed) Source() *imagebuild.Source { return p.source }

// Procfile is the folder's Procfile, "" when it has none: the deploy's
// process types unless the caller names others.
func (p *Packed) Procfile() string {
	path := filepath.Join(p.source.Dir, "Procfile")
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// Result is a deploy from source: the build and the rollout's result, or,
// for a dry run, the plan of the build that did not run.
type Result struct {
	Build  *imagebuild.Result
	Deploy *deploy.Result
	DryRun *imagebuild.Plan
}

// Pack checks s and packs its folder; it reads nothing from the cluster,
// so bad input (exit 2) is found before any request.
func Pack(s Source) (*Packed, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	limit := s.Limit
	if limit == 0 {
		limit = imagebuild.DefaultSourceLimit
	}
	src, err := imagebuild.Pack(s.Dir, limit)
	if err != nil {
		return nil, err
	}
	p := &Packed{src: s, source: src}
	if p.dockerfile, err = findDockerfile(src.Dir, s.Dockerfile); err != nil {
		return nil, err
	}
	if err := s.checkBuild(); err != nil {
		return nil, err
	}
	if p.dockerfile == "" && (len(s.BuildArgs) > 0 || s.Target != "") {
		return nil, inputerr.Errorf("--build-arg and --target need a Dockerfile in %s (or --dockerfile PATH)", src.Dir)
	}
	return p, nil
}

// check refuses what needs no file: spaces in a name, a timeout that is
// not positive.
func (s Source) check() error {
	for _, f := range []struct{ flag, v string }{{"source", s.Dir}, {"builder", s.Want.Builder}, {"repository", s.Want.Repository}, {"run-image", s.Want.RunImage}} {
		if strings.ContainsAny(f.v, " \t\n") {
			return inputerr.Errorf("invalid --%s %q: no spaces", f.flag, f.v)
		}
	}
	if s.Want.Timeout == "" {
		return nil
	}
	if t, err := time.ParseDuration(s.Want.Timeout); err != nil || t <= 0 {
		return inputerr.Errorf("--build-timeout must be positive, not %s", s.Want.Timeout)
	}
	return nil
}

// checkBuild checks the build arguments, buildpacks and build env.
func (s Source) checkBuild() error {
	for _, a := range s.BuildArgs {
		if k, _, ok := strings.Cut(a, "="); !ok || k == "" {
			return inputerr.Errorf("invalid --build-arg %q: want K=V", a)
		}
	}
	for _, bp := range s.Want.Buildpacks {
		if err := imagebuild.ValidateBuildpack(bp); err != nil {
			return err
		}
	}
	for _, e := range s.Want.BuildEnv {
		if err := imagebuild.ValidateBuildEnv(e); err != nil {
			return err
		}
	}
	return nil
}

// findDockerfile is the Dockerfile to build, as a slash-separated path
// inside dir: flag (relative to the current folder, inside dir), else
// dir/Dockerfile when there is one, else "".
func findDockerfile(dir, flag string) (string, error) {
	if flag == "" {
		if fi, err := os.Stat(filepath.Join(dir, "Dockerfile")); err == nil && fi.Mode().IsRegular() {
			return "Dockerfile", nil
		}
		return "", nil
	}
	abs, err := filepath.Abs(flag)
	if err != nil {
		return "", inputerr.Wrap(err)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return "", inputerr.Errorf("--dockerfile %s: not a file", flag)
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", inputerr.Errorf("--dockerfile %s is not inside the source %s: it is uploaded with it", flag, dir)
	}
	return filepath.ToSlash(rel), nil
}

// Deploy builds p's image and rolls it out as the release o says. The
// Result is nil when the deploy stopped before its rollout (a plan
// refused, a failed build: a *BuildFailedError; either, when ctx is done,
// inside a *CancelledError); once deploy.Roll ran it holds the build and Roll's
// result (nil when Roll gave none).
func Deploy(ctx context.Context, d Deps, p *Packed, o Options) (*Result, error) {
	// a Go caller may leave what shows progress unset: nothing is shown
	if d.Log == nil {
		d.Log = io.Discard
	}
	if d.Progress == nil {
		d.Progress = progress.Nop{}
	}
	d.Deploy.WaitLock = o.WaitLock
	r := run{p: p, o: o, d: d}
	plan, err := r.plan(ctx)
	if err != nil {
		return nil, r.cancelled(ctx, err)
	}
	src := p.source
	ignore := ""
	if src.Ignore != "" {
		ignore = ", without what " + src.Ignore + " names"
	}
	fmt.Fprintf(d.Log, "source: %s, %d files, %s compressed%s\n", src.Dir, src.Files, text.Size(int64(len(src.Data))), ignore)
	if o.Rollout.DryRun {
		return &Result{DryRun: plan}, nil
	}
	built, err := r.build(ctx, plan)
	if err != nil {
		return nil, r.cancelled(ctx, err)
	}
	d.Progress.Done(builtLine(built))
	if line := uploadLine(built); line != "" {
		d.Progress.Done(line)
	}
	return r.roll(ctx, plan, built)
}

// run is one deploy from source.
type run struct {
	p *Packed
	o Options
	d Deps
}

// plan resolves the build: the folder's options, the app's remembered
// settings, and what the cluster offers its builds.
func (r run) plan(ctx context.Context) (*imagebuild.Plan, error) {
	s := r.p.src
	store := &app.Store{Client: r.d.Deploy.Client, Namespace: r.d.Deploy.Namespace}
	return imagebuild.FromSource{App: r.o.App, Want: s.Want, Source: r.p.source, AgentImage: s.AgentImage,
		Dockerfile: r.p.dockerfile, BuildArgs: s.BuildArgs, Target: s.Target, BuildKitImage: s.BuildKitImage,
		Cluster: r.d.Deploy.Settings}.Plan(ctx, store)
}

// build runs the build; a failed one is recorded as a failed release
// (what runs stays as it was).
func (r run) build(ctx context.Context, plan *imagebuild.Plan) (*imagebuild.Result, error) {
	d := r.d.Deploy
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	res, err := plan.Run(ctx, imagebuild.Deps{Client: d.Client, Executor: r.d.Executor, Out: r.d.Log, Progress: r.d.Progress}, store)
	var failed *imagebuild.Error
	if errors.As(err, &failed) {
		return nil, r.recordFailed(ctx, failed)
	}
	return res, err
}

// cancelled is err, said to be a cancelled build when ctx is done: what
// stopped the build before its rollout is then the user's Ctrl-C.
func (r run) cancelled(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return &CancelledError{App: r.o.App, Err: err}
}

// recordFailed records a failed build in the release history, with why,
// within a deadline of its own: the build's context may be done.
func (r run) recordFailed(ctx context.Context, failed *imagebuild.Error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	e := &BuildFailedError{Err: failed}
	rel, err := deploy.RecordFailed(rctx, r.d.Deploy, r.o.App, r.o.Message, failed.Error())
	if err != nil {
		e.RecordErr = err
	} else {
		e.Release = rel.Version
	}
	return e
}

// roll rolls the built image out, inside Deps.Hold when set.
func (r run) roll(ctx context.Context, plan *imagebuild.Plan, built *imagebuild.Result) (*Result, error) {
	res, rolled := &Result{Build: built}, false
	roll := func(ctx context.Context) error {
		rolled = true
		var err error
		res.Deploy, err = deploy.Roll(ctx, r.d.Deploy, r.o.App, r.change(built), r.rollout(plan))
		if res.Deploy != nil {
			res.Deploy.Build = built.Summary()
		}
		return err
	}
	var err error
	if r.d.Hold == nil {
		err = roll(ctx)
	} else {
		err = r.d.Hold(ctx, roll)
	}
	if !rolled {
		return nil, err
	}
	return res, err
}

// change is the release of the built image: the options' process types,
// or a CNB image's own; what built it, and the build arguments.
func (r run) change(built *imagebuild.Result) deploy.Change {
	o := r.o
	procs, release := o.Processes, o.ReleaseCommand
	if built.CNB && len(built.Processes) > 0 && !o.ProcessesNamed {
		// run through the launcher (/cnb/process/TYPE)
		set := map[string]string{}
		for _, t := range built.Processes {
			set[t] = "/cnb/process/" + t
		}
		procs = app.ProcessChange{Set: set, Complete: true, Remove: o.RemoveProcesses, From: "the image's buildpacks"}
		release = ""
	}
	change := deploy.DeployProcesses(built.Image, procs, o.Allowed, o.Yes || o.Rollout.DryRun, o.Message)
	change = deploy.WithReleaseCommand(change, release)
	if o.Amend != nil {
		change = o.Amend(change)
	}
	change = deploy.WithBuiltWith(change, built.BuiltWith())
	return deploy.WithBuildArgs(change, r.p.src.BuildArgs)
}

// rollout are the rollout's options: the settings the build worked with
// are remembered under the app's lock, and a build of unchanged source
// (the image that runs) makes no release.
func (r run) rollout(plan *imagebuild.Plan) deploy.Options {
	opts := r.o.Rollout
	opts.SkipUnchanged = true
	opts.RememberBuild = plan.Remember()
	return opts
}

// BuildFailedError is a build that failed: the release that records it
// (Release), or why it could not be recorded (RecordErr). What runs stays
// as it was. It exits as the build's error does.
type BuildFailedError struct {
	Err       *imagebuild.Error
	Release   int
	RecordErr error
}

func (e *BuildFailedError) Error() string { return e.Err.Error() }
func (e *BuildFailedError) Unwrap() error { return e.Err }

// CancelledError is a build stopped by its context (Ctrl-C): nothing was
// deployed.
type CancelledError struct {
	App string
	Err error
}

func (e *CancelledError) Error() string { return e.Err.Error() }
func (e *CancelledError) Unwrap() error { return e.Err }

// NextStep says what a cancelled build left.
func (e *CancelledError) NextStep() string {
	return fmt.Sprintf("build cancelled; nothing was deployed, app %q keeps running what it ran, and the build pod is deleted", e.App)
}
