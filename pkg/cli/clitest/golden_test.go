package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Golden reports instead of
// failing the test that uses it.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) { r.fatals = append(r.fatals, fmt.Sprint(args...)) }

// With -update Golden writes the file (and its folder); without, it
// passes on the same bytes, and fails on others or on a missing file,
// saying how to refresh it.
func TestGolden(t *testing.T) {
	t.Chdir(t.TempDir())
	defer func(u bool) { *Update = u }(*Update)

	missing := &recorder{TB: t}
	*Update = false
	Golden(missing, "sub/table", []byte("a\tb\n"))
	if len(missing.fatals) == 0 || !strings.Contains(missing.fatals[0], "run go test -update to create it") {
		t.Errorf("a missing golden file: %q; want a fatal error saying how to create it", missing.fatals)
	}

	*Update = true
	written := &recorder{TB: t}
	Golden(written, "sub/table", []byte("a\tb\n"))
	if b, err := os.ReadFile(filepath.Join("testdata", "sub", "table.golden")); err != nil || string(b) != "a\tb\n" || len(written.errors)+len(written.fatals) > 0 {
		t.Fatalf("-update wrote %q (%v), reported %q %q", b, err, written.errors, written.fatals)
	}

	*Update = false
	same := &recorder{TB: t}
	Golden(same, "sub/table", []byte("a\tb\n"))
	if len(same.errors)+len(same.fatals) > 0 {
		t.Errorf("the same output: %q %q; want no failure", same.errors, same.fatals)
	}
	other := &recorder{TB: t}
	Golden(other, "sub/table", []byte("a\tc\n"))
	if len(other.errors) != 1 || !strings.Contains(other.errors[0], "--- got ---\na\tc\n\n--- want ---\na\tb\n") {
		t.Errorf("other output: %q; want one error showing got and want", other.errors)
	}
}
