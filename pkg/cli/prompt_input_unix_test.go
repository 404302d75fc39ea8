//go:build unix

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// A prompt must leave no reader behind on stdin: what the user types after
// it belongs to the command that asked (tug shell's session). The test runs
// itself under a pseudo-terminal: the child asks, then echoes every read
// from stdin; the parent answers and types lines, each of which must come
// back.
func TestPromptLeavesNoReaderBehind(t *testing.T) {
	if os.Getenv("TUG_PROMPT_CHILD") == "1" {
		promptChild()
		return
	}
	if testing.Short() {
		t.Skip("runs a child under a pty")
	}
	for round := 0; round < 8; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPromptLeavesNoReaderBehind$")
		cmd.Env = append(os.Environ(), "TUG_PROMPT_CHILD=1", "TERM=xterm", "NO_COLOR=1")
		tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
		if err != nil {
			t.Fatal(err)
		}
		out := &ptyOutput{}
		go out.copy(tty)
		out.waitFor(t, "Pick one")
		fmt.Fprint(tty, "\r")
		out.waitFor(t, "READY")
		for i := 1; i <= 4; i++ {
			fmt.Fprintf(tty, "line%d\r", i)
			out.waitFor(t, fmt.Sprintf("GOT line%d", i))
		}
		_ = cmd.Wait()
		_ = tty.Close()
	}
}

func promptChild() {
	ios := System()
	p := newHuhPrompter(ios)
	if _, err := p.Select(context.Background(), "Pick one", []string{"a", "b"}, "a"); err != nil {
		fmt.Printf("ERROR %v\r\n", err)
		os.Exit(1)
	}
	fmt.Print("READY\r\n")
	buf := make([]byte, 256)
	for i := 0; i < 4; i++ {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			os.Exit(1)
		}
		fmt.Printf("GOT %s\r\n", bytes.TrimSpace(buf[:n]))
	}
	os.Exit(0)
}

type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *ptyOutput) copy(f *os.File) {
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		o.mu.Lock()
		o.buf.Write(b[:n])
		o.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (o *ptyOutput) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		o.mu.Lock()
		found := bytes.Contains(o.buf.Bytes(), []byte(s))
		o.mu.Unlock()
		if found {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t.Fatalf("no %q within 10s (a keystroke was lost?); output:\n%q", s, o.buf.String())
}
