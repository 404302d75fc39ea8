//go:build unix

package cli

import (
	"errors"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// promptTTY is the terminal the prompt library reads keys from: a
// descriptor of its own on /dev/tty, non-blocking, read with plain system
// calls.
//
// Why not stdin: bubbletea stops its input reader with a timeout and can
// leave it behind, blocked in read(2) on stdin after the prompt has
// returned. The next keys typed then go to that dead reader instead of the
// command that asked (tug shell's session lost its second line about one
// time in ten). On a descriptor of its own that never blocks, a left-behind
// reader finds nothing and ends.
type promptTTY struct {
	fd   int
	name string
}

// openPromptTTY opens the controlling terminal, or returns nil when there
// is none (the prompt then reads stdin).
func openPromptTTY() *promptTTY {
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil
	}
	return &promptTTY{fd: fd, name: "/dev/tty"}
}

func (t *promptTTY) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(t.fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			// Nothing to read: the reader was woken for input someone else
			// took. Report nothing rather than an error; the caller waits
			// for readiness again (or, left behind, ends).
			return 0, nil
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: t.name, Err: err}
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (t *promptTTY) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		n, err := unix.Write(t.fd, b[written:])
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return written, &os.PathError{Op: "write", Path: t.name, Err: err}
		}
		written += n
	}
	return written, nil
}

func (t *promptTTY) Close() error { return unix.Close(t.fd) }
func (t *promptTTY) Fd() uintptr  { return uintptr(t.fd) }
func (t *promptTTY) Name() string { return t.name }

// forOnePrompt is the terminal for one prompt: once the prompt has
// returned, release makes every read end at once, so a reader the prompt
// left behind never takes a key, whatever woke it.
func (t *promptTTY) forOnePrompt() (in *promptInput, release func()) {
	in = &promptInput{promptTTY: t}
	return in, func() { in.done.Store(true) }
}

type promptInput struct {
	*promptTTY
	done atomic.Bool
}

func (p *promptInput) Read(b []byte) (int, error) {
	if p.done.Load() {
		return 0, io.EOF
	}
	return p.promptTTY.Read(b)
}

// Close leaves the shared descriptor open for the next prompt.
func (p *promptInput) Close() error { return nil }
