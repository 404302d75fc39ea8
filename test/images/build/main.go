// Command build writes the local cluster's images as OCI image-layout tars
// that `ctr images import` loads: there is no registry on these machines, so
// images are built from this repository's code with nothing but Go.
//
//	go run ./test/images/build -out DIR
//
// produces DIR/pause.tar (localhost/tug/pause:v1), DIR/sample.tar
// (localhost/tug/sample with tags v1, v2, crash and unready),
// DIR/dbapp.tar (localhost/tug/dbapp:v1, the backing-services sample app) and
// DIR/maintenance.tar (tug's maintenance page, under its published name),
// DIR/builder.tar (localhost/tug/builder-static:v1, the static-site builder
// of docs/builders.md), DIR/tug-build.tar (tug's build agent, under its
// published names v1 and v2), DIR/busybox.tar (localhost/tug/busybox:v1, the base of
// test Dockerfiles) and, with -buildkit DIR, DIR/buildkit.tar
// (localhost/tug/buildkit:v1: rootless BuildKit for Dockerfile builds, from
// test/images/buildkit/build.sh's binaries and the machine's runc). Output is
// deterministic: the same inputs give the same digests.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"tug.dev/tug/test/images/layer"
)

type file = layer.File

type image struct {
	out   string
	files []file
	tags  []layer.Tag
}

func main() {
	out := flag.String("out", "", "folder to write the image tars into")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox, for /bin/sh and the usual tools")
	buildkit := flag.String("buildkit", "", "a folder with buildkitd and buildctl (test/images/buildkit/build.sh): also write buildkit.tar")
	runc := flag.String("runc", "/usr/sbin/runc", "runc for the BuildKit image, with the shared libraries ldd lists")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: build -out DIR [-busybox PATH] [-buildkit DIR [-runc PATH]]")
		os.Exit(2)
	}
	if err := run(*out, *busybox, *buildkit, *runc); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

func run(out, busybox, buildkit, runc string) error {
	here, err := sourceDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bins, err := buildBinaries(here)
	if err != nil {
		return err
	}
	bb, err := busyboxFiles(busybox)
	if err != nil {
		return err
	}
	sys := system(bb)
	images := testImages(bins, sys)
	if buildkit != "" {
		img, err := buildkitImage(buildkit, runc, sys)
		if err != nil {
			return err
		}
		images = append(images, img)
	}
	for _, img := range images {
		if err := writeLayout(filepath.Join(out, img.out), img); err != nil {
			return fmt.Errorf("%s: %w", img.out, err)
		}
	}
	return nil
}

// binaries are the Go programs the images hold, built from this
// repository.
type binaries struct {
	pause, sample, maintenance, agent, dbapp []byte
}

// buildBinaries builds them; here is test/images. tug's own maintenance
// page and build agent are imported under the names tug deploys them by,
// so the local cluster needs no registry for them either.
func buildBinaries(here string) (binaries, error) {
	var b binaries
	for _, p := range []struct {
		bin *[]byte
		dir string
	}{
		{&b.pause, filepath.Join(here, "pause")},
		{&b.sample, filepath.Join(here, "sample")},
		{&b.maintenance, filepath.Join(here, "..", "..", "cmd", "tug-maintenance")},
		{&b.agent, filepath.Join(here, "..", "..", "cmd", "tug-build")},
		// a Go module of its own (its database driver stays out of tug's)
		{&b.dbapp, filepath.Join(here, "dbapp")},
	} {
		data, err := goBuild(p.dir)
		if err != nil {
			return binaries{}, err
		}
		*p.bin = data
	}
	return b, nil
}

