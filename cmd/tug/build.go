package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/build"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// agentImageEnv overrides the build agent's image (tests, mirrors).
const agentImageEnv = "TUG_BUILD_AGENT_IMAGE"

// buildkitImageEnv overrides the BuildKit image of Dockerfile builds.
const buildkitImageEnv = "TUG_BUILDKIT_IMAGE"

// buildFlags are `app deploy`'s flags for a deploy from source (no --image).
type buildFlags struct {
	Source     string
	Builder    string
	Repository string
	RunImage   string
	Timeout    time.Duration
	Dockerfile string
	BuildArgs  []string
	Target     string
	Buildpacks []string
	BuildEnv   []string

	active       bool
	autoProcfile bool               // the Procfile is the source's, not named by a flag
	result       *build.Result      // the finished build
	remember     *app.BuildSettings // what the record must remember of it (deploy.Options.RememberBuild)
	source       *build.Source
	dockerfile   string // the Dockerfile inside the source, slash-separated
}

func (b *buildFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.Source, "source", ".", "Without --image: the folder to build from (see docs/builders.md)")
	cmd.Flags().StringVar(&b.Builder, "builder", "", "Without --image: the builder image (remembered by the app)")
	cmd.Flags().StringVar(&b.Repository, "repository", "", "Without --image: the repository to push the built image to, HOST/PATH (remembered by the app)")
	cmd.Flags().StringVar(&b.RunImage, "run-image", "", "Without --image: the image the app's layer goes on (default: the builder; remembered by the app)")
	cmd.Flags().DurationVar(&b.Timeout, "build-timeout", 0, "Without --image: stop the build after this long (default 15m; remembered by the app)")
	cmd.Flags().StringVar(&b.Dockerfile, "dockerfile", "", "Without --image and --builder: the Dockerfile to build with BuildKit (default SOURCE/Dockerfile when present)")
	cmd.Flags().StringArrayVar(&b.BuildArgs, "build-arg", nil, "A Dockerfile build argument, K=V (repeatable; nothing else becomes one)")
	cmd.Flags().StringVar(&b.Target, "target", "", "The Dockerfile stage to build (default the last)")
	cmd.Flags().StringArrayVar(&b.Buildpacks, "buildpack", nil, "With a Cloud Native Buildpacks builder: a buildpack of the builder to use, ID[@VERSION] (repeatable, in order; remembered by the app)")
	cmd.Flags().StringArrayVar(&b.BuildEnv, "build-env", nil, "With a Cloud Native Buildpacks builder: K=V for the buildpacks, as a platform env file, never in the pod spec (repeatable; remembered by the app)")
}

