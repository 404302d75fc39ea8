// Package clitest holds helpers for tug's command tests.
package clitest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update rewrites golden files instead of comparing: go test ./... -update
var Update = flag.Bool("update", false, "rewrite golden files in testdata")

// Golden compares got with testdata/<name>.golden, or writes it with -update.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
