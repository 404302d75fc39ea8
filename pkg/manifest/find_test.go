package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

func writeManifest(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Find reads --manifest when given (it must exist), else tug.yaml of the
// folder when there is one; without one there is no manifest, and no
// error.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	if m, err := Find("", dir); err != nil || m != nil {
		t.Fatalf("a folder without tug.yaml: %v %v", m, err)
	}
	writeManifest(t, dir, "release: ./migrate\n")
	m, err := Find("", dir)
	if err != nil || m == nil || *m.Release != "./migrate" || m.Path != filepath.Join(dir, FileName) {
		t.Fatalf("the folder's tug.yaml: %+v %v", m, err)
	}
	other := filepath.Join(t.TempDir(), "prod.yaml")
	if err := os.WriteFile(other, []byte("processes:\n  web:\n    units: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err = Find(other, dir)
	if err != nil || *m.Processes["web"].Units != 3 || m.Path != other {
		t.Fatalf("--manifest: %+v %v", m, err)
	}
	if _, err := Find(other+".missing", dir); !inputerr.Is(err) || !strings.Contains(err.Error(), "--manifest") {
		t.Errorf("a --manifest not there: %v", err)
	}
	writeManifest(t, dir, "processes: [\n")
	if _, err := Find("", dir); !inputerr.Is(err) || !strings.Contains(err.Error(), FileName) {
		t.Errorf("a tug.yaml that does not parse: %v", err)
	}
}

// FindUp finds the nearest tug.yaml at or above the folder and says where
// it is relative to it.
func TestFindUp(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	writeManifest(t, root, "release: ./up\n")
	for dir, want := range map[string]string{root: "./tug.yaml", filepath.Join(root, "a"): "../tug.yaml", deep: "../../tug.yaml"} {
		m, err := FindUp(dir)
		if err != nil || m == nil || m.Path != want || *m.Release != "./up" {
			t.Errorf("from %s: %+v %v, want path %s", dir, m, err, want)
		}
	}
	writeManifest(t, deep, "")
	if m, err := FindUp(deep); err != nil || m.Path != "./tug.yaml" || m.Release != nil {
		t.Errorf("an empty tug.yaml nearer: %+v %v", m, err)
	}
}

func TestDescribe(t *testing.T) {
	var none *Manifest
	if none.Describe() != "" {
		t.Error("no manifest describes something")
	}
	empty, err := Parse("tug.yaml", nil)
	if err != nil || empty.Describe() != "read tug.yaml (empty)" {
		t.Errorf("empty: %q %v", empty.Describe(), err)
	}
	m, err := Parse("tug.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Describe(); got != "read tug.yaml: processes web, worker; jobs report; settings; release" {
		t.Errorf("describe %q", got)
	}
}