// prepare checks a deploy from source and packs its folder, before anything
// is read from or written to the cluster; the folder's Procfile is the
// deploy's unless --procfile or --process says otherwise.
func (b *buildFlags) prepare(cmd *cobra.Command, o *appDeployOptions) error {
	b.active = true
	for _, name := range []string{"source", "builder", "repository", "run-image"} {
		if v := cmd.Flags().Lookup(name).Value.String(); strings.ContainsAny(v, " \t\n") {
			return inputerr.Errorf("invalid --%s %q: no spaces", name, v)
		}
	}
	if b.Timeout < 0 {
		return inputerr.Errorf("--build-timeout must be positive, not %s", b.Timeout)
	}
	src, err := build.Pack(b.Source, build.DefaultSourceLimit)
	if err != nil {
		return err
	}
	b.source = src
	if b.dockerfile, err = findDockerfile(src.Dir, b.Dockerfile); err != nil {
		return err
	}
	for _, a := range b.BuildArgs {
		if k, _, ok := strings.Cut(a, "="); !ok || k == "" {
			return inputerr.Errorf("invalid --build-arg %q: want K=V", a)
		}
	}
	for _, bp := range b.Buildpacks {
		if err := build.ValidateBuildpack(bp); err != nil {
			return err
		}
	}
	for _, e := range b.BuildEnv {
		if err := build.ValidateBuildEnv(e); err != nil {
			return err
		}
	}
	if b.dockerfile == "" && (len(b.BuildArgs) > 0 || b.Target != "") {
		return inputerr.Errorf("--build-arg and --target need a Dockerfile in %s (or --dockerfile PATH)", src.Dir)
	}
	if o.Procfile == "" && len(o.Processes) == 0 {
		if _, err := os.Stat(filepath.Join(src.Dir, "Procfile")); err == nil {
			o.Procfile = filepath.Join(src.Dir, "Procfile")
			b.autoProcfile = true
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

// plan resolves the build of appName: the flags, the app's remembered
// settings, and what the cluster offers its builds, unless the
// environment overrides it.
func (b *buildFlags) plan(ctx context.Context, store *app.Store, appName string) (*build.Plan, error) {
	want := app.BuildSettings{Builder: b.Builder, Repository: b.Repository, RunImage: b.RunImage, Buildpacks: b.Buildpacks, BuildEnv: b.BuildEnv}
	if b.Timeout > 0 {
		want.Timeout = b.Timeout.String()
	}
	settings, err := clustersettings.Read(ctx, store.Client)
	if err != nil {
		return nil, err
	}
	return build.FromSource{App: appName, Want: want, Source: b.source, AgentImage: os.Getenv(agentImageEnv),
		Dockerfile: b.dockerfile, BuildArgs: b.BuildArgs, Target: b.Target, BuildKitImage: os.Getenv(buildkitImageEnv),
		Cluster: settings}.Plan(ctx, store)
}

// image builds the app from source and returns the pushed
// repository@sha256:... (with --dry-run: "" after saying what it would build).
func (b *buildFlags) image(ctx context.Context, f *cli.Factory, c appChanger, appName, message string, dryRun bool) (string, error) {
	proto, err := session.ParseProtocol(os.Getenv(session.ProtocolEnv))
	if err != nil {
		return "", inputerr.Wrap(err)
	}
	client, err := f.KubeClient()
	if err != nil {
		return "", err
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		return "", err
	}
	ns, err := f.Namespace()
	if err != nil {
		return "", err
	}
	store := &app.Store{Client: client, Namespace: ns}
	plan, err := b.plan(ctx, store, appName)
	if err != nil {
		return "", err
	}
	src := b.source
	ignore := ""
	if src.Ignore != "" {
		ignore = ", without what " + src.Ignore + " names"
	}
	// The build's live log and its failure come from the pod: made safe
	// for a terminal here, on the one writer they reach stderr through.
	errOut := text.NewWriter(f.IOStreams.ErrOut, f.IOStreams.ErrColorEnabled())
	fmt.Fprintf(errOut, "source: %s, %d files, %s compressed%s\n", src.Dir, src.Files, text.Size(int64(len(src.Data))), ignore)
	if dryRun && plan.Dockerfile != "" {
		fmt.Fprintln(f.IOStreams.Out, cli.Sanitize(fmt.Sprintf("dry run: would build %s from %s with BuildKit (%s), push to %s and deploy it; nothing built",
			appName, src.Dir, plan.Dockerfile, plan.Settings.Repository)))
		return "", nil
	}
	if dryRun {
		// the builder and run image may be the app's remembered ones, or
		// the cluster's: its text
		fmt.Fprintln(f.IOStreams.Out, cli.Sanitize(fmt.Sprintf("dry run: would build %s from %s with builder %s on run image %s, push to %s and deploy it; nothing built",
			appName, src.Dir, plan.Settings.Builder, plan.RunImage, plan.Settings.Repository)))
		return "", nil
	}
	progress := f.Progress()
	res, err := plan.Run(ctx, build.Deps{Client: client, Executor: &session.Remote{Config: cfg, Client: client, Protocol: proto}, Out: cacheMissNote{errOut}, Progress: progress}, store)
	var failed *build.Error
	if errors.As(err, &failed) {
		fmt.Fprintf(errOut, "build failed (%s): %s\n", failed.Stage, failed.Message)
		if len(failed.Lines) > 0 {
			fmt.Fprintf(errOut, "  %s:\n", lastLogLines(len(failed.Lines)))
			for _, l := range failed.Lines {
				fmt.Fprintf(errOut, "    | %s\n", cli.Sanitize(l))
			}
		}
		// The attempt shows in the release history, with why; what runs
		// stays as it was.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		rel, rerr := recordFailed(rctx, ctx, c, appName, message, failed.Error())
		if rerr == nil {
			fmt.Fprintf(errOut, "release v%d failed; nothing was deployed, the current release keeps running\n", rel.Version)
		} else {
			fmt.Fprintf(errOut, "nothing was deployed, the current release keeps running (recording the failed release: %s)\n", text.OneLine(rerr.Error()))
		}
		return "", err
	}
	if err != nil {
		return "", err
	}
	progress.Done(builtLine(res))
	if line := uploadLine(res); line != "" {
		progress.Done(line)
	}
	b.result, b.remember = res, plan.Remember()
	return res.Image, nil
}

// cnbProcesses makes a CNB build's process types (the image's
// io.buildpacks.build.metadata) the deploy's, run through the launcher
// (/cnb/process/TYPE), unless --process or --procfile named them: the
// source's Procfile is the buildpacks' to read.
func (b *buildFlags) cnbProcesses(o *appDeployOptions) {
	if b.result == nil || !b.result.CNB || len(b.result.Processes) == 0 || len(o.Processes) > 0 || o.Procfile != "" && !b.autoProcfile {
		return
	}
	set := map[string]string{}
	for _, t := range b.result.Processes {
		set[t] = "/cnb/process/" + t
	}
	o.procs = app.ProcessChange{Set: set, Complete: true, Remove: o.RemoveProcesses, From: "the image's buildpacks"}
	o.release = ""
}

// rollout is the deploy's rollout: the release records what built its image
// (a CNB build's builder and buildpacks) and the result shows the build.
func (b *buildFlags) rollout(appName string, change deploy.Change, opts deploy.Options) func(context.Context, deploy.Deps) (*deploy.Result, error) {
	change = deploy.WithBuiltWith(change, b.result.BuiltWith())
	if b.active {
		change = deploy.WithBuildArgs(change, b.BuildArgs)
	}
	built := b.result.Summary()
	// a build of unchanged source makes the image that runs: no release
	opts.SkipUnchanged = b.active && b.result != nil
	opts.RememberBuild = b.remember
	return func(ctx context.Context, d deploy.Deps) (*deploy.Result, error) {
		res, err := deploy.Roll(ctx, d, appName, change, opts)
		if res != nil {
			res.Build = built
		}
		return res, err
	}
}

// printBuildSettings adds an app's build settings to `app info`.
func printBuildSettings(w interface{ Write([]byte) (int, error) }, s *app.BuildSettings) {
	if s == nil {
		return
	}
	line := "builder " + s.Builder + ", repository " + s.Repository
	if s.Builder == "" {
		line = "Dockerfile (BuildKit), repository " + s.Repository
	}
	if s.RunImage != "" {
		line += ", run image " + s.RunImage
	}
	if s.Timeout != "" {
		line += ", timeout " + s.Timeout
	}
	if len(s.Buildpacks) > 0 {
		line += ", buildpacks " + strings.Join(s.Buildpacks, " ")
	}
	if len(s.BuildEnv) > 0 {
		names := make([]string, len(s.BuildEnv))
		for i, kv := range s.BuildEnv {
			names[i], _, _ = strings.Cut(kv, "=")
		}
		line += ", build env " + strings.Join(names, " ")
	}
	fmt.Fprintf(w, "Build:      %s\n", line)
}

// recordFailed records a failed build as a failed release, within ctx;
// the deploy dependencies are made within the command's own depsCtx.
func recordFailed(ctx, depsCtx context.Context, c appChanger, appName, message, reason string) (*app.Release, error) {
	d, err := c.Deps(depsCtx)
	if err != nil {
		return nil, err
	}
	return deploy.RecordFailed(ctx, d, appName, message, reason)
}
