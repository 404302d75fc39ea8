package session

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/progress"
)

// IO is the user's terminal as remote commands see it; *cli.IOStreams
// satisfies it. A session gets a TTY only when Stdin is an *os.File on a
// terminal; the size of the terminal is read from Stdout when it is one
// (else from Stdin).
type IO interface {
	Stdin() io.Reader
	Stdout() io.Writer
	Stderr() io.Writer
	// IsStdinTTY reports whether stdin is a terminal.
	IsStdinTTY() bool
	// CanPrompt reports whether a person can answer a question.
	CanPrompt() bool
	// ColorEnabled and ErrColorEnabled report whether stdout and stderr
	// may carry ANSI colour.
	ColorEnabled() bool
	ErrColorEnabled() bool
	// TermType is the terminal's type ($TERM), which a remote shell with a
	// TTY is given.
	TermType() string
}

// Prompter asks the user to pick one of several units; cli.Prompter
// satisfies it.
type Prompter interface {
	// Select returns one of options.
	Select(ctx context.Context, question string, options []string, defaultOption string) (string, error)
}

// Deps are what remote commands need from the outside world.
type Deps struct {
	Client    kubernetes.Interface
	Namespace string
	Executor  Executor
	IO        IO
	Prompter  Prompter
	Progress  progress.Reporter
	// User says who runs the command, as the API server knows them; audit
	// events name them. It is a function so that asking the server can
	// overlap with the session's start (audit events are recorded in the
	// background).
	User func() string
	// CommandName is "tug", or "kubectl tug" in plugin mode, for hints.
	CommandName string
}

func (d Deps) finder() *unitFinder {
	name := d.CommandName
	if name == "" {
		name = "tug"
	}
	return &unitFinder{client: d.Client, namespace: d.Namespace, commandName: name}
}

func (d Deps) user() string {
	if d.User == nil {
		return "unknown"
	}
	return d.User()
}

func (d Deps) progress() progress.Reporter {
	if d.Progress == nil {
		return progress.Nop{}
	}
	return d.Progress
}

// withTerminal runs one session on the user's terminal. With wantTTY and a
// terminal on stdin, the session gets a TTY: raw mode, the terminal's size
// and its changes, no separate stderr; the terminal is restored before
// withTerminal returns, whatever happens. stdin says whether the session
// reads the user's input at all.
func withTerminal(ctx context.Context, d Deps, wantTTY, stdin, nudge bool, session func(Streams) error) error {
	s := Streams{Stdout: d.IO.Stdout(), Stderr: d.IO.Stderr()}
	if stdin || wantTTY {
		s.Stdin = d.IO.Stdin()
	}
	fd, tty := ttyMode(d.IO, wantTTY)
	if !tty {
		return session(s)
	}
	t, err := startTTY(ctx, d.IO, fd, nudge)
	if err != nil {
		return err
	}
	defer t.Restore()
	s.TTY, s.Sizes, s.Stderr = true, t.Sizes, nil
	return session(s)
}

// warnf writes a warning line to stderr.
func warnf(w io.Writer, format string, a ...any) {
	fmt.Fprintf(w, "warning: "+format+"\n", a...)
}

// countingWriter notes whether anything was written through it.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
