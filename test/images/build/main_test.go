package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// wantImages is what run writes: per tar, each tag's name, environment
// and command, then the layer's entries (type, mode, owner; the contents
// of the small text files). Left out, and checked on their own: busybox's
// applet links and the shared libraries of the BuildKit image's binaries,
// which depend on the machine.
const wantImages = `builder.tar
  localhost/tug/builder-static:v1 env [PATH=/bin] cmd [/bin/sh]
  app/ dir 755 0
  bin/ dir 755 0
  bin/busybox file 755 0
  etc/ dir 755 0
  etc/group file 644 0 "root:x:0:\nnogroup:x:65534:\n"
  etc/passwd file 644 0 "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
  root/ dir 700 0
  tmp/ dir 1777 0
  tug/ dir 755 0
  tug/build file 755 0 "#!/bin/sh\n# tug/builder-static: runs the app's build.sh in /app when it has one.\nset -e\ncd \"${TUG_APP_DIR:-/app}\"\nif [ -f build.sh ]; then\n  echo \"-----> sh build.sh\"\n  exec sh build.sh\nfi\necho \"-----> no build.sh: the source is served as it is\"\n"
buildkit.tar
  localhost/tug/buildkit:v1 env [PATH=/usr/local/bin:/usr/bin:/bin] cmd [/usr/local/bin/buildkitd]
  bin/ dir 755 0
  bin/busybox file 755 0
  etc/ dir 755 0
  etc/group file 644 0 "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n"
  etc/passwd file 644 0 "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
  etc/subgid file 644 0 "user:100000:65536\n"
  etc/subuid file 644 0 "user:100000:65536\n"
  home/ dir 755 0
  home/user/ dir 700 1000
  root/ dir 700 0
  run/ dir 755 0
  run/buildkit/ dir 700 1000
  run/user/ dir 755 0
  run/user/1000/ dir 700 1000
  tmp/ dir 1777 0
  usr/ dir 755 0
  usr/bin/ dir 755 0
  usr/bin/newgidmap file 4755 0
  usr/bin/newuidmap file 4755 0
  usr/bin/runc file 755 0
  usr/local/ dir 755 0
  usr/local/bin/ dir 755 0
  usr/local/bin/buildctl file 755 0 "fake buildctl"
  usr/local/bin/buildkitd file 755 0 "fake buildkitd"
  usr/local/bin/rootlesskit file 755 0 "fake rootlesskit"
  var/ dir 755 0
  var/lib/ dir 755 0
  var/lib/buildkit/ dir 700 1000
busybox.tar
  localhost/tug/busybox:v1 env [PATH=/bin] cmd [/bin/sh]
  bin/ dir 755 0
  bin/busybox file 755 0
  etc/ dir 755 0
  etc/group file 644 0 "root:x:0:\nnogroup:x:65534:\n"
  etc/passwd file 644 0 "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
  root/ dir 700 0
  tmp/ dir 1777 0
dbapp.tar
  localhost/tug/dbapp:v1 env [PATH=/bin] cmd [/bin/dbapp] user 65534:65534
  bin/ dir 755 0
  bin/busybox file 755 0
  bin/dbapp file 755 0
  etc/ dir 755 0
  etc/group file 644 0 "root:x:0:\nnogroup:x:65534:\n"
  etc/passwd file 644 0 "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
  root/ dir 700 0
  tmp/ dir 1777 0
maintenance.tar
  ghcr.io/tug-dev/tug-maintenance:v1 env [] cmd [/tug-maintenance]
  tug-maintenance file 755 0
pause.tar
  localhost/tug/pause:v1 env [] cmd [/pause]
  pause file 755 0
sample.tar
  localhost/tug/sample:v1 env [PATH=/bin VERSION=v1] cmd [/bin/sample]
  localhost/tug/sample:v2 env [PATH=/bin VERSION=v2] cmd [/bin/sample]
  localhost/tug/sample:crash env [PATH=/bin VERSION=crash SAMPLE_MODE=crash] cmd [/bin/sample]
  localhost/tug/sample:unready env [PATH=/bin VERSION=unready SAMPLE_MODE=unready] cmd [/bin/sample]
  bin/ dir 755 0
  bin/busybox file 755 0
  bin/sample file 755 0
  etc/ dir 755 0
  etc/group file 644 0 "root:x:0:\nnogroup:x:65534:\n"
  etc/passwd file 644 0 "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
  root/ dir 700 0
  tmp/ dir 1777 0
tug-build.tar
  ghcr.io/tug-dev/tug-build:v1 env [] cmd [/tug-build]
  ghcr.io/tug-dev/tug-build:v2 env [] cmd [/tug-build]
  tug-build file 755 0
`

