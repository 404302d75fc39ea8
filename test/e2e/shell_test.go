package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
)

// ttyEnv is TTY with extra environment (TUG_EXEC_PROTOCOL).
func (h *H) ttyEnv(rows, cols uint16, extra []string, args ...string) (*exec.Cmd, *os.File) {
	h.t.Helper()
	cmd := exec.Command(env.tug, args...)
	cmd.Env = append(append(h.tugEnv(nil), "TERM=xterm"), extra...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		h.t.Fatalf("starting tug under a pty: %v", err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = f.Close()
	})
	return cmd, f
}

// sizeScript prints the terminal's size as seen inside, once it is set: a
// resize reaches the process a moment after the local terminal changes.
func sizeScript(want string) string {
	return fmt.Sprintf("i=0; until [ \"$(stty size)\" = %q ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i+1)); done; echo size=$(stty size)\r", want)
}

func TestShellTTY(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1, "GREETING=from-config")
	for _, proto := range []string{"websocket", "spdy"} {
		t.Run(proto, func(t *testing.T) {
			cmd, tty := h.ttyEnv(24, 80, []string{"TUG_EXEC_PROTOCOL=" + proto}, "shell", "shop")
			s := NewStream(tty)
			// a prompt appears (busybox sh as root: "/ # ")
			s.WaitFor(t, "# ", 30*time.Second)
			fmt.Fprint(tty, "echo answer-$((40+2)) $GREETING $TERM\r")
			s.WaitFor(t, "answer-42 from-config xterm", 20*time.Second)
			fmt.Fprint(tty, sizeScript("24 80"))
			s.WaitFor(t, "size=24 80", 20*time.Second)
			// a live resize from 80x24 to 132x40 is seen inside
			if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 132}); err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(tty, sizeScript("40 132"))
			s.WaitFor(t, "size=40 132", 20*time.Second)
			// Ctrl-C goes to the remote side (raw mode), not to tug: it
			// interrupts the remote command and the shell prompts again
			s.WaitFor(t, "# ", 10*time.Second)
			// The shell waits in a builtin (wait), which SIGINT always
			// interrupts: a foreground "sleep 30" could get the signal in
			// the moment between fork and exec, while it still has the
			// shell's handler, and sleep on (a race in the remote shell,
			// not in tug, seen under load).
			fmt.Fprint(tty, "sleep 30 & echo sle$((0))ep; wait\r")
			s.WaitFor(t, "sle0ep", 10*time.Second) // the command line runs, not just typed
			fmt.Fprint(tty, "\x03")
			s.WaitFor(t, "# ", 20*time.Second)
			fmt.Fprint(tty, "echo still-$((1+1))-here\r")
			s.WaitFor(t, "still-2-here", 20*time.Second)
			fmt.Fprint(tty, "exit 5\r")
			err := cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 5 {
				t.Fatalf("'exit 5' in the shell: tug exited %d (%v); output:\n%s", code, err, s.String())
			}
		})
	}
	ev := h.waitEvent("TugShell", "shop-web-", "opened a shell")
	if ev.Annotations["tug.dev/user"] == "" || !strings.Contains(ev.Message, ev.Annotations["tug.dev/user"]) {
		t.Fatalf("shell event should name the user: %+v", ev)
	}
}

func TestShellPiped(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	r := h.TugRun(Run{Args: []string{"shell", "shop"}, Stdin: "ls /\n"})
	if r.Code != 0 || !strings.Contains(r.Stdout, "bin") || !strings.Contains(r.Stdout, "etc") {
		t.Fatalf("echo 'ls /' | tug shell: %s", r)
	}
	if strings.Contains(r.Stderr, "warning") {
		t.Fatalf("a piped shell should not warn: %s", r)
	}
	if r := h.TugRun(Run{Args: []string{"shell", "shop"}, Stdin: "exit 7\n"}); r.Code != 7 {
		t.Fatalf("piped 'exit 7': %s", r)
	}
	r = h.TugRun(Run{Args: []string{"shell", "shop", "--command", "echo via-command; exit 3"}})
	if r.Code != 3 || !strings.Contains(r.Stdout, "via-command") {
		t.Fatalf("shell --command: %s", r)
	}
}

