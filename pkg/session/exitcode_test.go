package session

import (
	"errors"
	"fmt"
	"testing"

	clientexec "k8s.io/client-go/util/exec"
)

func TestExitCode(t *testing.T) {
	wrapped := fmt.Errorf("session: %w", clientexec.CodeExitError{Err: errors.New("command terminated with non-zero exit code"), Code: 5})
	if code, ok := ExitCode(wrapped); !ok || code != 5 {
		t.Fatalf("ExitCode(wrapped CodeExitError) = %d, %v", code, ok)
	}
	if _, ok := ExitCode(errors.New("connection refused")); ok {
		t.Fatal("a plain error carries no exit code")
	}
	if _, ok := ExitCode(nil); ok {
		t.Fatal("nil carries no exit code")
	}
}

func TestRemoteResult(t *testing.T) {
	notFound := errors.New(`Internal error occurred: error executing command in container: failed to exec in container: OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown`)
	other := errors.New("lost connection")
	cases := []struct {
		name string
		in   error
		code int // -1: nil; 0: the same error
		msg  string
	}{
		{"success", nil, -1, ""},
		{"exit 0", clientexec.CodeExitError{Err: errors.New("x"), Code: 0}, -1, ""},
		{"exit 3", clientexec.CodeExitError{Err: errors.New("x"), Code: 3}, 3, ""},
		{"not found", notFound, 127, `command not found in unit u: exec: "nope": executable file not found in $PATH`},
		{"other", other, 0, "lost connection"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := remoteResult(c.in, "unit u")
			switch {
			case c.code == -1:
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
			case c.code == 0:
				if err != c.in {
					t.Fatalf("got %v, want the error itself", err)
				}
			default:
				var ee *ExitError
				var ce *CommandError
				switch {
				case errors.As(err, &ee):
					if ee.Code != c.code {
						t.Fatalf("exit code %d, want %d", ee.Code, c.code)
					}
				case errors.As(err, &ce):
					if ce.ExitCode() != c.code || ce.Error() != c.msg {
						t.Fatalf("got %d %q, want %d %q", ce.ExitCode(), ce.Error(), c.code, c.msg)
					}
				default:
					t.Fatalf("got %T %v", err, err)
				}
			}
		})
	}
}

func TestRuntimeMessage(t *testing.T) {
	in := `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "x": executable file not found in $PATH: unknown`
	if got := runtimeMessage(in); got != `exec: "x": executable file not found in $PATH` {
		t.Fatalf("runtimeMessage = %q", got)
	}
	if got := runtimeMessage("something  else\nhappened"); got != "something else happened" {
		t.Fatalf("runtimeMessage of an unknown message = %q", got)
	}
}
