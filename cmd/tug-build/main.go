// Command tug-build is the agent of `tug app deploy` from source. It is a
// static binary shipped as its own image; an init container copies it into
// the build pod, so any builder image can run it:
//
//	tug-build install DEST        copy this binary to DEST (the init container)
//	tug-build run -repository REPO -run-image IMAGE
//	tug-build dockerfile -repository REPO -dockerfile PATH -job stdin -buildkitd ADDR -tls-dir DIR
//	tug-build buildkit-setup [-install DEST] -daemon DIR -client DIR [-plain-http HOST,...]
//	tug-build inspect -image BUILDER
//	tug-build cnb -repository REPO -run-image IMAGE -platform-api VERSION [-cache-image REPO:TAG]
//
// run reads a gzipped tar of the app's source on stdin, unpacks it into
// /app (through an os.Root, within the limits of pkg/imagebuild/protocol), runs
// the build step there (the builder's /tug/build when it exists, else the
// Procfile's build: line, else nothing), and pushes the run image plus one
// layer holding /app, its config pointing at /app and the Procfile's web
// process, to REPO with go-containerregistry: only the layers the registry
// lacks are uploaded. Its last line is machine-readable:
//
//	TUG-BUILD-RESULT {"ok":true,"image":"REPO@sha256:...",...}
//
// dockerfile runs in a BuildKit image instead. With -job stdin a job header
// (build arguments, target: what must not sit in the pod spec) comes before
// the source; it unpacks the source the same way and builds the Dockerfile
// with buildctl against the buildkitd of the pod's other container, over
// mutual TLS with the client certificate that buildkit-setup (the init
// container) wrote, pushing to REPO with a registry cache at
// REPO:buildcache. The push credentials (DOCKER_CONFIG) are this
// container's alone: buildkitd gets them through buildctl's session, and
// RUN steps, which run beside buildkitd, see neither.
//
// inspect reads a builder image's config from its registry and says
// whether it is a Cloud Native Buildpacks builder (and its user, run image,
// Platform APIs and buildpacks). cnb runs in such a builder: it reads the
// job header (build environment, buildpacks) and the source, writes the
// build environment as platform env files and runs the builder's own
// /cnb/lifecycle/creator, which pushes to REPO with a cache image; the
// digest comes from the lifecycle's report, the process types from the
// image's io.buildpacks.build.metadata label.
//
// Without -buildkitd (older clients) it starts buildkitd itself, in the
// same container, as before.
//
// See docs/builders.md.
package main

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/text"
)

// ResultPrefix starts the agent's last line.
const ResultPrefix = "TUG-BUILD-RESULT "

// Result is the agent's last line, after ResultPrefix.
type Result struct {
	OK          bool   `json:"ok"`
	Stage       string `json:"stage,omitempty"` // unpack, build, image, push
	ExitCode    int    `json:"exitCode,omitempty"`
	Message     string `json:"message,omitempty"`
	Image       string `json:"image,omitempty"` // REPO@sha256:...
	LayerBytes  int64  `json:"layerBytes,omitempty"`
	PushedBytes int64  `json:"pushedBytes,omitempty"`
	// A CNB build's (cnb): the image's process types and buildpacks, and
	// the layers the lifecycle added, reused and restored from the cache.
	Processes      []string `json:"processes,omitempty"`
	Buildpacks     []string `json:"buildpacks,omitempty"`
	LayersAdded    int      `json:"layersAdded,omitempty"`
	LayersReused   int      `json:"layersReused,omitempty"`
	LayersRestored int      `json:"layersRestored,omitempty"`
	// Upload is what the pushed image cost the registry against the
	// image its tag named before (cnb); omitted when unknown.
	Upload  *protocol.Upload `json:"upload,omitempty"`
	Seconds struct {
		Unpack float64 `json:"unpack"`
		Build  float64 `json:"build"`
		Push   float64 `json:"push"`
	} `json:"seconds"`
}

// finish prints the result as the last line (the CLI reads it) and returns
// the process's exit code: 1 when a stage failed.
func (res *Result) finish(stage string, code int, err error) int {
	if err != nil {
		res.OK, res.Stage, res.ExitCode, res.Message = false, stage, code, err.Error()
		fmt.Printf("tug-build: %s: %v\n", stage, err)
	} else {
		res.OK = true
	}
	line, _ := json.Marshal(res)
	fmt.Println(ResultPrefix + string(line))
	if err != nil {
		return 1
	}
	return 0
}

