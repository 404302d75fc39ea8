package layer

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A root filesystem becomes a layer with its owners, modes, symlinks and
// hard links; dev, proc and sys are kept empty; the same tree gives the
// same bytes.
func TestDirTarKeepsTheTree(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"bin", "dev/pts", "etc", "proc/1"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, data string, mode os.FileMode) {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/tool", "tool", 0o755|os.ModeSetuid)
	write("etc/passwd", "root:x:0:0::/:/bin/sh\n", 0o644)
	write("dev/null-ish", "x", 0o644)
	if err := os.Link(filepath.Join(root, "bin/tool"), filepath.Join(root, "bin/tool2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tool", filepath.Join(root, "bin/sh")); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := DirTar(&a, root); err != nil {
		t.Fatal(err)
	}
	if err := DirTar(&b, root); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two runs over one tree differ")
	}
	var got []string
	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got = append(got, fmt.Sprintf("%s %c %o %q %q %d", h.Name, h.Typeflag, h.Mode, h.Linkname, data, h.ModTime.Unix()))
	}
	want := []string{
		`bin/ 5 755 "" "" 0`,
		`bin/sh 2 777 "tool" "" 0`,
		`bin/tool 0 4755 "" "tool" 0`,
		`bin/tool2 1 4755 "bin/tool" "" 0`,
		`dev/ 5 755 "" "" 0`,
		`etc/ 5 755 "" "" 0`,
		`etc/passwd 0 644 "" "root:x:0:0::/:/bin/sh\n" 0`,
		`proc/ 5 755 "" "" 0`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("layer:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// WriteLayout: the layer streamed from its file under its digest, the
// config's optional fields only when set.
func TestWriteLayoutConfig(t *testing.T) {
	dir := t.TempDir()
	lf := filepath.Join(dir, "layer.tar")
	if err := os.WriteFile(lf, []byte("not really a tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	tag := Tag{Ref: "localhost/tug/x:1", Cmd: []string{"x"}, User: "999:999", StopSignal: "SIGINT", Labels: map[string]string{"a": "b"}}
	if err := WriteLayout(out, lf, []Tag{tag}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var cfgs int
	for name, data := range files {
		if !strings.HasPrefix(name, "blobs/sha256/") || !bytes.Contains(data, []byte(`"rootfs"`)) {
			continue
		}
		cfgs++
		var cfg struct {
			Config map[string]any `json:"config"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Config["User"] != "999:999" || cfg.Config["StopSignal"] != "SIGINT" || cfg.Config["WorkingDir"] != "/" || cfg.Config["Entrypoint"] != nil {
			t.Errorf("config %v", cfg.Config)
		}
	}
	if cfgs != 1 || string(files["blobs/sha256/"+sha("not really a tar")]) != "not really a tar" {
		t.Errorf("layout: %d configs, files %v", cfgs, len(files))
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
