package cli

import (
	"errors"
	"fmt"
)

// Exit codes, documented in docs/exit-codes.md. main maps errors to them in
// one place; nothing else calls os.Exit.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130 // 128 + SIGINT, what shells report for Ctrl-C
)

// UsageError means the command line was wrong: nothing was attempted, and
// the user can fix it by changing what they typed. It exits 2.
type UsageError struct {
	Err error
	// Suggestions are printed as "did you mean ...?" under the error.
	Suggestions []string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UsageErrorf builds a UsageError from a format string.
func UsageErrorf(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// IsUsageError reports whether err is, or wraps, a UsageError.
func IsUsageError(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// ExitError carries the exit code of a remote command (run, shell, exec) that
// has already printed its own output; tug exits with the same code and adds
// nothing.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("command exited with code %d", e.Code) }

// ErrNoPrompt is wrapped by errors returned when an answer is needed but
// nobody can type it (stdin or stdout is not a terminal). It is a usage
// error: the fix is to pass the flag that supplies the answer.
var ErrNoPrompt = errors.New("cannot prompt: not a terminal")

// NoPromptError says which flag supplies the answer a prompt would have
// asked for, e.g. NoPromptError("refusing to remove without confirmation",
// "--yes"). The result is a UsageError and matches errors.Is(err, ErrNoPrompt).
func NoPromptError(what, flag string) error {
	return &UsageError{Err: &noPromptError{what: what, flag: flag}}
}

type noPromptError struct{ what, flag string }

func (e *noPromptError) Error() string        { return e.what + ": pass " + e.flag }
func (e *noPromptError) Is(target error) bool { return target == ErrNoPrompt }

// ErrCancelled is returned when the user declines a confirmation; it exits 1
// with a short message and nothing changed.
var ErrCancelled = errors.New("cancelled; nothing was changed")
