package session

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	clientexec "k8s.io/client-go/util/exec"
)

func TestShellCommand(t *testing.T) {
	argv, desc := shellCommand("", true, "screen-256color")
	if argv[0] != "/bin/sh" || argv[1] != "-c" || !strings.HasPrefix(argv[2], "TERM=screen-256color; export TERM; ") ||
		!strings.Contains(argv[2], "command -v bash") || !strings.HasSuffix(argv[2], "exec sh") || desc != "bash, else sh" {
		t.Fatalf("default shell with a TTY: %q %q", argv, desc)
	}
	if argv, _ := shellCommand("", true, "x; rm -rf /"); !strings.HasPrefix(argv[2], "TERM=xterm;") {
		t.Fatalf("a strange TERM must not reach the script: %q", argv)
	}
	if argv, _ := shellCommand("", false, "xterm"); strings.Contains(argv[2], "TERM") {
		t.Fatalf("without a TTY no TERM: %q", argv)
	}
	if argv, desc := shellCommand("rails console", true, "xterm"); !reflect.DeepEqual(argv, []string{"rails", "console"}) || desc != "rails console" {
		t.Fatalf("--command: %q %q", argv, desc)
	}
}

func TestCommandLine(t *testing.T) {
	for in, want := range map[string][]string{
		"psql":               {"psql"},
		"  rails   console ": {"rails", "console"},
		"echo $HOME":         {"/bin/sh", "-c", "echo $HOME"},
		"ls | wc -l":         {"/bin/sh", "-c", "ls | wc -l"},
		`psql -c "select 1"`: {"/bin/sh", "-c", `psql -c "select 1"`},
	} {
		if got := CommandLine(in); !reflect.DeepEqual(got, want) {
			t.Errorf("CommandLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShellPassesTheExitCodeAndAudits(t *testing.T) {
	c := fake.NewClientset(unitPod("shop-web-a", "web", true))
	seedShop(t, c, nil)
	var got Streams
	ex := &fakeExecutor{run: func(_ Target, _ []string, s Streams) error {
		got = s
		return clientexec.CodeExitError{Err: errors.New("x"), Code: 5}
	}}
	d, _, _, _ := testDeps(c, ex)
	err := Shell(context.Background(), d, ShellOptions{App: "shop"})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 5 {
		t.Fatalf("exit 5: %v", err)
	}
	// stdin is not a terminal: no TTY, stdin passed, separate stderr
	if got.TTY || got.Stdin == nil || got.Stderr == nil || got.Sizes != nil {
		t.Fatalf("piped session streams: %+v", got)
	}
	waitEvents(t, c, "TugShell", 1)
}

func TestShellWithoutAShellInTheImage(t *testing.T) {
	c := fake.NewClientset(unitPod("shop-web-a", "web", true))
	seedShop(t, c, nil)
	ex := &fakeExecutor{run: func(Target, []string, Streams) error {
		return errors.New(`OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/sh": stat /bin/sh: no such file or directory: unknown`)
	}}
	d, _, _, _ := testDeps(c, ex)
	err := Shell(context.Background(), d, ShellOptions{App: "shop"})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != 127 || !strings.Contains(ce.Msg, "no shell") || !strings.Contains(ce.Msg, "--command") {
		t.Fatalf("no /bin/sh: %v", err)
	}
}

// The remote shell gets the terminal type the IO says ($TERM as cmd read
// it), not whatever this process's environment holds.
func TestShellTakesTheTermTypeFromIO(t *testing.T) {
	t.Setenv("TERM", "vt100")
	c := fake.NewClientset(unitPod("shop-web-a", "web", true))
	seedShop(t, c, nil)
	var command []string
	ex := &fakeExecutor{run: func(_ Target, cmd []string, _ Streams) error {
		command = cmd
		return nil
	}}
	d, ios, _, _ := testDeps(c, ex)
	ios.stdinTTY, ios.term = true, "screen-256color"
	if err := Shell(context.Background(), d, ShellOptions{App: "shop"}); err != nil {
		t.Fatal(err)
	}
	if len(command) != 3 || !strings.HasPrefix(command[2], "TERM=screen-256color; export TERM; ") {
		t.Fatalf("shell command %q; want TERM=screen-256color from the IO", command)
	}
}
