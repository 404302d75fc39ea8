package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// In an app's folder (or below it), a command needs no app name: tug.yaml
// gives it, and stderr says so; a name given is used as given; a folder
// without tug.yaml still needs one.
func TestAppFromTugYAML(t *testing.T) {
	p := shopFixture(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tug.yaml"), []byte("app: shop\nnamespace: dev\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "src", "lib")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	r := p.run(t, false, "app", "info", "-o", "json")
	if r.code != 0 || r.stderr != "app shop in namespace dev from ../../tug.yaml\n" || !strings.Contains(r.stdout, `"name": "shop"`) {
		t.Fatalf("app info in the app's folder: exit %d, stderr %q, stdout %q", r.code, r.stderr, r.stdout)
	}
	// the first argument is not an app: the file's app goes before it
	if r := p.run(t, false, "env", "get", "DATABASE_URL"); r.code != 0 || !strings.Contains(r.stdout, "DATABASE_URL") {
		t.Errorf("env get KEY: exit %d, stderr %q", r.code, r.stderr)
	}
	// a name given wins, and nothing is said
	if r := p.run(t, false, "app", "info", "nope"); r.code != 1 || strings.Contains(r.stderr, "tug.yaml") {
		t.Errorf("app info nope: exit %d, stderr %q", r.code, r.stderr)
	}
	// a command that deletes needs the app typed, --yes or not
	if r := p.run(t, false, "app", "remove", "--yes"); r.code != 2 || !strings.Contains(r.stderr, "missing APP") {
		t.Errorf("app remove --yes in the app's folder: exit %d, stderr %q; want the app asked for", r.code, r.stderr)
	}
	// a deploy of another app than the folder's tug.yaml names is refused
	// before anything is made
	if r := p.run(t, false, "app", "deploy", "other", "--image", "x:1", "--manifest", filepath.Join(dir, "tug.yaml")); r.code != 2 || !strings.Contains(r.stderr, "is app shop's") {
		t.Errorf("deploy of another app with shop's tug.yaml: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Chdir(t.TempDir())
	if r := p.run(t, false, "app", "info"); r.code != 2 || !strings.Contains(r.stderr, "missing APP") {
		t.Errorf("app info without tug.yaml: exit %d, stderr %q", r.code, r.stderr)
	}
}
