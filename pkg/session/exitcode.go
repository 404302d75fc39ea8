package session

import (
	"errors"
	"fmt"
	"strings"

	clientexec "k8s.io/client-go/util/exec"
)

// ExitCode is the remote command's exit code carried by err, if any.
func ExitCode(err error) (int, bool) {
	var ee clientexec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitStatus(), true
	}
	return 0, false
}

// ExitError carries the exit code of a remote command (run, shell, exec)
// that has already printed its own output; tug exits with the same code and
// adds nothing.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("command exited with code %d", e.Code) }

// Shells' codes for a command that cannot run.
const (
	CodeCannotRun = 126 // found but not executable
	CodeNotFound  = 127 // not found
)

// startFailure recognises the container runtime's refusal to start the
// command (the message comes through the API server as an error, not an
// exit code) and returns the code a shell would exit with.
func startFailure(err error) (code int, why string, ok bool) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "executable file not found"), strings.Contains(msg, "no such file or directory"):
		return CodeNotFound, "command not found", true
	case strings.Contains(msg, "permission denied") && strings.Contains(msg, "exec"):
		return CodeCannotRun, "command not executable", true
	}
	return 0, "", false
}

// remoteResult turns the end of a session into what tug returns: nil for
// success, an ExitError carrying a remote exit code (tug prints nothing
// more: the command printed its own output), or a failure.
func remoteResult(err error, where string) error {
	if err == nil {
		return nil
	}
	if code, ok := ExitCode(err); ok {
		if code == 0 {
			return nil
		}
		return &ExitError{Code: code}
	}
	if code, why, ok := startFailure(err); ok {
		return &CommandError{Code: code, Msg: fmt.Sprintf("%s in %s: %s", why, where, runtimeMessage(err.Error()))}
	}
	return err
}

// CommandError is a remote command that could not start; its exit code is
// the one a shell gives in that case (126, 127).
type CommandError struct {
	Code int
	Msg  string
}

func (e *CommandError) Error() string { return e.Msg }
func (e *CommandError) ExitCode() int { return e.Code }