// unpackSource unpacks the source archive from in into dir and says so.
// It reads in to its end whatever happens, so the client finishes its
// upload and reads why an archive was refused.
func (res *Result) unpackSource(in io.Reader, dir string) error {
	t := time.Now()
	n, size, err := unpack(in, dir, defaultLimits)
	_, _ = io.Copy(io.Discard, in)
	if err != nil {
		return err
	}
	res.Seconds.Unpack = time.Since(t).Seconds()
	fmt.Printf("-----> source: %d files, %s unpacked into %s\n", n, text.Size(size), dir)
	return nil
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "install":
		if len(os.Args) != 3 {
			usage()
		}
		if err := install(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "tug-build:", err)
			os.Exit(1)
		}
	case "run":
		os.Exit(run(os.Args[2:]))
	case "dockerfile":
		os.Exit(dockerfile(os.Args[2:]))
	case "buildkit-setup":
		os.Exit(buildkitSetup(os.Args[2:]))
	case "inspect":
		os.Exit(inspect(os.Args[2:]))
	case "cnb":
		os.Exit(cnb(os.Args[2:]))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: tug-build install DEST | tug-build run -repository REPO -run-image IMAGE [-app DIR] [-tag TAG] |\n"+
		"  tug-build dockerfile -repository REPO -dockerfile PATH [-app DIR] [-job stdin] [-buildkitd ADDR -tls-dir DIR] [-build-arg K=V]... [-target STAGE] |\n"+
		"  tug-build buildkit-setup [-install DEST] -daemon DIR -client DIR [-plain-http HOST,...] |\n"+
		"  tug-build inspect -image BUILDER |\n"+
		"  tug-build cnb -repository REPO -run-image IMAGE -platform-api VERSION [-cache-image REPO:TAG] [-insecure-registry HOST]...")
	os.Exit(2)
}

func install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dest, b, 0o755)
}

func run(args []string) int {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	repo := fs.String("repository", "", "repository to push the image to, HOST/PATH")
	runImage := fs.String("run-image", "", "image the app's layer goes on top of")
	appDir := fs.String("app", "/app", "folder the source is unpacked into")
	tag := fs.String("tag", "latest", "tag to push besides the digest")
	work := fs.String("work", os.TempDir(), "folder for the layer file")
	_ = fs.Parse(args)
	if *repo == "" || *runImage == "" {
		usage()
	}
	var res Result
	finish := res.finish
	if err := res.unpackSource(bufio.NewReaderSize(os.Stdin, 64<<10), *appDir); err != nil {
		return finish("unpack", 0, err)
	}

	t := time.Now()
	if code, err := buildStep(*appDir); err != nil {
		return finish("build", code, err)
	}
	res.Seconds.Build = time.Since(t).Seconds()

	t = time.Now()
	img, layerSize, err := makeImage(*appDir, *runImage, *work)
	if err != nil {
		return finish("image", 0, err)
	}
	res.LayerBytes = layerSize
	ref, err := parseRef(*repo + ":" + *tag)
	if err != nil {
		return finish("push", 0, err)
	}
	fmt.Printf("-----> pushing %s (app layer %s)\n", ref.Context(), text.Size(layerSize))
	pushed, err := push(ref, img)
	if err != nil {
		return finish("push", 0, err)
	}
	d, err := img.Digest()
	if err != nil {
		return finish("push", 0, err)
	}
	res.PushedBytes = pushed
	res.Seconds.Push = time.Since(t).Seconds()
	res.Image = ref.Context().Name() + "@" + d.String()
	fmt.Printf("-----> pushed %s (%s uploaded)\n", res.Image, text.Size(pushed))
	return finish("", 0, nil)
}

// buildStep runs /tug/build, else the Procfile's build: line, else nothing.
func buildStep(dir string) (int, error) {
	var cmd *exec.Cmd
	if fi, err := os.Stat("/tug/build"); err == nil && !fi.IsDir() {
		fmt.Println("-----> running the builder's /tug/build")
		cmd = exec.Command("/tug/build")
	} else if line := procfileLine(filepath.Join(dir, "Procfile"), "build"); line != "" {
		fmt.Printf("-----> running the Procfile's build: %s\n", line)
		cmd = exec.Command("/bin/sh", "-c", line)
	} else {
		fmt.Println("-----> no build step")
		return 0, nil
	}
	cmd.Dir = dir
	// one stream, so the build's lines stay in the order it wrote them
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.Env = append(os.Environ(), "TUG_APP_DIR="+dir)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), fmt.Errorf("the build step failed (exit %d)", ee.ExitCode())
		}
		return 0, fmt.Errorf("the build step could not run: %w", err)
	}
	return 0, nil
}

