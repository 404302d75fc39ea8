package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChangesGoThroughTheTransaction keeps deploy.Txn the one way to change
// an app (docs/design.md): outside pkg/deploy and pkg/lock no package (nor
// cmd) takes an app's lock with lock.Acquire, and outside pkg/deploy and
// pkg/app (the store itself) none writes the app record with
// Store.UpdateApp; they use deploy.Begin (or deploy.Hold, the lock without
// the record, for a change that writes none) and Txn.Update, which read
// the record afresh under the lock and stop writing once it is lost.
func TestChangesGoThroughTheTransaction(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, dir := range []string{"pkg", "cmd"} {
		checkTransactionRule(t, root, dir)
	}
}

func checkTransactionRule(t *testing.T, root, dir string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		for _, call := range []struct{ text, allowedUnder string }{
			{"lock.Acquire(", "pkg/deploy/ pkg/lock/"},
			{".UpdateApp(", "pkg/deploy/ pkg/app/"},
		} {
			if !strings.Contains(src, call.text) {
				continue
			}
			allowed := false
			for _, dir := range strings.Fields(call.allowedUnder) {
				allowed = allowed || strings.HasPrefix(rel, dir)
			}
			if !allowed {
				t.Errorf("%s calls %s: change an app through deploy.Begin (or deploy.Hold) and Txn.Update, which read its record under the lock", rel, call.text)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
