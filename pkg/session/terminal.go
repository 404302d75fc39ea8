package session

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"

	"golang.org/x/term"
	"k8s.io/client-go/tools/remotecommand"
)

// localTTY is the user's terminal while a session with a TTY runs: raw
// mode, so every key (Ctrl-C included) goes to the remote side, and the
// terminal's size followed through a SizeQueue.
type localTTY struct {
	fd    int
	state *term.State
	Sizes *SizeQueue
	once  sync.Once
	stop  func() bool // unregisters the restore-on-cancel hook
}

// ttyMode decides whether a session gets a TTY: it must be asked for and
// stdin must be a terminal. When it is asked for but stdin is not a
// terminal, the session runs without one after a warning, as kubectl does.
func ttyMode(ios IO, want bool) (fd int, ok bool) {
	if !want {
		return -1, false
	}
	if f, isFile := ios.Stdin().(*os.File); isFile && ios.IsStdinTTY() && term.IsTerminal(int(f.Fd())) {
		return int(f.Fd()), true
	}
	fmt.Fprintln(ios.Stderr(), "warning: standard input is not a terminal; running without a TTY")
	return -1, false
}

// startTTY puts the terminal on fd in raw mode and starts following its
// size. The terminal is restored by Restore, which every path out calls,
// and also as soon as ctx ends (Ctrl-C from outside, SIGTERM, SIGHUP), even
// if the session never returns. nudge primes the size queue with a size one
// larger first, so a program attached to an existing TTY redraws its screen
// (an attached shell's prompt was printed before we arrived).
func startTTY(ctx context.Context, ios IO, fd int, nudge bool) (*localTTY, error) {
	state, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("setting the terminal to raw mode: %w", err)
	}
	t := &localTTY{fd: fd, state: state}
	sizeFd := fd
	if f, ok := ios.Stdout().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		sizeFd = int(f.Fd())
	}
	size := func() (remotecommand.TerminalSize, bool) {
		w, h, err := term.GetSize(sizeFd)
		if err != nil || w <= 0 || h <= 0 {
			return remotecommand.TerminalSize{}, false
		}
		return remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}, true
	}
	t.Sizes = NewSizeQueue()
	cur, ok := size()
	if ok {
		if nudge {
			t.Sizes.Push(remotecommand.TerminalSize{Width: cur.Width + 1, Height: cur.Height + 1})
		}
		t.Sizes.Push(cur)
	}
	go t.Sizes.follow(resizeEvents(t.Sizes.Done()), size, cur)
	t.stop = context.AfterFunc(ctx, t.Restore)
	return t, nil
}

// Restore ends raw mode and stops following the size; it is idempotent.
func (t *localTTY) Restore() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		t.Sizes.Stop()
		_ = term.Restore(t.fd, t.state)
		if t.stop != nil {
			t.stop()
		}
	})
}

// withHangup returns a context that also ends on SIGHUP and SIGQUIT, so a
// closed terminal or ssh connection still restores the terminal and deletes
// a run pod. main already turns SIGINT and SIGTERM into a cancelled context.
func withHangup(ctx context.Context) (context.Context, context.CancelFunc) {
	if len(hangupSignals) == 0 {
		return context.WithCancel(ctx)
	}
	return signal.NotifyContext(ctx, hangupSignals...)
}
