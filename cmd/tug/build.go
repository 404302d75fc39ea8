package main

import (
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
	tugexec "tug.dev/tug/pkg/exec"
	"tug.dev/tug/pkg/usage"
)

// agentImageEnv overrides the build agent's image (tests, mirrors).
const agentImageEnv = "TUG_BUILD_AGENT_IMAGE"

// buildFlags are `app deploy`'s flags for a deploy from source (no --image).
type buildFlags struct {
	Source     string
	Builder    string
	Repository string
	RunImage   string
	Timeout    time.Duration

	active bool
	source *build.Source
}

func (b *buildFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.Source, "source", ".", "Without --image: the folder to build from (see docs/builders.md)")
	cmd.Flags().StringVar(&b.Builder, "builder", "", "Without --image: the builder image (remembered by the app)")
	cmd.Flags().StringVar(&b.Repository, "repository", "", "Without --image: the repository to push the built image to, HOST/PATH (remembered by the app)")
	cmd.Flags().StringVar(&b.RunImage, "run-image", "", "Without --image: the image the app's layer goes on (default: the builder; remembered by the app)")
	cmd.Flags().DurationVar(&b.Timeout, "build-timeout", 0, "Without --image: stop the build after this long (default 15m; remembered by the app)")
}

// prepare checks a deploy from source and packs its folder, before anything
// is read from or written to the cluster; the folder's Procfile is the
// deploy's unless --procfile or --process says otherwise.
func (b *buildFlags) prepare(cmd *cobra.Command, o *appDeployOptions) error {
	b.active = true
	for _, name := range []string{"source", "builder", "repository", "run-image"} {
		if v := cmd.Flags().Lookup(name).Value.String(); strings.ContainsAny(v, " \t\n") {
			return usage.Errorf("invalid --%s %q: no spaces", name, v)
		}
	}
	if b.Timeout < 0 {
		return usage.Errorf("--build-timeout must be positive, not %s", b.Timeout)
	}
	src, err := build.Pack(b.Source, build.DefaultSourceLimit)
	if err != nil {
		return err
	}
	b.source = src
	if o.Procfile == "" && len(o.Processes) == 0 {
		if _, err := os.Stat(filepath.Join(src.Dir, "Procfile")); err == nil {
			o.Procfile = filepath.Join(src.Dir, "Procfile")
		}
	}
	return nil
}

// image builds the app from source and returns the pushed
// repository@sha256:... (with --dry-run: "" after saying what it would build).
func (b *buildFlags) image(cmd *cobra.Command, f *cli.Factory, appName string, procs map[string]string, dryRun bool) (string, error) {
	delete(procs, "build") // the Procfile's build step is not a process
	proto, err := tugexec.ProtocolFromEnv()
	if err != nil {
		return "", usage.Wrap(err)
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
	progress := f.Progress()
	store := &app.Store{Client: client, Namespace: ns}
	a, err := store.GetApp(cmd.Context(), appName)
	if err != nil {
		return "", err
	}
	want := app.BuildSettings{Builder: b.Builder, Repository: b.Repository, RunImage: b.RunImage}
	if b.Timeout > 0 {
		want.Timeout = b.Timeout.String()
	}
	s := want.Merge(a.Build)
	if s.Builder == "" || s.Repository == "" {
		return "", usage.Errorf("app %s has no builder or repository yet: deploy from source once with --builder IMAGE --repository HOST/PATH, or deploy an image with --image", appName)
	}
	timeout := build.DefaultTimeout
	if s.Timeout != "" {
		if timeout, err = time.ParseDuration(s.Timeout); err != nil {
			return "", fmt.Errorf("app %s's remembered build timeout %q: %w", appName, s.Timeout, err)
		}
	}
	run := s.RunImage
	if run == "" {
		run = s.Builder
	}
	src := b.source
	ignore := ""
	if src.Ignore != "" {
		ignore = ", without what " + src.Ignore + " names"
	}
	errOut := f.IOStreams.ErrOut
	fmt.Fprintf(errOut, "source: %s, %d files, %s compressed%s\n", src.Dir, src.Files, sizeText(int64(len(src.Data))), ignore)
	if dryRun {
		fmt.Fprintf(f.IOStreams.Out, "dry run: would build %s from %s with builder %s on run image %s, push to %s and deploy it; nothing built\n",
			appName, src.Dir, s.Builder, run, s.Repository)
		return "", nil
	}
	agent := os.Getenv(agentImageEnv)
	res, err := build.Build(cmd.Context(), build.Deps{Client: client, Executor: &tugexec.Remote{Config: cfg, Client: client, Protocol: proto}, Out: errOut, Progress: progress}, build.Options{
		App: a.Name, Namespace: a.Namespace, Pool: a.Pool, PullSecret: a.RegistrySecret,
		Builder: s.Builder, RunImage: s.RunImage, Repository: s.Repository, Timeout: timeout, AgentImage: agent, Source: src,
	})
	var failed *build.Error
	if errors.As(err, &failed) {
		fmt.Fprintf(errOut, "build failed (%s): %s\n", failed.Stage, failed.Message)
		if len(failed.Lines) > 0 {
			fmt.Fprintf(errOut, "  last %d log lines:\n", len(failed.Lines))
			for _, l := range failed.Lines {
				fmt.Fprintf(errOut, "    | %s\n", l)
			}
		}
		fmt.Fprintln(errOut, "nothing was deployed; the current release keeps running")
		return "", err
	}
	if err != nil {
		return "", err
	}
	progress.Done(fmt.Sprintf("built %s (%s uploaded)", res.Image, sizeText(res.PushedBytes)))
	if a.Build == nil || *a.Build != s {
		if _, err := store.UpdateApp(cmd.Context(), appName, func(a *app.App) error {
			a.Build = &s
			return nil
		}); err != nil {
			return "", fmt.Errorf("remembering the build settings: %w", err)
		}
	}
	return res.Image, nil
}

// printBuildSettings adds an app's build settings to `app info`.
func printBuildSettings(w interface{ Write([]byte) (int, error) }, s *app.BuildSettings) {
	if s == nil {
		return
	}
	line := "builder " + s.Builder + ", repository " + s.Repository
	if s.RunImage != "" {
		line += ", run image " + s.RunImage
	}
	if s.Timeout != "" {
		line += ", timeout " + s.Timeout
	}
	fmt.Fprintf(w, "Build:      %s\n", line)
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