// TestRunWritesTheImages runs the whole command (five go builds) with a
// fake BuildKit folder and checks every image it writes.
func TestRunWritesTheImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds five Go programs")
	}
	const busybox, runc, dynamic = "/bin/busybox", "/usr/sbin/runc", "/bin/true"
	for _, p := range []string{busybox, runc, dynamic} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs %s: %v", p, err)
		}
	}
	bk := t.TempDir()
	for _, b := range []string{"buildkitd", "buildctl", "rootlesskit"} {
		if err := os.WriteFile(filepath.Join(bk, b), []byte("fake "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// newuidmap and newgidmap come from the BuildKit folder; any
	// dynamically linked program stands in for them
	data, err := os.ReadFile(dynamic)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"newuidmap", "newgidmap"} {
		if err := os.WriteFile(filepath.Join(bk, b), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	if err := run(out, busybox, bk, runc); err != nil {
		t.Fatal(err)
	}

	applets, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var libs []string
	for _, b := range []string{runc, dynamic} {
		l, err := sharedLibs(b)
		if err != nil {
			t.Fatal(err)
		}
		libs = append(libs, l...)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, e := range ents {
		got.WriteString(e.Name() + "\n")
		links, libsIn := describeLayout(t, filepath.Join(out, e.Name()), &got)
		if links > 0 && links != len(strings.Fields(string(applets)))-1 {
			t.Errorf("%s: %d applet links, want one per applet of busybox --list but busybox", e.Name(), links)
		}
		if e.Name() == "buildkit.tar" {
			for _, l := range libs {
				if !slices.Contains(libsIn, strings.TrimPrefix(l, "/")) {
					t.Errorf("buildkit.tar lacks %s", l)
				}
			}
		}
	}
	if got.String() != wantImages {
		t.Errorf("images:\n%s\nwant:\n%s", got.String(), wantImages)
	}
}

// describeLayout writes one OCI layout tar's tags and layer to w, and
// returns the applet links and the library files it left out.
func describeLayout(t *testing.T, path string, w io.Writer) (links int, libs []string) {
	t.Helper()
	files := readTar(t, mustRead(t, path))
	if _, ok := files["oci-layout"]; !ok {
		t.Errorf("%s: no oci-layout", path)
	}
	blob := func(d string) []byte {
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")]
		if !ok {
			t.Fatalf("%s: no blob %s", path, d)
		}
		return b.data
	}
	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	unmarshal(t, files["index.json"].data, &index)
	var layer string
	for _, m := range index.Manifests {
		var man struct {
			Config struct{ Digest string }   `json:"config"`
			Layers []struct{ Digest string } `json:"layers"`
		}
		unmarshal(t, blob(m.Digest), &man)
		var cfg struct {
			Config struct {
				Env, Cmd   []string
				WorkingDir string
				User       string
			} `json:"config"`
		}
		unmarshal(t, blob(man.Config.Digest), &cfg)
		ref := m.Annotations["io.containerd.image.name"]
		if !strings.HasSuffix(ref, ":"+m.Annotations["org.opencontainers.image.ref.name"]) || cfg.Config.WorkingDir != "/" || len(man.Layers) != 1 {
			t.Errorf("%s: manifest %+v %+v", path, m.Annotations, man)
		}
		fmt.Fprintf(w, "  %s env %v cmd %v", ref, cfg.Config.Env, cfg.Config.Cmd)
		if cfg.Config.User != "" {
			fmt.Fprintf(w, " user %s", cfg.Config.User)
		}
		fmt.Fprintln(w)
		layer = man.Layers[0].Digest
	}
	layerFiles := readTar(t, blob(layer))
	for _, name := range slices.Sorted(maps.Keys(layerFiles)) {
		f := layerFiles[name]
		switch {
		case f.h.Typeflag == tar.TypeSymlink && f.h.Linkname == "busybox" && strings.HasPrefix(name, "bin/"):
			links++
			continue
		case strings.HasPrefix(name, "lib") || strings.HasPrefix(name, "usr/lib"):
			if f.h.Typeflag == tar.TypeReg {
				libs = append(libs, name)
			}
			continue
		}
		kind := map[byte]string{tar.TypeDir: "dir", tar.TypeReg: "file", tar.TypeSymlink: "link"}[f.h.Typeflag]
		fmt.Fprintf(w, "  %s %s %o %d", name, kind, f.h.Mode, f.h.Uid)
		if f.h.Typeflag == tar.TypeReg && (strings.HasPrefix(name, "etc/") || strings.HasPrefix(name, "tug/") || strings.HasPrefix(name, "usr/local/bin/")) {
			fmt.Fprintf(w, " %q", f.data)
		}
		fmt.Fprintln(w)
	}
	return links, libs
}

type tarFile struct {
	h    *tar.Header
	data []byte
}

func readTar(t *testing.T, b []byte) map[string]tarFile {
	t.Helper()
	files := map[string]tarFile{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Gid != h.Uid {
			t.Errorf("%s: time %v, owner %d:%d", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		files[h.Name] = tarFile{h, data}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func unmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// A binary comes with the libraries it loads, each under directories
// created once, the usr/bin it lands in not again.
func TestBinariesWithLibs(t *testing.T) {
	if _, err := exec.LookPath("ldd"); err != nil {
		t.Skip("no ldd here")
	}
	files, err := binariesWithLibs(map[string]int64{"/bin/true": 0o755})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	libc := false
	for _, f := range files {
		seen[f.Name]++
		libc = libc || strings.HasSuffix(f.Name, "/libc.so.6") && !f.Dir && len(f.Data) > 0
	}
	if seen["usr/bin/true"] != 1 || !libc || seen["usr/bin"] != 0 || seen["usr"] != 0 {
		t.Fatalf("files %v", seen)
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s added %d times", name, n)
		}
	}
}
