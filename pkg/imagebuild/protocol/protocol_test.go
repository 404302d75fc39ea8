package protocol

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestJobHeaderThenTheArchive(t *testing.T) {
	var buf bytes.Buffer
	j := Job{BuildArgs: []string{"TOKEN=s3cret", "EMPTY=", "LINE=a\nb"}, Target: "prod"}
	if err := WriteJob(&buf, j); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), EncodeJob(j)) {
		t.Errorf("EncodeJob differs from WriteJob")
	}
	buf.WriteString("\x1f\x8barchive bytes")
	r := bufio.NewReader(&buf)
	got, err := ReadJob(r)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != Version || got.Target != "prod" || !slices.Equal(got.BuildArgs, j.BuildArgs) {
		t.Errorf("ReadJob = %+v", got)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "\x1f\x8barchive bytes" {
		t.Errorf("the archive after the header: %q", rest)
	}
}

func TestReadJobRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\x1f\x8b\x08archive", "no job header"},
		{JobPrefix + `{"version":3}` + "\n", "speaks protocol 3"},
		{JobPrefix + `{"version":0}` + "\n", "speaks protocol 0"},
		{JobPrefix + "{not json\n", "the job header"},
		{JobPrefix + strings.Repeat("x", 2<<20) + "\n", "over 1 MiB"},
		{"", "reading the job header"},
	} {
		if _, err := ReadJob(bufio.NewReader(strings.NewReader(c.in))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadJob(%.30q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestEscapes(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for l, target := range map[string]string{
		"self": ".", "a/up": "..", "a/b/deep": "../..", "toA": "a", "abs": "/etc", "loop1": "loop2", "loop2": "loop1",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(l))); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, want := range map[string]bool{
		"a/b":             false,
		"self":            false,
		"self/..":         true, // the folder's parent
		"a/up/c":          false,
		"a/up/..":         true,
		"a/b/deep/a":      false,
		"a/b/deep/../x":   true,
		"toA/../c":        false,
		"toA/b/../../..":  true,
		"abs":             true,
		"missing/../c":    false,
		"missing/../../x": true, // what could be made there later counts
		"..":              true,
		"c/../a/./b":      false,
	} {
		got, err := Escapes(root, name)
		if err != nil || got != want {
			t.Errorf("Escapes(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := Escapes(root, "loop1"); err != ErrLinkLoop {
		t.Errorf("a loop: %v", err)
	}
}