func TestShellChoosesUnit(t *testing.T) {
	h := New(t)
	pods := h.deployShop("shop", 2)
	names := []string{pods[0].Name, pods[1].Name}
	sort.Strings(names)

	// a terminal with several units: a prompt to choose; Enter takes the first
	cmd, tty := h.TTY(24, 100, "shell", "shop")
	s := NewStream(tty)
	s.WaitFor(t, "Which unit?", 30*time.Second)
	s.WaitFor(t, names[1], 10*time.Second)
	fmt.Fprint(tty, "\r")
	s.WaitFor(t, "# ", 30*time.Second)
	fmt.Fprint(tty, "echo host=$(hostname)\r")
	s.WaitFor(t, "host="+names[0], 20*time.Second)
	fmt.Fprint(tty, "exit\r")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shell after choosing: %v", err)
	}

	// a unit named on the command line
	r := h.TugRun(Run{Args: []string{"shell", "shop", names[1]}, Stdin: "hostname\n"})
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != names[1] {
		t.Fatalf("shell in a named unit: %s", r)
	}
	// without a terminal: no prompt, the first ready web unit
	r = h.TugRun(Run{Args: []string{"shell", "shop"}, Stdin: "hostname\n"})
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != names[0] {
		t.Fatalf("shell without a terminal: %s", r)
	}
	// an unknown unit lists the valid ones
	r = h.Tug("shell", "shop", "shop-web-nope")
	if r.Code != 1 || !strings.Contains(r.Stderr, names[0]) || !strings.Contains(r.Stderr, names[1]) {
		t.Fatalf("shell in an unknown unit: %s", r)
	}
	// no units: says so and how to scale
	h.mustTug("app", "scale", "shop", "web=0")
	h.WaitPods("tug.dev/app=shop,tug.dev/process=web", 60*time.Second, "no web units", func(p []corev1.Pod) bool { return len(p) == 0 })
	for _, args := range [][]string{{"shell", "shop"}, {"app", "exec", "shop", "--", "ls"}, {"app", "exec", "shop", "--all", "--", "ls"}} {
		r := h.Tug(args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "no units") || !strings.Contains(r.Stderr, "app scale shop web=1") {
			t.Errorf("tug %q with no units: %s", args, r)
		}
	}
}

func TestAppExecAll(t *testing.T) {
	h := New(t)
	pods := h.deployShop("shop", 3)
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	sort.Strings(names)

	r := h.Tug("app", "exec", "shop", "--all", "--", "sh", "-c", "echo answer-$(hostname); echo err-$(hostname) >&2")
	if r.Code != 0 {
		t.Fatalf("app exec --all: %s", r)
	}
	out := lines(r.Stdout)
	if len(out) != 3 {
		t.Fatalf("app exec --all on 3 units: want 3 lines, got %s", r)
	}
	for _, l := range out {
		unit, answer, ok := strings.Cut(l, "|")
		unit, answer = strings.TrimSpace(unit), strings.TrimSpace(answer)
		if !ok || answer != "answer-"+unit {
			t.Errorf("line %q should be '<unit> | answer-<unit>'", l)
		}
	}
	for _, n := range names {
		if !strings.Contains(r.Stdout, n+" | answer-"+n) && !strings.Contains(r.Stdout, n+" |") {
			t.Errorf("no answer from %s:\n%s", n, r.Stdout)
		}
		if !strings.Contains(r.Stderr, "| err-"+n) {
			t.Errorf("stderr of %s should be on stderr, prefixed:\n%s", n, r.Stderr)
		}
	}

	// the exit code is the first non-zero one in unit order
	script := fmt.Sprintf("case $(hostname) in %s) exit 0;; %s) exit 4;; *) exit 5;; esac", names[0], names[1])
	r = h.Tug("app", "exec", "shop", "--all", "--", "sh", "-c", script)
	if r.Code != 4 || !strings.Contains(r.Stderr, "2 of 3 units") {
		t.Fatalf("app exec --all with failures: want exit 4 (the first failing unit's), got %s", r)
	}

	// one unit: plain output, its exit code
	r = h.Tug("app", "exec", "shop", "--unit", names[2], "--", "sh", "-c", "hostname; exit 6")
	if r.Code != 6 || strings.TrimSpace(r.Stdout) != names[2] {
		t.Fatalf("app exec --unit: %s", r)
	}
	if ev := h.waitEvent("TugExec", names[2], "sh [2 arguments not recorded]"); strings.Contains(ev.Message, "hostname") {
		t.Fatalf("the exec event records the command's arguments: %q", ev.Message)
	}
}

// TestShellFirstLineRuns: on an image without bash (the sample image has
// only busybox), every line typed reaches the shell: one typed ahead,
// before the shell has started, and two typed at once right after its
// prompt. No discarded attempt (bash, then sh) may read and drop input
// (issue 12 #10).
func TestShellFirstLineRuns(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	if r := h.Tug("app", "exec", "shop", "--", "/bin/sh", "-c", "command -v bash || echo no-bash"); !strings.Contains(r.Stdout, "no-bash") {
		t.Fatalf("this test needs an image without bash: %s", r)
	}
	for _, proto := range []string{"websocket", "spdy"} {
		t.Run(proto, func(t *testing.T) {
			cmd, tty := h.ttyEnv(24, 80, []string{"TUG_EXEC_PROTOCOL=" + proto}, "shell", "shop")
			s := NewStream(tty)
			fmt.Fprint(tty, "echo ahead-$((0+1))\r")
			s.WaitFor(t, "ahead-1\r\n", 30*time.Second)
			s.WaitFor(t, "# ", 10*time.Second)
			fmt.Fprint(tty, "echo first-$((1+1))\r")
			fmt.Fprint(tty, "echo second-$((2+2))\r")
			s.WaitFor(t, "first-2\r\n", 20*time.Second)
			s.WaitFor(t, "second-4\r\n", 20*time.Second)
			fmt.Fprint(tty, "exit 0\r")
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v; output:\n%s", err, s.String())
			}
		})
	}
}
