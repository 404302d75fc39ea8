//go:build unix

// Command remote benchmarks tug's remote commands against kubectl's on the
// same cluster, in interleaved rounds, and prints medians and ratios. It is
// a benchmark, not a test: it prints numbers and passes judgement only as
// "goal met" lines. bench/remote.sh sets up the app it measures.
//
//	remote logs  -tug bin/tug -kubectl kubectl -app bench -units 50
//	    time from start until a line from every unit has been printed:
//	    tug logs APP -f --tail 1  vs  kubectl logs -l ... -f --tail 1 --prefix --max-log-requests N
//	remote shell -tug bin/tug -kubectl kubectl -app bench -unit POD
//	    keystroke echo latency in an interactive shell under a pty:
//	    tug shell APP UNIT  vs  kubectl exec -it UNIT -- sh
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"

	"tug.dev/tug/bench/internal/benchkit"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	tug := fs.String("tug", "bin/tug", "tug binary")
	kubectl := fs.String("kubectl", "kubectl", "kubectl binary")
	appName := fs.String("app", "bench", "app to measure")
	units := fs.Int("units", 50, "logs: how many web units the app has")
	unit := fs.String("unit", "", "shell: the unit to open shells in")
	rounds := fs.Int("n", 5, "rounds (each runs tug, then kubectl)")
	keys := fs.Int("keys", 50, "shell: keystrokes per session")
	// "No worse than kubectl": for echo latency, where both run the same
	// client-go stream code, runs on a loaded 2-core machine differ by up to
	// 5% from each other, so the shell goal allows that much.
	goal := fs.Float64("goal", 0, "goal for the ratio tug/kubectl (default: logs 1.00, shell 1.05)")
	tugArgs := fs.String("tug-args", "", "shell: tug's arguments instead of 'shell APP UNIT' (to compare variants)")
	_ = fs.Parse(os.Args[2:])
	switch os.Args[1] {
	case "logs":
		if *goal == 0 {
			*goal = 1.0
		}
		benchLogs(*tug, *kubectl, *appName, *units, *rounds, *goal)
	case "shell":
		if *unit == "" {
			fmt.Fprintln(os.Stderr, "shell: -unit is required")
			os.Exit(2)
		}
		if *goal == 0 {
			*goal = 1.05
		}
		benchShell(*tug, *kubectl, *appName, *unit, *tugArgs, *rounds, *keys, *goal)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: remote logs|shell [flags]")
	os.Exit(2)
}

// ---------------------------------------------------------------- logs

var (
	tugPrefix     = regexp.MustCompile(`^(\S+)\s+\| `)
	kubectlPrefix = regexp.MustCompile(`^\[pod/([^/\]]+)/`)
)

func benchLogs(tug, kubectl, appName string, units, rounds int, goal float64) {
	sel := fmt.Sprintf("tug.dev/app=%s,tug.dev/process=web", appName)
	tugCmd := []string{tug, "logs", appName, "-p", "web", "-f", "--tail", "1"}
	kubectlCmd := []string{kubectl, "logs", "-l", sel, "-f", "--tail", "1", "--prefix", fmt.Sprintf("--max-log-requests=%d", units)}
	var firstT, allT, firstK, allK []time.Duration
	for r := 0; r < rounds+1; r++ { // round 0 warms caches and is not counted
		f1, a1, err := timeLogs(tugCmd, tugPrefix, units)
		check("tug logs", err)
		f2, a2, err := timeLogs(kubectlCmd, kubectlPrefix, units)
		check("kubectl logs", err)
		if r > 0 {
			firstT, allT, firstK, allK = append(firstT, f1), append(allT, a1), append(firstK, f2), append(allK, a2)
		}
	}
	fmt.Printf("logs of %d units, %d rounds, medians:\n", units, rounds)
	fmt.Printf("  %-70s first line %7.1f ms   a line from every unit %7.1f ms\n", strings.Join(tugCmd[1:], " "), ms(median(firstT)), ms(median(allT)))
	fmt.Printf("  %-70s first line %7.1f ms   a line from every unit %7.1f ms\n", "kubectl "+strings.Join(kubectlCmd[1:], " "), ms(median(firstK)), ms(median(allK)))
	ratio := float64(median(allT)) / float64(median(allK))
	fmt.Printf("  ratio tug/kubectl, every unit's first line: %.2fx (goal <= %.2fx: %s)\n", ratio, goal, verdict(ratio <= goal))
	rows.Emit(benchkit.Row{Group: "Remote", Benchmark: fmt.Sprintf("logs -f, a line from every unit, %d units", units),
		Tug: fmt.Sprintf("%.1f ms", ms(median(allT))), Kubectl: fmt.Sprintf("kubectl logs -l -f --prefix: %.1f ms", ms(median(allK))),
		Ratio: fmt.Sprintf("%.2fx", ratio), Goal: fmt.Sprintf("<= %.2fx", goal), Met: ratio <= goal, Requests: "-", Note: fmt.Sprintf("median of %d rounds", rounds)})
}

