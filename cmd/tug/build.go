package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/sourcedeploy"
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
	autoProcfile bool                 // the Procfile is the source's, not named by a flag
	packed       *sourcedeploy.Packed // the source, checked and packed
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

// source is what the flags say to build; the environment may override the
// build pod's images.
func (b *buildFlags) source() sourcedeploy.Source {
	want := app.BuildSettings{Builder: b.Builder, Repository: b.Repository, RunImage: b.RunImage, Buildpacks: b.Buildpacks, BuildEnv: b.BuildEnv}
	if b.Timeout != 0 {
		want.Timeout = b.Timeout.String()
	}
	return sourcedeploy.Source{Dir: b.Source, Dockerfile: b.Dockerfile, Want: want, BuildArgs: b.BuildArgs, Target: b.Target,
		AgentImage: os.Getenv(agentImageEnv), BuildKitImage: os.Getenv(buildkitImageEnv)}
}

// prepare checks a deploy from source and packs its folder
// (sourcedeploy.Pack), before anything is read from or written to the
// cluster; the folder's Procfile is the deploy's unless --procfile or
// --process says otherwise.
func (b *buildFlags) prepare(o *appDeployOptions) error {
	b.active = true
	p, err := sourcedeploy.Pack(b.source())
	if err != nil {
		return err
	}
	b.packed = p
	if o.Procfile == "" && len(o.Processes) == 0 {
		if procfile := p.Procfile(); procfile != "" {
			o.Procfile, b.autoProcfile = procfile, true
		}
	}
	return nil
}

// deploySource runs app deploy from source as one action
// (sourcedeploy.Deploy) and prints its result as a deploy of an image
// prints its own; a failed build is reported here, before main's error.
func (o *appDeployOptions) deploySource(ctx context.Context, allowed []string, opts deploy.Options) error {
	c, name := o.Changer, o.App
	exec, err := o.Executor()
	if err != nil {
		return err
	}
	d, p, err := rolloutDeps(ctx, c)
	if err != nil {
		return err
	}
	// The build's live log and its failure come from the pod: made safe
	// for a terminal here, on the one writer they reach stderr through.
	errOut := text.NewWriter(c.IO.ErrOut, c.IO.ErrColorEnabled())
	deps := sourcedeploy.Deps{Deploy: d, Executor: exec, Log: cacheMissNote{errOut}, Progress: c.Progress(),
		Hold: func(ctx context.Context, roll func(context.Context) error) error {
			return o.manifest.servicesLocked(ctx, o, name, roll)
		}}
	res, err := sourcedeploy.Deploy(ctx, deps, o.build.packed, o.sourceOptions(allowed, opts))
	switch {
	case res == nil:
		printBuildFailure(errOut, err)
		return err
	case res.DryRun != nil:
		printBuildDryRun(c.IO, name, res.DryRun)
		return nil
	}
	return reportRollout(c, p, name, res.Deploy, err, o.rollout.Output, rollVerb{"deployed", "deploying"})
}

// sourceOptions are the release of a deploy from source: the process
// types the flags, the Procfile and tug.yaml name (a CNB image's own
// unless --process or --procfile named some).
func (o *appDeployOptions) sourceOptions(allowed []string, opts deploy.Options) sourcedeploy.Options {
	named := len(o.Processes) > 0 || o.Procfile != "" && !o.build.autoProcfile
	return sourcedeploy.Options{App: o.App, Message: o.Message, Processes: o.procs, ProcessesNamed: named,
		ReleaseCommand: o.release, RemoveProcesses: o.RemoveProcesses, Allowed: allowed, Yes: o.Yes,
		Amend: o.manifest.m.Change, Rollout: opts, WaitLock: o.Changer.WaitLock}
}

// printBuildFailure explains a failed build on stderr: its stage, its last
// log lines, and the release that records it.
func printBuildFailure(errOut io.Writer, err error) {
	var failed *sourcedeploy.BuildFailedError
	if !errors.As(err, &failed) {
		return
	}
	fmt.Fprintf(errOut, "build failed (%s): %s\n", failed.Err.Stage, failed.Err.Message)
	if lines := failed.Err.Lines; len(lines) > 0 {
		fmt.Fprintf(errOut, "  %s:\n", lastLogLines(len(lines)))
		for _, l := range lines {
			fmt.Fprintf(errOut, "    | %s\n", cli.Sanitize(l))
		}
	}
	if failed.RecordErr == nil {
		fmt.Fprintf(errOut, "release v%d failed; nothing was deployed, the current release keeps running\n", failed.Release)
	} else {
		fmt.Fprintf(errOut, "nothing was deployed, the current release keeps running (recording the failed release: %s)\n", text.OneLine(failed.RecordErr.Error()))
	}
}

// printBuildDryRun says what a dry run would build; nothing was built.
func printBuildDryRun(ios *cli.IOStreams, appName string, plan *imagebuild.Plan) {
	if plan.Dockerfile != "" {
		fmt.Fprintln(ios.Out, cli.Sanitize(fmt.Sprintf("dry run: would build %s from %s with BuildKit (%s), push to %s and deploy it; nothing built",
			appName, plan.Source.Dir, plan.Dockerfile, plan.Settings.Repository)))
		return
	}
	// the builder and run image may be the app's remembered ones, or the
	// cluster's: its text
	fmt.Fprintln(ios.Out, cli.Sanitize(fmt.Sprintf("dry run: would build %s from %s with builder %s on run image %s, push to %s and deploy it; nothing built",
		appName, plan.Source.Dir, plan.Settings.Builder, plan.RunImage, plan.Settings.Repository)))
}

// buildExecutor is the attach that streams a build's source in, over the
// protocol the environment may name.
func buildExecutor(f *cli.Factory) func() (session.Executor, error) {
	return func() (session.Executor, error) {
		proto, err := session.ParseProtocol(os.Getenv(session.ProtocolEnv))
		if err != nil {
			return nil, inputerr.Wrap(err)
		}
		client, err := f.KubeClient()
		if err != nil {
			return nil, err
		}
		cfg, err := f.RESTConfig()
		if err != nil {
			return nil, err
		}
		return &session.Remote{Config: cfg, Client: client, Protocol: proto}, nil
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