// procfileLine is the command of one Procfile entry, "" without one.
func procfileLine(path, proc string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") {
			continue
		}
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == proc {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

var epoch = time.Unix(0, 0).UTC()

// appLayer writes dir as one layer (paths under app/, owned by root,
// times zeroed, in name order) so the same tree gives the same digest.
func appLayer(dir, work string) (string, error) {
	f, err := os.CreateTemp(work, "tug-app-layer-*.tar")
	if err != nil {
		return "", err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	base := strings.TrimPrefix(filepath.Clean(dir), "/")
	paths, err := sortedPaths(dir)
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		if err := writeLayerEntry(tw, dir, base, p); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// sortedPaths is every path under dir, dir too, in name order: the
// layer's order must not depend on the order the file system lists them.
func sortedPaths(dir string) ([]string, error) {
	var paths []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}

// writeLayerEntry writes path p (under dir) into the layer as
// base/REL, with nothing of who made it or when, so that only the
// content decides the digest. What a tar cannot hold (a socket) is left
// out.
func writeLayerEntry(tw *tar.Writer, dir, base, p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(dir, p)
	link := ""
	if fi.Mode()&os.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return nil // sockets and the like
	}
	h.Name = filepath.ToSlash(filepath.Join(base, rel))
	if fi.IsDir() {
		h.Name += "/"
	}
	h.ModTime, h.AccessTime, h.ChangeTime = epoch, time.Time{}, time.Time{}
	h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
	h.Format = tar.FormatPAX
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
}

func makeImage(dir, runImage, work string) (v1.Image, int64, error) {
	ref, err := parseRef(runImage)
	if err != nil {
		return nil, 0, fmt.Errorf("--run-image %s: %w", runImage, err)
	}
	fmt.Printf("-----> reading the run image %s\n", runImage)
	base, err := remote.Image(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the run image %s: %w", runImage, err)
	}
	path, err := appLayer(dir, work)
	if err != nil {
		return nil, 0, fmt.Errorf("writing the app layer: %w", err)
	}
	layer, err := tarball.LayerFromFile(path)
	if err != nil {
		return nil, 0, err
	}
	size, err := layer.Size()
	if err != nil {
		return nil, 0, err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "tug-build: /app", Created: v1.Time{Time: epoch}}})
	if err != nil {
		return nil, 0, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, 0, err
	}
	cfg := cf.Config.DeepCopy()
	cfg.WorkingDir = dir
	if web := procfileLine(filepath.Join(dir, "Procfile"), "web"); web != "" {
		cfg.Entrypoint, cfg.Cmd = nil, []string{"/bin/sh", "-c", "exec " + web}
	}
	if procfile, err := os.ReadFile(filepath.Join(dir, "Procfile")); err == nil {
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels["dev.tug.procfile"] = string(procfile)
	}
	img, err = mutate.Config(img, *cfg)
	if err != nil {
		return nil, 0, err
	}
	return img, size, nil
}

// push writes img and returns the bytes sent to the registry (request
// bodies: blobs, config, manifest). remote.Write skips the blobs the
// registry has and mounts those another repository there has.
func push(ref name.Reference, img v1.Image) (int64, error) {
	ct := &countingTransport{next: remote.DefaultTransport}
	err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithTransport(ct))
	return ct.n.Load(), err
}

type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		r.Body = &countingBody{ReadCloser: r.Body, n: &c.n}
	}
	return c.next.RoundTrip(r)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// parseRef allows plain HTTP for registries on private or loopback
// addresses only (a local or in-cluster registry); others need HTTPS.
func parseRef(s string) (name.Reference, error) {
	ref, err := name.ParseReference(s)
	if err != nil {
		return nil, err
	}
	host := ref.Context().RegistryStr()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && (ip.IsPrivate() || ip.IsLoopback()) {
		return name.ParseReference(s, name.Insecure)
	}
	return ref, nil
}