// system is a base system for images that need a shell: busybox (bb),
// /tmp, /etc, /root and, unless extra brings its own users, root and
// nobody; then extra.
func system(bb []file) func(extra ...file) []file {
	return func(extra ...file) []file {
		fs := append([]file(nil), bb...)
		fs = append(fs,
			file{Name: "tmp", Mode: 0o1777, Dir: true},
			file{Name: "etc", Mode: 0o755, Dir: true},
			file{Name: "root", Mode: 0o700, Dir: true},
		)
		if !slices.ContainsFunc(extra, func(f file) bool { return f.Name == "etc/passwd" }) {
			fs = append(fs,
				file{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
				file{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
			)
		}
		return append(fs, extra...)
	}
}

// testImages are every image but BuildKit's: what each tar holds and the
// tags it is imported under.
func testImages(bins binaries, system func(extra ...file) []file) []image {
	// The static-site builder: busybox (sh, httpd) and a /tug/build that
	// runs the app's build.sh, as docs/builders.md describes.
	builderFiles := system(
		file{Name: "app", Mode: 0o755, Dir: true},
		file{Name: "tug", Mode: 0o755, Dir: true},
		file{Name: "tug/build", Mode: 0o755, Data: []byte(builderScript)},
	)
	sampleFiles := system(file{Name: "bin/sample", Mode: 0o755, Data: bins.sample})
	dbappFiles := system(file{Name: "bin/dbapp", Mode: 0o755, Data: bins.dbapp})
	path := "PATH=/bin"
	return []image{
		{out: "pause.tar", files: []file{{Name: "pause", Mode: 0o755, Data: bins.pause}},
			tags: []layer.Tag{{Ref: "localhost/tug/pause:v1", Cmd: []string{"/pause"}}}},
		{out: "maintenance.tar", files: []file{{Name: "tug-maintenance", Mode: 0o755, Data: bins.maintenance}},
			tags: []layer.Tag{{Ref: "ghcr.io/tug-dev/tug-maintenance:v1", Cmd: []string{"/tug-maintenance"}}}},
		{out: "tug-build.tar", files: []file{{Name: "tug-build", Mode: 0o755, Data: bins.agent}},
			// v2 speaks pkg/imagebuild/protocol's job header; the same agent
			// serves clients of v1
			tags: []layer.Tag{{Ref: "ghcr.io/tug-dev/tug-build:v1", Cmd: []string{"/tug-build"}}, {Ref: "ghcr.io/tug-dev/tug-build:v2", Cmd: []string{"/tug-build"}}}},
		{out: "builder.tar", files: builderFiles,
			tags: []layer.Tag{{Ref: "localhost/tug/builder-static:v1", Env: []string{path}, Cmd: []string{"/bin/sh"}}}},
		// the base image of the test Dockerfiles (FROM REGISTRY/tug/busybox:v1)
		{out: "busybox.tar", files: system(), tags: []layer.Tag{{Ref: "localhost/tug/busybox:v1", Env: []string{path}, Cmd: []string{"/bin/sh"}}}},
		// the sample app of backing services (docs/services.md), as nobody
		{out: "dbapp.tar", files: dbappFiles, tags: []layer.Tag{
			{Ref: "localhost/tug/dbapp:v1", Env: []string{path}, Cmd: []string{"/bin/dbapp"}, User: "65534:65534"},
		}},
		{out: "sample.tar", files: sampleFiles, tags: []layer.Tag{
			{Ref: "localhost/tug/sample:v1", Env: []string{path, "VERSION=v1"}, Cmd: []string{"/bin/sample"}},
			{Ref: "localhost/tug/sample:v2", Env: []string{path, "VERSION=v2"}, Cmd: []string{"/bin/sample"}},
			{Ref: "localhost/tug/sample:crash", Env: []string{path, "VERSION=crash", "SAMPLE_MODE=crash"}, Cmd: []string{"/bin/sample"}},
			{Ref: "localhost/tug/sample:unready", Env: []string{path, "VERSION=unready", "SAMPLE_MODE=unready"}, Cmd: []string{"/bin/sample"}},
		}},
	}
}

// buildkitImage is rootless BuildKit for Dockerfile builds, from the
// binaries in dir and runc.
func buildkitImage(dir, runc string, system func(extra ...file) []file) (image, error) {
	files, err := buildkitFiles(dir, runc)
	if err != nil {
		return image{}, fmt.Errorf("the BuildKit image: %w", err)
	}
	return image{out: "buildkit.tar", files: system(files...), tags: []layer.Tag{{
		Ref: "localhost/tug/buildkit:v1",
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Cmd: []string{"/usr/local/bin/buildkitd"},
	}}}, nil
}

// buildkitFiles are BuildKit's daemon and client (built from Go modules
// by test/images/buildkit/build.sh) and runc, which BuildKit's OCI worker
// runs RUN steps with, with the shared libraries it loads (Debian's runc
// is linked against libseccomp and glibc).
func buildkitFiles(dir, runc string) ([]file, error) {
	files := []file{
		{Name: "usr", Mode: 0o755, Dir: true},
		{Name: "usr/local", Mode: 0o755, Dir: true},
		{Name: "usr/local/bin", Mode: 0o755, Dir: true},
		{Name: "usr/bin", Mode: 0o755, Dir: true},
		{Name: "var", Mode: 0o755, Dir: true},
		{Name: "var/lib", Mode: 0o755, Dir: true},
		// owned by "user", root in rootlesskit's user namespace
		{Name: "var/lib/buildkit", Mode: 0o700, Dir: true, UID: 1000},
		{Name: "run", Mode: 0o755, Dir: true},
		{Name: "run/buildkit", Mode: 0o700, Dir: true, UID: 1000},
	}
	for _, b := range []string{"buildkitd", "buildctl"} {
		data, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			return nil, err
		}
		files = append(files, file{Name: "usr/local/bin/" + b, Mode: 0o755, Data: data})
	}
	// rootless: rootlesskit, and newuidmap/newgidmap (setuid) with a
	// subordinate ID range for the user "user" (1000)
	bins := map[string]int64{runc: 0o755}
	if data, err := os.ReadFile(filepath.Join(dir, "rootlesskit")); err == nil {
		files = append(files, file{Name: "usr/local/bin/rootlesskit", Mode: 0o755, Data: data})
		for _, b := range []string{"/usr/bin/newuidmap", "/usr/bin/newgidmap"} {
			bins[filepath.Join(dir, filepath.Base(b))] = 0o4755
		}
		files = append(files,
			file{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
			file{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n")},
			file{Name: "etc/subuid", Mode: 0o644, Data: []byte("user:100000:65536\n")},
			file{Name: "etc/subgid", Mode: 0o644, Data: []byte("user:100000:65536\n")},
			file{Name: "home", Mode: 0o755, Dir: true},
			file{Name: "home/user", Mode: 0o700, Dir: true, UID: 1000},
			file{Name: "run/user", Mode: 0o755, Dir: true},
			file{Name: "run/user/1000", Mode: 0o700, Dir: true, UID: 1000},
		)
	}
	more, err := binariesWithLibs(bins)
	if err != nil {
		return nil, err
	}
	return append(files, more...), nil
}

// binariesWithLibs are the binaries (path to mode) under usr/bin and the
// shared libraries they load, at their own paths, with the directories
// those need beyond usr and usr/bin.
func binariesWithLibs(bins map[string]int64) ([]file, error) {
	var files []file
	var libs []string
	for b, mode := range bins {
		data, err := os.ReadFile(b)
		if err != nil {
			return nil, err
		}
		files = append(files, file{Name: "usr/bin/" + filepath.Base(b), Mode: mode, Data: data})
		l, err := sharedLibs(b)
		if err != nil {
			return nil, err
		}
		libs = append(libs, l...)
	}
	libs = slices.Compact(slices.Sorted(slices.Values(libs)))
	dirs := map[string]bool{"usr": true, "usr/bin": true}
	for _, l := range libs {
		data, err := os.ReadFile(l) // follows the symlink: the file under its soname
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(l, "/")
		for d := filepath.Dir(name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			files = append(files, file{Name: d, Mode: 0o755, Dir: true})
		}
		files = append(files, file{Name: name, Mode: 0o755, Data: data})
	}
	return files, nil
}

// sharedLibs are the absolute paths ldd lists for bin.
func sharedLibs(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	for _, l := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(l) {
			if strings.HasPrefix(f, "/") {
				libs = append(libs, f)
			}
		}
	}
	sort.Strings(libs)
	return libs, nil
}

// builderScript is tug/builder-static's build step: the app's build.sh,
// run in /app, when there is one.
const builderScript = `#!/bin/sh
# tug/builder-static: runs the app's build.sh in /app when it has one.
set -e
cd "${TUG_APP_DIR:-/app}"
if [ -f build.sh ]; then
  echo "-----> sh build.sh"
  exec sh build.sh
fi
echo "-----> no build.sh: the source is served as it is"
`

// sourceDir finds test/images from the working directory, so the command
// works from the repository root or from this folder.
func sourceDir() (string, error) {
	for _, dir := range []string{"test/images", ".", ".."} {
		if _, err := os.Stat(filepath.Join(dir, "sample", "main.go")); err == nil {
			return filepath.Abs(dir)
		}
	}
	return "", fmt.Errorf("run from the repository root: test/images/sample not found")
}

func goBuild(pkg string) ([]byte, error) {
	tmp, err := os.CreateTemp("", "tug-image-bin-")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", tmp.Name(), ".")
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w", pkg, err)
	}
	return os.ReadFile(tmp.Name())
}

// busyboxFiles puts busybox at /bin/busybox with a symlink per applet, as
// `busybox --install -s` would.
func busyboxFiles(path string) ([]file, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (install busybox-static)", err)
	}
	list, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", path, err)
	}
	files := []file{{Name: "bin", Mode: 0o755, Dir: true}, {Name: "bin/busybox", Mode: 0o755, Data: data}}
	for _, applet := range strings.Fields(string(list)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		files = append(files, file{Name: "bin/" + applet, Mode: 0o777, Link: "busybox"})
	}
	return files, nil
}

// writeLayout writes img as an OCI image layout tar: its one layer, then
// one manifest per tag (layer.WriteLayout).
func writeLayout(path string, img image) error {
	data, err := layer.Tar(img.files)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".layer-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return layer.WriteLayout(path, tmp.Name(), img.tags)
}
