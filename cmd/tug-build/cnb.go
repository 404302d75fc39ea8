package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/text"
)

// InspectPrefix starts the last line of `tug-build inspect`.
const InspectPrefix = "TUG-BUILD-INSPECT "

// The labels and files of a Cloud Native Buildpacks builder and of the
// images it builds (the platform spec).
const (
	labelBuilder     = "io.buildpacks.builder.metadata"
	labelBuild       = "io.buildpacks.build.metadata"
	lifecycleDir     = "/cnb/lifecycle"
	buildpacksDir    = "/cnb/buildpacks"
	exitFailedDetect = 20 // the lifecycle's exit code when no group detected
)

// Builder is what `inspect` says of a builder image.
type Builder = protocol.Builder

type builderMetadata struct {
	Stack struct {
		RunImage struct {
			Image string `json:"image"`
		} `json:"runImage"`
	} `json:"stack"`
	Images []struct {
		Image string `json:"image"`
	} `json:"images"`
	Buildpacks []struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"buildpacks"`
	Lifecycle struct {
		Version string `json:"version"`
		APIs    struct {
			Platform struct {
				Supported []string `json:"supported"`
			} `json:"platform"`
		} `json:"apis"`
	} `json:"lifecycle"`
}

// inspect reads a builder image's config from its registry (with the
// pod's registry credentials) and prints whether it is a CNB builder, and
// what a platform needs to know of it, as its last line.
func inspect(args []string) int {
	fs := flag.NewFlagSet("inspect", flag.ExitOnError)
	image := fs.String("image", "", "the builder image")
	_ = fs.Parse(args)
	if *image == "" {
		usage()
	}
	b, err := inspectBuilder(*image)
	if err != nil {
		b = &Builder{Error: err.Error()}
	}
	line, _ := json.Marshal(b)
	fmt.Println(InspectPrefix + string(line))
	return 0
}

func inspectBuilder(image string) (*Builder, error) {
	ref, err := parseRef(image)
	if err != nil {
		return nil, fmt.Errorf("the builder %s: %w", image, err)
	}
	img, err := remote.Image(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return nil, fmt.Errorf("reading the builder %s: %w", image, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the builder %s's config: %w", image, err)
	}
	return builderFromConfig(cf.Config)
}

// builderFromConfig reads a builder's label and environment.
func builderFromConfig(cfg v1.Config) (*Builder, error) {
	raw, ok := cfg.Labels[labelBuilder]
	if !ok {
		return &Builder{}, nil
	}
	var md builderMetadata
	if err := json.Unmarshal([]byte(raw), &md); err != nil {
		return nil, fmt.Errorf("the builder's %s label: %w", labelBuilder, err)
	}
	b := &Builder{CNB: true, UID: -1, GID: -1, PlatformAPIs: md.Lifecycle.APIs.Platform.Supported, Lifecycle: md.Lifecycle.Version}
	for _, e := range cfg.Env {
		k, v, _ := strings.Cut(e, "=")
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
			continue
		}
		switch k {
		case "CNB_USER_ID":
			b.UID = n
		case "CNB_GROUP_ID":
			b.GID = n
		}
	}
	if b.UID < 0 || b.GID < 0 {
		return nil, errors.New("the builder's config has no CNB_USER_ID or CNB_GROUP_ID")
	}
	b.RunImage = md.Stack.RunImage.Image
	if len(md.Images) > 0 && md.Images[0].Image != "" {
		b.RunImage = md.Images[0].Image
	}
	for _, bp := range md.Buildpacks {
		b.Buildpacks = append(b.Buildpacks, bp.ID+"@"+bp.Version)
	}
	return b, nil
}

// cnbBuild is one run of the cnb subcommand.
type cnbBuild struct {
	repo, tag, runImage, cacheImage string
	platformAPI                     string
	appDir, layersDir, platformDir  string
	work                            string
	insecure                        multiFlag
	// the builder's lifecycle and buildpacks folders: lifecycleDir and
	// buildpacksDir in a builder image, a fake lifecycle's in tests
	lifecycle, buildpacks string
	res                   Result
}

// cnb runs the builder's own lifecycle: the job header (build env,
// buildpacks) and the source come on stdin; the creator detects, builds,
// exports to REPO and keeps a cache image; the digest comes from its
// report and the process types from the image's build metadata.
func cnb(args []string) int {
	b := &cnbBuild{lifecycle: lifecycleDir, buildpacks: buildpacksDir}
	fs := flag.NewFlagSet("cnb", flag.ExitOnError)
	fs.StringVar(&b.repo, "repository", "", "repository to push the image to, HOST/PATH")
	fs.StringVar(&b.tag, "tag", "latest", "tag to push besides the digest")
	fs.StringVar(&b.runImage, "run-image", "", "the run image")
	fs.StringVar(&b.cacheImage, "cache-image", "", "the cache image, REPO:TAG")
	fs.StringVar(&b.platformAPI, "platform-api", "", "the Platform API to speak to the lifecycle")
	fs.StringVar(&b.appDir, "app", "/workspace", "the app folder")
	fs.StringVar(&b.layersDir, "layers", "/layers", "the layers folder")
	fs.StringVar(&b.platformDir, "platform", "/platform", "the platform folder (env/ holds the build environment)")
	fs.StringVar(&b.work, "work", os.TempDir(), "a folder for the agent's own files (order.toml)")
	fs.Var(&b.insecure, "insecure-registry", "a registry spoken to over plain HTTP (repeatable)")
	_ = fs.Parse(args)
	if b.repo == "" || b.runImage == "" || b.platformAPI == "" {
		usage()
	}
	return b.run()
}

func (b *cnbBuild) run() int {
	finish := b.res.finish
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	j, err := protocol.ReadJob(in)
	if err != nil {
		_, _ = io.Copy(io.Discard, in)
		return finish("unpack", 0, err)
	}
	if err := b.res.unpackSource(in, b.appDir); err != nil {
		return finish("unpack", 0, err)
	}
	if err := writeBuildEnv(filepath.Join(b.platformDir, "env"), j.BuildEnv); err != nil {
		return finish("build", 0, err)
	}
	order := ""
	if len(j.Buildpacks) > 0 {
		if order, err = writeOrder(b.work, b.buildpacks, j.Buildpacks); err != nil {
			return finish("buildpack", 0, err)
		}
	}
	prev := b.readPrevious()
	t := time.Now()
	code, counts, err := b.creator(order)
	b.res.Seconds.Build = time.Since(t).Seconds()
	b.res.LayersAdded, b.res.LayersReused, b.res.LayersRestored = counts[0], counts[1], counts[2]
	if err != nil {
		stage := "build"
		if code == exitFailedDetect {
			stage = "detect"
			err = fmt.Errorf("no buildpack detected the app (the builder has %s)", strings.Join(installedBuildpacks(b.buildpacks), ", "))
		}
		return finish(stage, code, err)
	}
	digest, err := reportDigest(filepath.Join(b.layersDir, "report.toml"))
	if err != nil {
		return finish("push", 0, err)
	}
	ref, err := parseRef(b.repo + "@" + digest)
	if err != nil {
		return finish("push", 0, err)
	}
	b.res.Image = ref.Context().Name() + "@" + digest
	layers, err := b.readProcesses(b.res.Image)
	if err != nil {
		return finish("image", 0, err)
	}
	if prev.known && layers != nil {
		u := protocol.CompareLayers(prev.image, prev.layers, layers)
		b.res.Upload = &u
	}
	fmt.Printf("-----> pushed %s (process types %s)\n", b.res.Image, strings.Join(b.res.Processes, ", "))
	return finish("", 0, nil)
}

// creator runs /cnb/lifecycle/creator and counts, from its log, the layers
// it added, reused from the previous image and restored from the cache.
func (b *cnbBuild) creator(order string) (int, [3]int, error) {
	args := []string{"-app", b.appDir, "-layers", b.layersDir, "-platform", b.platformDir,
		"-run-image", b.runImage, "-log-level", "info"}
	if b.cacheImage != "" {
		args = append(args, "-cache-image", b.cacheImage)
	}
	if order != "" {
		args = append(args, "-order", order)
	}
	for _, r := range b.insecure {
		args = append(args, "-insecure-registry", r)
	}
	args = append(args, b.repo+":"+b.tag)
	fmt.Printf("-----> running the builder's lifecycle: %s/creator (Platform API %s)\n", b.lifecycle, b.platformAPI)
	cmd := exec.Command(filepath.Join(b.lifecycle, "creator"), args...)
	cmd.Env = append(os.Environ(), "CNB_PLATFORM_API="+b.platformAPI)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, [3]int{}, err
	}
	cmd.Stderr = cmd.Stdout // one stream, in order
	var counts [3]int
	if err := cmd.Start(); err != nil {
		return 0, counts, fmt.Errorf("the lifecycle could not run: %w", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		fmt.Println(l)
		switch {
		case strings.Contains(l, "Adding layer '"):
			counts[0]++
		case strings.Contains(l, "Reusing layer '"):
			counts[1]++
		case strings.Contains(l, "Restoring data for "):
			counts[2]++
		}
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), counts, fmt.Errorf("the lifecycle failed (exit %d)", ee.ExitCode())
		}
		return 0, counts, err
	}
	return 0, counts, nil
}

// writeBuildEnv writes each K=V as the platform env file dir/K, which
// buildpacks read (and see in their environment): never in the pod spec.
func writeBuildEnv(dir string, env []string) error {
	if len(env) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, "/\x00") || k == "." || k == ".." {
			return fmt.Errorf("invalid build environment entry %q: want K=V", k)
		}
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeOrder writes an order.toml of one group: the buildpacks asked for,
// in that order, each at the version asked or the builder's only (or
// newest) one. A buildpack the builder lacks is an error naming those it
// has.
func writeOrder(work, dir string, want []string) (string, error) {
	var b strings.Builder
	b.WriteString("[[order]]\n")
	for _, w := range want {
		id, version, _ := strings.Cut(w, "@")
		versions := buildpackVersions(dir, id)
		switch {
		case len(versions) == 0:
			return "", fmt.Errorf("the builder has no buildpack %s (it has %s)", id, strings.Join(installedBuildpacks(dir), ", "))
		case version == "":
			version = versions[len(versions)-1]
		case !contains(versions, version):
			return "", fmt.Errorf("the builder has %s at %s, not %s", id, strings.Join(versions, ", "), version)
		}
		fmt.Fprintf(&b, "  [[order.group]]\n    id = %q\n    version = %q\n", id, version)
	}
	path := filepath.Join(work, "order.toml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// buildpackVersions are the versions of buildpack id in the builder,
// sorted (dir/<id with / as _>/<version>/).
func buildpackVersions(dir, id string) []string {
	entries, err := os.ReadDir(filepath.Join(dir, strings.ReplaceAll(id, "/", "_")))
	if err != nil {
		return nil
	}
	var vs []string
	for _, e := range entries {
		if e.IsDir() {
			vs = append(vs, e.Name())
		}
	}
	sort.Strings(vs)
	return vs
}

// installedBuildpacks are ID@VERSION of every buildpack in dir.
func installedBuildpacks(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var all []string
	for _, e := range entries {
		for _, v := range buildpackVersions(dir, e.Name()) {
			all = append(all, strings.Replace(e.Name(), "_", "/", 1)+"@"+v)
		}
	}
	return all
}

var reportDigestLine = regexp.MustCompile(`(?m)^\s*digest\s*=\s*"(sha256:[0-9a-f]{64})"`)

// reportDigest is the image digest of the lifecycle's report.toml
// ([image] digest = "sha256:...").
func reportDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the lifecycle's report: %w", err)
	}
	if _, img, ok := strings.Cut(string(b), "[image]"); ok {
		if m := reportDigestLine.FindStringSubmatch(img); m != nil {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("the lifecycle's report %s names no image digest", path)
}

type buildMetadata struct {
	Processes []struct {
		Type string `json:"type"`
	} `json:"processes"`
	Buildpacks []struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"buildpacks"`
}

