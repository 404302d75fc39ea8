package main

import (
	"os"
	"path/filepath"
	"regexp"
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
		for _, v := range txnViolations(rel, string(b)) {
			t.Error(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// txnRules are the calls that change an app outside a transaction, each
// with the directories that may make it: taking the lock, writing the
// record through the store, writing a ConfigMap (the record is one)
// around the store.
var txnRules = []struct {
	call         *regexp.Regexp
	allowedUnder string
}{
	{regexp.MustCompile(`lock\.Acquire\(`), "pkg/deploy/ pkg/lock/"},
	{regexp.MustCompile(`\.UpdateApp\(`), "pkg/deploy/ pkg/app/"},
	{regexp.MustCompile(`ConfigMaps\([^)]*\)\.(Update|Patch|Apply)\(`), "pkg/app/"},
}

// txnViolations is what file rel (its source src) breaks of txnRules.
func txnViolations(rel, src string) []string {
	var out []string
	for _, r := range txnRules {
		call := r.call.FindString(src)
		if call == "" {
			continue
		}
		allowed := false
		for _, dir := range strings.Fields(r.allowedUnder) {
			allowed = allowed || strings.HasPrefix(rel, dir)
		}
		if !allowed {
			out = append(out, rel+" calls "+call+": change an app through deploy.Begin (or deploy.Hold) and Txn.Update, which read its record under the lock")
		}
	}
	return out
}

// The scanner finds each kind of violation, and allows each call where it
// belongs: a rule that matched nothing would pass every tree.
func TestTxnScannerFindsViolations(t *testing.T) {
	for _, c := range []struct {
		rel, src string
		want     bool
	}{
		{"pkg/traffic/x.go", "_, err := s.UpdateApp(ctx, name, f)", true},
		{"cmd/tug/x.go", "h, err := lock.Acquire(ctx, req)", true},
		{"pkg/move/x.go", "c.CoreV1().ConfigMaps(ns).Update(ctx, cm, opts)", true},
		{"pkg/move/x.go", "c.CoreV1().ConfigMaps(ns).Patch(ctx, n, pt, b, opts)", true},
		{"pkg/deploy/x.go", "_, err := s.UpdateApp(ctx, name, f)", false},
		{"pkg/lock/x.go", "lock.Acquire(ctx, req)", false},
		{"pkg/app/store.go", "s.Client.CoreV1().ConfigMaps(s.Namespace).Update(ctx, cm, o)", false},
		{"pkg/move/x.go", "t.Update(func(a *app.App) error { return nil })", false},
	} {
		if got := len(txnViolations(c.rel, c.src)) > 0; got != c.want {
			t.Errorf("txnViolations(%s, %q) found %v, want %v", c.rel, c.src, got, c.want)
		}
	}
}