// rows receives the result rows (bench/run.sh sets TUG_BENCH_OUT).
var rows = &benchkit.Env{Out: os.Getenv("TUG_BENCH_OUT")}

// timeLogs starts a log command and returns the time to its first line and
// to a line from each of want units; then it stops the command.
func timeLogs(argv []string, prefix *regexp.Regexp, want int) (first, all time.Duration, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	seen := map[string]bool{}
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var pending []byte
		for {
			n, rerr := stdout.Read(buf)
			pending = append(pending, buf[:n]...)
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				line := string(pending[:i])
				pending = pending[i+1:]
				if first == 0 {
					first = time.Since(start)
				}
				if m := prefix.FindStringSubmatch(line); m != nil && !seen[m[1]] {
					seen[m[1]] = true
					if len(seen) == want {
						all = time.Since(start)
						done <- nil
						return
					}
				}
			}
			if rerr != nil {
				done <- fmt.Errorf("output ended after %d of %d units (%v): %s", len(seen), want, rerr, stderr.String())
				return
			}
		}
	}()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		err = fmt.Errorf("no line from each of %d units within 2 minutes", want)
	}
	return first, all, err
}

// ---------------------------------------------------------------- shell

func benchShell(tug, kubectl, appName, unit, tugArgs string, rounds, keys int, goal float64) {
	tugCmd := []string{tug, "shell", appName, unit}
	if tugArgs != "" {
		tugCmd = append([]string{tug}, strings.Fields(tugArgs)...)
	}
	kubectlCmd := []string{kubectl, "exec", "-it", unit, "--", "sh"}
	var tugLat, kubectlLat, tugOpen, kubectlOpen []time.Duration
	for r := 0; r < rounds+1; r++ { // round 0 warms up and is not counted
		// Both sessions are open at once and keys alternate between them,
		// so each pair of samples sees the same machine load.
		a, err := openShell(tugCmd)
		check("tug shell", err)
		b, err := openShell(kubectlCmd)
		if err != nil {
			a.close()
			check("kubectl exec -it", err)
		}
		for i := 0; i < keys; i++ {
			key := byte('a' + i%26)
			la, err := a.echo(key)
			check("tug shell", err)
			lb, err := b.echo(key)
			check("kubectl exec -it", err)
			if r > 0 {
				tugLat, kubectlLat = append(tugLat, la), append(kubectlLat, lb)
			}
		}
		if r > 0 {
			tugOpen, kubectlOpen = append(tugOpen, a.open), append(kubectlOpen, b.open)
		}
		a.close()
		b.close()
	}
	fmt.Printf("shell keystroke echo, %d sessions x %d keys each, keys alternating between the two:\n", rounds, keys)
	for _, x := range []struct {
		name       string
		open, lats []time.Duration
	}{{strings.Join(tugCmd[1:], " "), tugOpen, tugLat}, {"kubectl " + strings.Join(kubectlCmd[1:], " "), kubectlOpen, kubectlLat}} {
		fmt.Printf("  %-50s echo median %6.2f ms  p95 %6.2f ms   time to prompt %7.1f ms\n", x.name, ms(median(x.lats)), ms(percentile(x.lats, 95)), ms(median(x.open)))
	}
	diffs := make([]time.Duration, len(tugLat))
	for i := range tugLat {
		diffs[i] = tugLat[i] - kubectlLat[i]
	}
	ratio := float64(median(tugLat)) / float64(median(kubectlLat))
	fmt.Printf("  median of paired differences (tug - kubectl, same moment): %+.3f ms\n", ms(median(diffs)))
	fmt.Printf("  ratio tug/kubectl, median echo: %.2fx (goal <= %.2fx: %s)\n", ratio, goal, verdict(ratio <= goal))
	rows.Emit(benchkit.Row{Group: "Remote", Benchmark: "shell keystroke echo",
		Tug: fmt.Sprintf("%.2f ms", ms(median(tugLat))), Kubectl: fmt.Sprintf("kubectl exec -it: %.2f ms", ms(median(kubectlLat))),
		Ratio: fmt.Sprintf("%.2fx", ratio), Goal: fmt.Sprintf("<= %.2fx", goal), Met: ratio <= goal, Requests: "-", Note: fmt.Sprintf("%d sessions x %d keys", rounds, keys)})
}

