package main

import (
	"os"
	"path/filepath"
	"testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cli/clitest"
	"tug.dev/tug/pkg/cli/docgen"
)

const docsDir = "../../docs"

// TestGeneratedDocsUpToDate fails when docs/reference, docs/man or
// docs/rbac no longer match the command tree and the permission table.
// Regenerate with make docs (go run ./hack/gendocs docs), or go test ./cmd/tug -run GeneratedDocs -update).
func TestGeneratedDocsUpToDate(t *testing.T) {
	isolate(t)
	ios, _, _, _ := cli.TestIOStreams()
	root := newRootCmd(cli.NewFactory(ios, "tug"))
	if *clitest.Update {
		if err := docgen.Generate(root, docsDir); err != nil {
			t.Fatal(err)
		}
		return
	}
	fresh := t.TempDir()
	if err := docgen.Generate(root, fresh); err != nil {
		t.Fatal(err)
	}
	for _, sub := range docgen.Dirs {
		want := readTree(t, filepath.Join(fresh, sub))
		got := readTree(t, filepath.Join(docsDir, sub))
		for name, content := range want {
			if old, ok := got[name]; !ok {
				t.Errorf("docs/%s/%s is missing; run make docs (go run ./hack/gendocs docs)", sub, name)
			} else if old != content {
				t.Errorf("docs/%s/%s is stale; run make docs (go run ./hack/gendocs docs)", sub, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("docs/%s/%s is no longer generated; run make docs (go run ./hack/gendocs docs)", sub, name)
			}
		}
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}
