package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one tar entry; link makes a symlink (or hard link with hard).
type entry struct {
	name, data, link string
	dir, hard        bool
	mode             int64
	size             int64 // of zeros, instead of data
}

func archive(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		switch {
		case e.dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case e.hard:
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, e.link, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		case e.size > 0:
			h.Size = e.size
		}
		if e.mode != 0 {
			h.Mode = e.mode
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.size > 0 {
			if _, err := io.CopyN(tw, zeros{}, e.size); err != nil {
				t.Fatal(err)
			}
		} else if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// sandbox is a folder with the unpack target app/ and a file beside it
// that no archive may reach.
func sandbox(t *testing.T) (top, app string) {
	t.Helper()
	top = t.TempDir()
	if err := os.WriteFile(filepath.Join(top, "secret"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	return top, filepath.Join(top, "app")
}

// untouched checks that nothing but app/ and secret is in top, and that
// secret still holds what it held.
func untouched(t *testing.T, top string) {
	t.Helper()
	ents, err := os.ReadDir(top)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "app" && e.Name() != "secret" {
			t.Errorf("the archive wrote %s outside the folder", e.Name())
		}
	}
	if b, err := os.ReadFile(filepath.Join(top, "secret")); err != nil || string(b) != "outside" {
		t.Errorf("the file outside was changed: %q %v", b, err)
	}
}

var small = limits{bytes: 1 << 20, entries: 100}

func TestUnpackRefusesArchivesThatLeaveTheFolder(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"absolute path", []entry{{name: "/etc/evil", data: "x"}}, "absolute path"},
		{"dot-dot", []entry{{name: "../evil", data: "x"}}, "goes up"},
		{"dot-dot inside a path", []entry{{name: "a/../../evil", data: "x"}}, "goes up"},
		{"absolute symlink", []entry{{name: "etc", link: "/etc"}}, "leaves the source"},
		{"relative symlink up", []entry{{name: "a/up", link: "../../secret"}}, "leaves the source"},
		{"a link through a link to the folder itself", []entry{{name: "x", link: "y/../secret"}, {name: "y", link: "."}}, "leaves the source once its links are followed"},
		{"a link through an inner link up", []entry{{name: "a/x", link: "y/../secret"}, {name: "a/y", link: ".."}}, "leaves the source once its links are followed"},
		{"write through an inner link", []entry{{name: "d", link: "sub"}, {name: "sub", dir: true}, {name: "d/f", data: "x"}}, "under the symlink d"},
		{"write through a link that leaves", []entry{{name: "d", link: ".."}, {name: "d/secret", data: "pwned"}}, "under the symlink d"},
		{"a link then a file of its name", []entry{{name: "s", link: "../secret"}, {name: "s", data: "pwned"}}, "twice"},
		{"a file twice", []entry{{name: "f", data: "1"}, {name: "f", data: "2"}}, "twice"},
		{"under a file", []entry{{name: "f", data: "1"}, {name: "f/g", data: "2"}}, "not a folder"},
		{"hard link", []entry{{name: "h", link: "../secret", hard: true}}, "hard link"},
		{"link loop", []entry{{name: "a", link: "b"}, {name: "b", link: "a"}}, "too many levels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			top, app := sandbox(t)
			_, _, err := unpack(bytes.NewReader(archive(t, c.entries...)), app, small)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("unpack = %v, want an error with %q", err, c.want)
			}
			untouched(t, top)
		})
	}
}

