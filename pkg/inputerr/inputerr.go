// Package inputerr holds the one error that means "what you typed cannot
// work": a bad name, an invalid value, an unknown process, flags that
// contradict each other. Such an error is found before anything changes,
// and tug exits 2 for it (docs/exit-codes.md). Library packages return it
// directly; main is the only place that turns it into an exit code.
package inputerr

import (
	"errors"
	"fmt"
)

// Error is input the user can fix by typing something else.
type Error struct {
	Err error
	// Suggestions are printed as "did you mean ...?" under the error.
	Suggestions []string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error from a format string; %w wraps as fmt.Errorf does.
func Errorf(format string, a ...any) error {
	return &Error{Err: fmt.Errorf(format, a...)}
}

// Wrap marks err as an input error, keeping it reachable with errors.As
// (an app.NotFoundError stays one). Wrap(nil) is nil, and an error that
// already is an input error is returned as it is.
func Wrap(err error) error {
	if err == nil || Is(err) {
		return err
	}
	return &Error{Err: err}
}

// Is reports whether err is, or wraps, an input error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Suggest returns err's suggestions, if it is an input error that has any.
func Suggest(err error) []string {
	var e *Error
	if errors.As(err, &e) {
		return e.Suggestions
	}
	return nil
}
