package cli

import (
	"errors"
	"regexp"
	"strings"

	"tug.dev/tug/pkg/inputerr"
)

// Exit codes, documented in docs/exit-codes.md. main maps errors to them in
// one place; nothing else calls os.Exit.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130 // 128 + SIGINT, what shells report for Ctrl-C
)

// ErrNoPrompt is wrapped by errors returned when an answer is needed but
// nobody can type it (stdin or stdout is not a terminal). It is a usage
// error: the fix is to pass the flag that supplies the answer.
var ErrNoPrompt = errors.New("cannot prompt: not a terminal")

// NoPromptError says which flag supplies the answer a prompt would have
// asked for, e.g. NoPromptError("refusing to remove without confirmation",
// "--yes"). The result is a inputerr.Error and matches errors.Is(err, ErrNoPrompt).
func NoPromptError(what, flag string) error {
	return &inputerr.Error{Err: &noPromptError{what: what, flag: flag}}
}

type noPromptError struct{ what, flag string }

func (e *noPromptError) Error() string        { return e.what + ": pass " + e.flag }
func (e *noPromptError) Is(target error) bool { return target == ErrNoPrompt }

// ErrCancelled is returned when the user declines a confirmation; it exits 1
// with a short message and nothing changed.
var ErrCancelled = errors.New("cancelled; nothing was changed")

// WithCommandName renders the commands an error suggests ('tug app list')
// with the name the user typed: run as a kubectl plugin, tug is
// 'kubectl tug app list'. Library packages write hints as 'tug ...', the
// canonical name, and this is the one place that adapts them.
func WithCommandName(msg, name string) string {
	if name == "" || name == "tug" {
		return msg
	}
	return strings.ReplaceAll(msg, "'tug ", "'"+name+" ")
}

// exampleCommand finds tug at the start of an example line, or after a pipe
// or $( in one.
var exampleCommand = regexp.MustCompile(`(?m)(^\s*|\|\s*|[$<]\()tug `)

// ExampleWithCommandName renders a command's examples, written as 'tug ...',
// with the name the user typed ('kubectl tug ...' as a kubectl plugin).
func ExampleWithCommandName(example, name string) string {
	if name == "" || name == "tug" {
		return example
	}
	return exampleCommand.ReplaceAllString(example, "${1}"+name+" ")
}