// A gzip of zeros stops at the byte limit (issue 22 item 8: 64 MiB of
// compressed zeros unpacked to ~64 GiB); so does a flood of entries.
func TestUnpackCapsBytesAndEntries(t *testing.T) {
	top, app := sandbox(t)
	bomb := archive(t, entry{name: "a", size: 600 << 10}, entry{name: "b", size: 600 << 10})
	if len(bomb) > 8<<10 {
		t.Fatalf("the bomb is %d bytes compressed; want a small one", len(bomb))
	}
	_, size, err := unpack(bytes.NewReader(bomb), app, small)
	if err == nil || !strings.Contains(err.Error(), "unpacks to more than 1 MiB") {
		t.Errorf("unpack = %v, want the byte limit", err)
	}
	var onDisk int64
	_ = filepath.Walk(app, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			onDisk += fi.Size()
		}
		return nil
	})
	if onDisk > small.bytes+1 || size > small.bytes+1 {
		t.Errorf("wrote %d bytes (counted %d) with a limit of %d", onDisk, size, small.bytes)
	}
	untouched(t, top)

	_, app2 := sandbox(t)
	var many []entry
	for i := range 101 {
		many = append(many, entry{name: strings.Repeat("d/", i%3) + "f" + strings.Repeat("x", i), data: ""})
	}
	if _, _, err := unpack(bytes.NewReader(archive(t, many...)), app2, small); err == nil || !strings.Contains(err.Error(), "more than 100 entries") {
		t.Errorf("unpack = %v, want the entry limit", err)
	}
}

func TestUnpackKeepsAGoodTree(t *testing.T) {
	top, app := sandbox(t)
	files, size, err := unpack(bytes.NewReader(archive(t,
		entry{name: "./", dir: true},
		entry{name: "bin/", dir: true},
		entry{name: "bin/run", data: "#!/bin/sh\n", mode: 0o4755}, // setuid dropped
		entry{name: "current", link: "releases/v2"},               // points at what comes later
		entry{name: "here", link: "."},
		entry{name: "releases/v2/index.html", data: "<h1>v2"},
		entry{name: "up-and-back", link: "releases/../bin/run"},
	)), app, small)
	if err != nil {
		t.Fatal(err)
	}
	if files != 2 || size != int64(len("#!/bin/sh\n<h1>v2")) {
		t.Errorf("files %d size %d", files, size)
	}
	if b, err := os.ReadFile(filepath.Join(app, "current", "index.html")); err != nil || string(b) != "<h1>v2" {
		t.Errorf("current/index.html: %q %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(app, "bin", "run"))
	if err != nil || fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/run: %v %v, want 0755 without setuid", fi.Mode(), err)
	}
	untouched(t, top)
}

// TestUnpackSkipsWhatABuildDoesNotRead pins the entries unpack passes
// over (a global PAX header, the folder itself, a fifo, whose name a later
// entry may then take) and what it says of an archive it cannot read.
func TestUnpackSkipsWhatABuildDoesNotRead(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeXGlobalHeader, Name: "global", PAXRecords: map[string]string{"comment": "x"}},
		{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755},
		{Typeflag: tar.TypeFifo, Name: "pipe", Mode: 0o644},
		{Typeflag: tar.TypeReg, Name: "pipe", Mode: 0o640, Size: 2},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	top, app := sandbox(t)
	files, size, err := unpack(&buf, app, small)
	if err != nil || files != 1 || size != 2 {
		t.Fatalf("unpack = %d, %d, %v; want the one file", files, size, err)
	}
	fi, err := os.Lstat(filepath.Join(app, "pipe"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
		t.Errorf("pipe: %v %v, want a 0640 file", fi, err)
	}
	ents, _ := os.ReadDir(app)
	if len(ents) != 1 {
		t.Errorf("unpacked %d entries, want 1", len(ents))
	}
	untouched(t, top)

	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"not gzip", []byte("plain text"), "reading the source: gzip: invalid header"},
		{"cut short", archive(t, entry{name: "a", data: "abc"})[:30], "reading the source: unexpected EOF"},
		{"an empty name", archive(t, entry{name: "", data: "x"}), `the source has an entry with a bad name ""`},
	} {
		_, app := sandbox(t)
		if _, _, err := unpack(bytes.NewReader(c.in), app, small); err == nil || err.Error() != c.want {
			t.Errorf("%s: unpack = %v, want %q", c.name, err, c.want)
		}
	}
}