// session is an interactive shell under a pty.
type session struct {
	cmd  *exec.Cmd
	tty  *os.File
	out  *watcher
	open time.Duration // to the first prompt
}

func openShell(argv []string) (*session, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "TERM=xterm")
	start := time.Now()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, tty: tty, out: newWatcher(tty)}
	if !s.out.waitFor("# ", 60*time.Second) {
		s.close()
		return nil, fmt.Errorf("no prompt from %s: %q", argv[0], s.out.text())
	}
	s.open = time.Since(start)
	return s, nil
}

// echo types key and returns how long it took to come back.
func (s *session) echo(key byte) (time.Duration, error) {
	mark := s.out.len()
	t := time.Now()
	if _, err := s.tty.Write([]byte{key}); err != nil {
		return 0, err
	}
	if !s.out.waitAfter(mark, key, 10*time.Second) {
		return 0, fmt.Errorf("key %q was not echoed", key)
	}
	return time.Since(t), nil
}

func (s *session) close() {
	_, _ = s.tty.Write([]byte("\x15exit\r")) // Ctrl-U clears the typed line
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
	_ = s.tty.Close()
}

// watcher collects a reader's output and lets the caller wait for text.
type watcher struct {
	mu   sync.Mutex
	buf  []byte
	cond *sync.Cond
	eof  bool
}

func newWatcher(r io.Reader) *watcher {
	w := &watcher{}
	w.cond = sync.NewCond(&w.mu)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			w.mu.Lock()
			w.buf = append(w.buf, b[:n]...)
			if err != nil {
				w.eof = true
			}
			w.cond.Broadcast()
			w.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return w
}

func (w *watcher) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf)
}

func (w *watcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

func (w *watcher) until(timeout time.Duration, ok func([]byte) bool) bool {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !ok(w.buf) {
		if w.eof || time.Now().After(deadline) {
			return false
		}
		w.cond.Wait()
	}
	return true
}

func (w *watcher) waitFor(s string, timeout time.Duration) bool {
	return w.until(timeout, func(b []byte) bool { return bytes.Contains(b, []byte(s)) })
}

func (w *watcher) waitAfter(mark int, key byte, timeout time.Duration) bool {
	return w.until(timeout, func(b []byte) bool { return len(b) > mark && bytes.IndexByte(b[mark:], key) >= 0 })
}

// ---------------------------------------------------------------- helpers

func median(d []time.Duration) time.Duration { return percentile(d, 50) }

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s) - 1) * p / 100
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func check(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}
