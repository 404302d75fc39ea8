package app

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

// endless is a stream that never ends, like /dev/zero or `yes`.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	e.read += int64(len(p))
	return len(p), nil
}

// TestEnvInputIsBounded (issue 12 item 7): every way `env set` reads input
// stops at MaxConfigBytes and says which key or flag was too large, as an
// input error.
func TestEnvInputIsBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), 1100*1024), 0o600); err != nil {
		t.Fatal(err)
	}
	half := strings.Repeat("b", 600*1024)
	for _, c := range []struct {
		name     string
		args     []string
		fromFile string
		want     string
	}{
		{"file value", []string{"K=@" + big}, "", "K=@" + big + ": larger than the 1 MiB limit"},
		{"stdin value", []string{"K=@-"}, "", "K=@-: larger than the 1 MiB limit"},
		{"env file", nil, big, "--from-env-file " + big + ": larger than the 1 MiB limit"},
		{"env file on stdin", nil, "-", "--from-env-file -: larger than the 1 MiB limit"},
		{"values together", []string{"A=" + half, "B=" + half}, "", "the config to set is 1228802 bytes; the limit is 1 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := &endless{}
			_, err := ParseEnvArgs(c.args, c.fromFile, in)
			if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a usage error with %q", err, c.want)
			}
			if in.read > MaxConfigBytes+64*1024 {
				t.Errorf("read %d bytes of stdin for a limit of %d", in.read, MaxConfigBytes)
			}
		})
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := ParseEnvArgs([]string{"K=@/dev/zero"}, "", nil)
		if !inputerr.Is(err) || !strings.Contains(err.Error(), "K=@/dev/zero: larger than the 1 MiB limit") {
			t.Errorf("K=@/dev/zero: %v", err)
		}
	}
	// exactly the limit is fine
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, bytes.Repeat([]byte("c"), MaxConfigBytes-1), 0o600); err != nil {
		t.Fatal(err)
	}
	if set, err := ParseEnvArgs([]string{"K=@" + ok}, "", nil); err != nil || len(set["K"]) != MaxConfigBytes-1 {
		t.Errorf("a value just under the limit: %d bytes, %v", len(set["K"]), err)
	}
}

func TestReadLimited(t *testing.T) {
	b, err := ReadLimited(strings.NewReader("12345"), "x", 5)
	if err != nil || string(b) != "12345" {
		t.Errorf("at the limit: %q, %v", b, err)
	}
	if _, err := ReadLimited(strings.NewReader("123456"), "--flag f", 5); !inputerr.Is(err) || err.Error() != "--flag f: larger than the 5 B limit" {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadLimited(io.MultiReader(strings.NewReader("a"), iotestErr{}), "x", 5); !inputerr.Is(err) {
		t.Errorf("a read error: %v, want a usage error", err)
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, os.ErrPermission }

// TestProcfileLimits (issue 12 item 7, 8): a long line gives its number and
// the limit; a huge Procfile is refused while reading.
func TestProcfileLimits(t *testing.T) {
	long := "web: ok\nworker: " + strings.Repeat("x", 70*1024) + "\n"
	_, err := ParseProcfile(strings.NewReader(long))
	if err == nil || err.Error() != "line 2 is longer than 64 KiB, the limit for one line" {
		t.Errorf("long line: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "Procfile")
	if err := os.WriteFile(file, bytes.Repeat([]byte("# comment\n"), 30*1024), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = ProcessSource{Procfile: file}.Resolve()
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "--procfile "+file+": larger than the 256 KiB limit") {
		t.Errorf("huge Procfile: %v", err)
	}
	if err := os.WriteFile(file, []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = ProcessSource{Procfile: file}.Resolve()
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "line 2 is longer than 64 KiB") {
		t.Errorf("long line through Resolve: %v", err)
	}
	// env files take lines up to the whole config limit
	if _, err := ParseEnvFile(strings.NewReader("A=" + strings.Repeat("v", 100*1024) + "\n")); err != nil {
		t.Errorf("a 100 KiB env line: %v", err)
	}
	if _, err := ParseEnvFile(strings.NewReader("A=1\nB=" + strings.Repeat("v", MaxConfigBytes))); err == nil || !strings.Contains(err.Error(), "line 2 is longer than 1 MiB") {
		t.Errorf("an env line over the limit: %v", err)
	}
}