// readProcesses reads the process types and the buildpacks that built
// the image from its io.buildpacks.build.metadata label, and hands back
// the layers of its manifest (read by the same request; nil when the
// manifest cannot be parsed: the layer counts are then unknown).
func (b *cnbBuild) readProcesses(image string) ([]protocol.Layer, error) {
	ref, err := parseRef(image)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return nil, fmt.Errorf("reading the built image %s: %w", image, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	var md buildMetadata
	if err := json.Unmarshal([]byte(cf.Config.Labels[labelBuild]), &md); err != nil {
		return nil, fmt.Errorf("the built image's %s label: %w", labelBuild, err)
	}
	for _, p := range md.Processes {
		b.res.Processes = append(b.res.Processes, p.Type)
	}
	for _, bp := range md.Buildpacks {
		b.res.Buildpacks = append(b.res.Buildpacks, bp.ID+"@"+bp.Version)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, nil
	}
	return manifestLayers(m), nil
}

// previousImage is the image the build's tag named before the lifecycle
// exported over it: the image whose layers the exporter reuses (and so
// the registry already holds).
type previousImage struct {
	known  bool   // false: the registry could not say; no counts then
	image  string // REPO@sha256:...; "" when the tag named nothing
	layers []protocol.Layer
}

// readPrevious reads the tag's manifest (one GET) before the lifecycle
// moves the tag. A tag that names nothing yet is a first build: every
// layer is new. Any other failure leaves the counts unknown, so tug says
// nothing rather than a wrong number.
func (b *cnbBuild) readPrevious() previousImage {
	ref, err := parseRef(b.repo + ":" + b.tag)
	if err != nil {
		return previousImage{}
	}
	desc, err := remote.Get(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return previousImage{known: true}
	}
	if err != nil {
		fmt.Printf("-----> cannot read the previous image %s (%s): the layers pushed are not counted\n", ref, text.OneLine(err.Error()))
		return previousImage{}
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil || desc.MediaType.IsIndex() {
		fmt.Printf("-----> the previous image %s is not one image's manifest (%s): the layers pushed are not counted\n", ref, desc.MediaType)
		return previousImage{}
	}
	return previousImage{known: true, image: ref.Context().Name() + "@" + desc.Digest.String(), layers: manifestLayers(m)}
}

func manifestLayers(m *v1.Manifest) []protocol.Layer {
	layers := make([]protocol.Layer, len(m.Layers))
	for i, l := range m.Layers {
		layers[i] = protocol.Layer{Digest: l.Digest.String(), Size: l.Size}
	}
	return layers
}
