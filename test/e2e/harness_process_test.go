package e2e

// Harness: tug running in the background, reading its output as it comes
// (Stream), interrupting it, and shell completions.

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Stream collects what a reader (a pty, a log stream) produces, so a test
// can wait for text to appear without losing what arrives in between.
type Stream struct {
	mu     sync.Mutex
	buf    strings.Builder
	err    error
	notify chan struct{}
	seen   int // WaitFor looks only past what an earlier WaitFor matched
}

func NewStream(r io.Reader) *Stream {
	s := &Stream{notify: make(chan struct{}, 1)}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			if err != nil {
				s.err = err
			}
			s.mu.Unlock()
			select {
			case s.notify <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// String is everything read so far.
func (s *Stream) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// WaitFor waits until want appears after the previous match, and returns the
// text up to and including it; it fails the test at the deadline.
func (s *Stream) WaitFor(t *testing.T, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		all, err := s.buf.String(), s.err
		s.mu.Unlock()
		if i := strings.Index(all[s.seen:], want); i >= 0 {
			start := s.seen
			s.seen += i + len(want)
			return all[start:s.seen]
		}
		if err != nil {
			t.Fatalf("stream ended (%v) before %q; got:\n%s", err, want, all[s.seen:])
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			t.Fatalf("no %q within %s; got:\n%s", want, timeout, all[s.seen:])
		}
	}
}

// WaitEOF waits until the stream's reader has ended.
func (s *Stream) WaitEOF() {
	for {
		s.mu.Lock()
		done := s.err != nil
		s.mu.Unlock()
		if done {
			return
		}
		<-s.notify
	}
}

// lines splits output into non-empty lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimRight(sc.Text(), "\r"); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Interrupt is one round of an interrupted-work test: start tug with args
// (in dir, with extra env), wait until its stderr shows waitFor, send sig,
// and require the exit code of an interrupted command, 130.
type Interrupt struct {
	Args    []string
	Dir     string
	Env     []string
	WaitFor string
	Timeout time.Duration
	Signal  os.Signal
	// Then, when set, is what stderr must say after the signal; Not what
	// it must not have said by then.
	Then, Not string
}

func (h *H) interrupt(round int, in Interrupt) {
	h.t.Helper()
	cmd := exec.Command(env.tug, in.Args...)
	cmd.Dir = in.Dir
	cmd.Env = h.tugEnv(in.Env)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	s := NewStream(stderr)
	s.WaitFor(h.t, in.WaitFor, in.Timeout)
	if err := cmd.Process.Signal(in.Signal); err != nil {
		h.t.Fatal(err)
	}
	if in.Then != "" {
		s.WaitFor(h.t, in.Then, in.Timeout)
		if in.Not != "" && strings.Contains(s.String(), in.Not) {
			h.t.Errorf("round %d: interrupted %v said %q:\n%s", round, in.Args, in.Not, s.String())
		}
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		h.t.Fatalf("round %d: interrupted %v exited %d (%v), want 130; stderr:\n%s", round, in.Args, code, err, s.String())
	}
}

// bgTug is tug running in the background.
type bgTug struct {
	cmd    *exec.Cmd
	Wait   func() Result
	Stderr *Stream
}

// WaitFor waits for want on tug's stderr. If it does not come, tug is
// made to dump its goroutines (SIGQUIT) so the failure says where it was.
func (b *bgTug) WaitFor(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(b.Stderr.String(), want) {
		if time.Now().After(deadline) {
			_ = b.cmd.Process.Signal(syscall.SIGQUIT)
			r := b.Wait()
			t.Fatalf("no %q from tug within %s; %s", want, timeout, r)
		}
		select {
		case <-b.Stderr.notify:
		case <-time.After(time.Until(deadline)):
		}
	}
}

// startTug runs tug in the background; its stderr streams so the test can
// wait for progress lines. Wait returns how it ended.
func (h *H) startTug(args ...string) *bgTug {
	b := &bgTug{}
	b.Wait, b.Stderr, b.cmd = h.startTugCmd(args...)
	return b
}

func (h *H) startTugCmd(args ...string) (wait func() Result, stderr *Stream, cmd *exec.Cmd) {
	h.t.Helper()
	cmd = exec.Command(env.tug, args...)
	cmd.Env = h.tugEnv(nil)
	var stdout bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = &stdout, pw
	stderr = NewStream(pr)
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting tug %v: %v", args, err)
	}
	var once sync.Once
	var res Result
	wait = func() Result {
		once.Do(func() {
			err := cmd.Wait()
			pw.Close()
			res = Result{Stdout: stdout.String(), Code: cmd.ProcessState.ExitCode()}
			if err != nil && res.Code < 0 {
				h.t.Errorf("tug %v: %v", args, err)
			}
			// let the stream drain what the pipe still holds
			stderr.WaitEOF()
			res.Stderr = stderr.String()
		})
		return res
	}
	h.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			wait()
		}
	})
	return wait, stderr, cmd
}

// completions runs `tug __complete ARGS...`, as the shell scripts and
// kubectl_complete-tug do, and returns the candidate values (descriptions
// dropped) and the directive line.
func (h *H) completions(args ...string) ([]string, string) {
	h.t.Helper()
	r := h.Tug(append([]string{"__complete"}, args...)...)
	if r.Code != 0 {
		h.t.Fatalf("__complete %q: %s", args, r)
	}
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	directive := lines[len(lines)-1]
	var values []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values, directive
}
