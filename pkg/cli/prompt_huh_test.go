//go:build linux && !race

// Not under -race: bubbletea v2.0.2's input reader (muesli/cancelreader)
// reads the terminal's fd while shutdown closes it, which the race detector
// reports inside those libraries.

package cli

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// waitRawMode returns when the terminal stops being line-buffered (ICANON
// cleared), which huh does when its form starts.
func waitRawMode[T any](t *testing.T, tty *os.File, done <-chan T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if tio.Lflag&unix.ICANON == 0 {
			return
		}
		if len(done) > 0 {
			t.Fatal("prompt returned before reading any key")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the prompt never put the terminal in raw mode")
}

// TestHuhPrompterOnARealTerminal drives the huh prompts through a
// pseudo-terminal, as a person at a keyboard would.
func TestHuhPrompterOnARealTerminal(t *testing.T) {
	cases := []struct {
		name  string
		keys  string
		ask   func(context.Context, Prompter) (any, error)
		want  any
		isErr error
	}{
		{"confirm yes", "y", func(ctx context.Context, p Prompter) (any, error) { return p.Confirm(ctx, "Remove?", false) }, true, nil},
		{"confirm no", "n", func(ctx context.Context, p Prompter) (any, error) { return p.Confirm(ctx, "Remove?", true) }, false, nil},
		{"select second", "\x1b[B\r", func(ctx context.Context, p Prompter) (any, error) {
			return p.Select(ctx, "Which unit?", []string{"web-1", "web-2"}, "web-1")
		}, "web-2", nil},
		{"input", "shop\r", func(ctx context.Context, p Prompter) (any, error) { return p.Input(ctx, "App name?", "") }, "shop", nil},
		{"ctrl-c", "\x03", func(ctx context.Context, p Prompter) (any, error) { return p.Confirm(ctx, "Remove?", false) }, false, ErrInterrupted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo-terminal: %v", err)
			}
			defer ptmx.Close()
			defer tty.Close()
			go func() { _, _ = io.Copy(io.Discard, ptmx) }() // a full pty buffer would block huh

			ios := &IOStreams{In: tty, Out: tty, ErrOut: io.Discard, stdinTTY: true, stdoutTTY: true, width: 80}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			type answer struct {
				v   any
				err error
			}
			done := make(chan answer, 1)
			go func() {
				v, err := c.ask(ctx, newHuhPrompter(ios))
				done <- answer{v, err}
			}()
			// Type once the program has put the terminal in raw mode; until
			// then the line discipline would hold the keys back.
			waitRawMode(t, tty, done)
			if _, err := ptmx.Write([]byte(c.keys)); err != nil {
				t.Fatal(err)
			}
			select {
			case a := <-done:
				if c.isErr != nil {
					if a.err != c.isErr {
						t.Errorf("error %v, want %v", a.err, c.isErr)
					}
					return
				}
				if a.err != nil || a.v != c.want {
					t.Errorf("got %v, %v; want %v", a.v, a.err, c.want)
				}
			case <-ctx.Done():
				t.Fatal("prompt did not return")
			}
		})
	}
}
