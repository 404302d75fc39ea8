package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/inputerr"
)

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, src *Source) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(src.Data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeDir {
			out = append(out, h.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestPackLeavesOutGitAndIgnored(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "Procfile", "web: x")
	write(t, dir, ".git/HEAD", "ref")
	write(t, dir, "public/index.html", "old")
	write(t, dir, "logs/a.log", "x")
	write(t, dir, "src/keep.log", "x")
	write(t, dir, "src/deep/b.tmp", "x")
	write(t, dir, ".tugignore", "# build output\npublic/\n**/*.tmp\nlogs\n*.log\n!src/keep.log\n")
	write(t, dir, ".dockerignore", "Procfile\n") // .tugignore wins
	src, err := Pack(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(names(t, src), " ")
	if want := ".dockerignore .tugignore Procfile src/keep.log"; got != want {
		t.Errorf("packed %q, want %q", got, want)
	}
	if src.Ignore != ".tugignore" || src.Files != 4 {
		t.Errorf("Ignore %q Files %d", src.Ignore, src.Files)
	}
}

func TestPackUsesDockerignoreWithoutTugignore(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "a")
	write(t, dir, "node_modules/x/y.js", "y")
	write(t, dir, ".dockerignore", "node_modules\n")
	src, err := Pack(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, src), " "); got != ".dockerignore a.txt" {
		t.Errorf("packed %q", got)
	}
}

func TestPackRefusesSymlinkLeavingTheFolder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a/b.txt", "b")
	if err := os.Symlink("../a/b.txt", filepath.Join(dir, "a", "inside")); err != nil {
		t.Fatal(err)
	}
	if _, err := Pack(dir, 0); err != nil {
		t.Fatalf("a symlink inside the folder: %v", err)
	}
	if err := os.Symlink("../../etc", filepath.Join(dir, "a", "out")); err != nil {
		t.Fatal(err)
	}
	_, err := Pack(dir, 0)
	if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("want a usage error naming the symlink, got %v", err)
	}
}

func TestPackRefusesOverLimitAndUnreadable(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 256<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32()) // does not compress
	}
	write(t, dir, "big.bin", string(big))
	_, err := Pack(dir, 64<<10)
	if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("want a usage error about the limit, got %v", err)
	}
	if os.Getuid() == 0 {
		return // root reads everything
	}
	write(t, dir, "secret", "x")
	if err := os.Chmod(filepath.Join(dir, "secret"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Pack(dir, 0); err == nil || !inputerr.Is(err) {
		t.Fatalf("want a usage error for an unreadable file, got %v", err)
	}
}

func TestPackRefusesAMissingFolder(t *testing.T) {
	if _, err := Pack(filepath.Join(t.TempDir(), "nope"), 0); err == nil || !inputerr.Is(err) {
		t.Fatalf("got %v", err)
	}
}

// TestPackResolvesLinksForReal (issue 22 item 8): x's target reads as
// inside the folder, but y is the folder itself, so y/.. is its parent.
func TestPackResolvesLinksForReal(t *testing.T) {
	for _, c := range []struct {
		name  string
		links [][2]string // name, target
		out   bool
	}{
		{"through a link to the folder", [][2]string{{"y", "."}, {"x", "y/../secret"}}, true},
		{"through an inner link up", [][2]string{{"a/y", ".."}, {"a/x", "y/../secret"}}, true},
		{"through a link to a subfolder", [][2]string{{"s", "a"}, {"x", "s/../b.txt"}}, false},
		{"a link to the folder itself", [][2]string{{"here", "."}}, false},
		{"absolute", [][2]string{{"abs", "/etc/passwd"}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "a/b.txt", "b")
			write(t, dir, "b.txt", "b")
			for _, l := range c.links {
				if err := os.Symlink(l[1], filepath.Join(dir, filepath.FromSlash(l[0]))); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Pack(dir, 0)
			if c.out && (err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "outside")) {
				t.Fatalf("want a usage error naming the link, got %v", err)
			}
			if !c.out && err != nil {
				t.Fatalf("a link that stays inside: %v", err)
			}
		})
	}
}

