package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// hostileRelease is a release-phase command that prints what a hostile or
// broken migration could: an OSC 52 clipboard write, an OSC 0 retitle, a
// screen clear, a cursor move, colour, C1 CSI (U+009B), NUL and BEL, and a
// carriage return that would overwrite its line.
const hostileRelease = `release: sh -c "printf '\033]52;c;aGk=\007\033]0;pwned\007\033[2J\033[5A\033[31mred\033[0m \302\2332J\000\007 migrated\rforged\n'"` + "\n"

// The release phase's output is the cluster's text on tug's stderr: piped
// or on a terminal, no escape but tug's own (the spinner's line erase)
// reaches it, and what the command printed is still there to read.
func TestClusterTextCannotEscapeToTheTerminal(t *testing.T) {
	h := New(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Procfile"), []byte("web: sample\n"+hostileRelease), 0o644); err != nil {
		t.Fatal(err)
	}
	h.mustTug("app", "create", "shop")

	// piped: colour is off, so no ESC at all may appear
	r := h.TugRun(Run{Args: []string{"app", "deploy", "shop", "--image", sampleV1}, Dir: dir})
	if r.Code != 0 {
		t.Fatalf("deploy with a hostile release phase: %s", r)
	}
	for name, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		if i := strings.IndexAny(out, "\x1b\x00\x07\r\u009b"); i >= 0 {
			t.Errorf("piped %s carries control byte %q at %d:\n%q", name, out[i], i, out)
		}
	}
	for _, want := range []string{"^[]52;c;aGk=^G^[]0;pwned^G^[[2J^[[5Ared \\u009b2J^@^G migrated\nforged\n"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("piped stderr does not show the phase's output as text %q:\n%q", want, r.Stderr)
		}
	}
	h.waitUnits("shop", "web", 1, sampleV1)

	// on a terminal: the spinner's own erase-line works, nothing else
	// raw gets through (NO_COLOR is set, so no colour either)
	cmd := exec.Command(env.tug, "app", "deploy", "shop", "--image", sampleV2)
	cmd.Env = append(h.tugEnv(nil), "TERM=xterm")
	cmd.Dir = dir
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 200})
	if err != nil {
		t.Fatalf("starting tug under a pty: %v", err)
	}
	t.Cleanup(func() { _ = tty.Close() })
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(tty) // ends with EIO once tug exits
		done <- b
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("deploy under a terminal: %v", err)
	}
	var screen string
	select {
	case b := <-done:
		screen = string(b)
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal's output did not end after tug exited")
	}
	if !strings.Contains(screen, "\r\x1b[K") {
		t.Errorf("the spinner's own line erase is missing on a terminal:\n%q", screen)
	}
	// a pty turns "\n" into "\r\n"; take those and tug's own erase out,
	// and no control byte but newline may remain
	rest := strings.ReplaceAll(strings.ReplaceAll(screen, "\r\x1b[K", ""), "\r\n", "\n")
	if i := strings.IndexAny(rest, "\x1b\x00\x07\r\u009b"); i >= 0 {
		t.Errorf("the terminal got control byte %q at %d that is not tug's own:\n%q", rest[i], i, screen)
	}
	if !strings.Contains(rest, "^[]52;c;aGk=^G") || !strings.Contains(rest, "^[[2J") {
		t.Errorf("the terminal does not show the phase's escapes as text:\n%q", screen)
	}
	h.waitUnits("shop", "web", 1, sampleV2)
}

// A build's live log is the cluster's text too: a Dockerfile step that
// prints escapes shows them as text on tug's stderr.
func TestBuildLogCannotEscapeToTheTerminal(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"Dockerfile": fmt.Sprintf(`FROM %s/tug/busybox:v1
RUN printf 'step\033]52;c;aGk=\007\033]0;pwned\007\033[2J\033[5A\302\2332J\000\007 built\n'
CMD httpd -f -p ${PORT:-8080} -h /
`, reg),
	})
	h.mustTug("app", "create", "hostile")
	r := h.TugRun(Run{Args: []string{"app", "deploy", "hostile", "--timeout", "3m", "--repository", reg + "/e2e/" + h.NS + "/hostile"},
		Dir: src, Env: dockerfileEnv(reg)})
	if r.Code != 0 {
		t.Fatalf("Dockerfile deploy: %s", r)
	}
	for name, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		if i := strings.IndexAny(out, "\x1b\x00\x07\u009b"); i >= 0 {
			t.Errorf("piped %s carries control byte %q at %d:\n%q", name, out[i], i, out)
		}
	}
	if !strings.Contains(r.Stderr, "step^[]52;c;aGk=^G^[]0;pwned^G^[[2J^[[5A\\u009b2J^@^G built") {
		t.Errorf("stderr does not show the step's output as text:\n%q", r.Stderr)
	}
}