// TestPackRefusesWhatTheAgentWouldNotUnpack: over the agent's unpacked
// limit (a sparse file: nothing on disk, nothing read) or its entry limit.
func TestPackRefusesWhatTheAgentWouldNotUnpack(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "zeros.img"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(protocol.MaxUnpackedBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Pack(dir, 0)
	if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "over the 512 MiB limit unpacked") {
		t.Fatalf("want a usage error about the unpacked limit, got %v", err)
	}
	at := t.TempDir()
	write(t, at, "a", strings.Repeat("a", 600))
	write(t, at, "b", strings.Repeat("b", 400))
	if _, err := pack(at, Limits{Unpacked: 1000, Entries: 2}); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	if _, err := pack(at, Limits{Unpacked: 999, Entries: 2}); err == nil || !strings.Contains(err.Error(), "limit unpacked") {
		t.Fatalf("one byte over: %v", err)
	}

	many := t.TempDir()
	for i := range 11 {
		write(t, many, fmt.Sprintf("f%d", i), "")
	}
	if _, err := pack(many, Limits{Unpacked: 1 << 20, Entries: 10}); err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "more than 10 files") {
		t.Fatalf("want a usage error about the entry limit, got %v", err)
	}
}

// TestPackWritesWhatTheAgentUnpacks pins each entry of the archive: names
// relative to the folder in order (folders with a trailing slash),
// permission bits kept, owners cleared, links as symlinks with their
// target as written, contents whole; sockets left out; and the counts.
func TestPackWritesWhatTheAgentUnpacks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "bin/run", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(dir, "bin", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "index.html", "<h1>hi")
	if err := os.Symlink("bin/run", filepath.Join(dir, "start")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	// a socket: nothing a build reads (its path must stay short)
	sock, err := os.MkdirTemp("", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sock)
	write(t, sock, "index.html", "x")
	if l, err := net.Listen("unix", filepath.Join(sock, "sock")); err == nil {
		defer l.Close()
	} else {
		t.Fatal(err)
	}

	for _, c := range []struct {
		dir, want string
		files     int
		size      int64
	}{
		{dir, "bin/ dir 755 | bin/run reg 755 #!/bin/sh\n | empty/ dir 750 | index.html reg 644 <h1>hi | start symlink 777 -> bin/run", 2, 16},
		{sock, "index.html reg 644 x", 1, 1},
	} {
		src, err := Pack(c.dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(src.Data))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		var got []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
				t.Errorf("%s: owner %d:%d %q:%q, want root with no names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
			}
			data, _ := io.ReadAll(tr)
			kind := map[byte]string{tar.TypeDir: "dir", tar.TypeReg: "reg", tar.TypeSymlink: "symlink"}[h.Typeflag]
			e := fmt.Sprintf("%s %s %o", h.Name, kind, h.Mode&0o7777)
			if len(data) > 0 {
				e += " " + string(data)
			}
			if h.Linkname != "" {
				e += " -> " + h.Linkname
			}
			got = append(got, e)
		}
		if g := strings.Join(got, " | "); g != c.want {
			t.Errorf("entries\n%q\nwant\n%q", g, c.want)
		}
		if src.Files != c.files || src.Size != c.size || src.Dir != c.dir || src.Ignore != "" {
			t.Errorf("Source %+v", *src)
		}
	}
}

// TestPackRefusesWhatIsNotASourceFolder pins the messages of a file
// given as the folder and of a bad ignore pattern.
func TestPackRefusesWhatIsNotASourceFolder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "f", "x")
	f := filepath.Join(dir, "f")
	if _, err := Pack(f, 0); err == nil || !inputerr.Is(err) || err.Error() != "--source "+f+" is not a folder" {
		t.Errorf("a file: %v", err)
	}
	write(t, dir, ".tugignore", "a[\n")
	if _, err := Pack(dir, 0); err == nil || !inputerr.Is(err) || err.Error() != `.tugignore: bad pattern "a[": syntax error in pattern` {
		t.Errorf("a bad pattern: %v", err)
	}
}
