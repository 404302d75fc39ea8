//go:build unix

// Command remote benchmarks tug's remote commands against kubectl's on the
// local cluster, in interleaved rounds, in a namespace of its own with an
// app of -units web units (the sample image, tiny requests):
//
//	logs   time from start until a line from every unit has been printed:
//	       tug logs APP -f --tail 1  vs  kubectl logs -l ... -f --tail 1 --prefix --max-log-requests N
//	       Goal (issue 6): no worse than kubectl.
//	shell  keystroke echo latency in an interactive shell under a pty:
//	       tug shell APP UNIT  vs  kubectl exec -it UNIT -- sh
//	       Goal: ratio of medians <= 1.05, the noise of this measurement
//	       (both sides run the same client-go stream code).
//
// It is a benchmark, not a test: it prints numbers and passes judgement
// only in its rows.
//
//	go run ./bench/remote -tug bin/tug -kubectl PATH -kubeconfig FILE [-units 50] [-rounds 5] [-only logs|shell]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	units   = flag.Int("units", 50, "web units of the app")
	rounds  = flag.Int("rounds", 5, "rounds (each runs tug, then kubectl), after one that is not counted")
	keys    = flag.Int("keys", 100, "shell: keystrokes per session")
	only    = flag.String("only", "", "logs or shell: run only that benchmark")
	tugArgs = flag.String("tug-args", "", "shell: tug's arguments instead of 'shell bench UNIT' (to compare variants)")
)

const (
	ns      = "bench-remote"
	appName = "bench"
)

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	defer e.Namespace(ctx, ns)()
	fmt.Printf("setting up app %s with %d web units in namespace %s\n", appName, *units, ns)
	e.SampleApp(ns, appName, "web", *units)
	if *only != "shell" {
		benchLogs(e)
	}
	if *only != "logs" {
		pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName + ",tug.dev/process=web"})
		benchkit.Check("units", err)
		if len(pods.Items) == 0 {
			benchkit.Check("units", fmt.Errorf("none"))
		}
		benchShell(e, pods.Items[0].Name)
	}
}

// ---------------------------------------------------------------- logs

func benchLogs(e *benchkit.Env) {
	const goal = 1.0
	sel := fmt.Sprintf("tug.dev/app=%s,tug.dev/process=web", appName)
	tugCmd := func() *exec.Cmd { return e.TugCmd(ns, "logs", appName, "-p", "web", "-f", "--tail", "1") }
	kubectlCmd := func() *exec.Cmd {
		return e.KubectlCmd(ns, "logs", "-l", sel, "-f", "--tail", "1", "--prefix", fmt.Sprintf("--max-log-requests=%d", *units))
	}
	var allT, allK []time.Duration
	var rssT []int64
	for r := 0; r < *rounds+1; r++ { // round 0 warms caches and is not counted
		t, err := benchkit.FollowLogs(tugCmd(), benchkit.TugLogPrefix, *units, 2*time.Minute)
		benchkit.Check("tug logs", err)
		k, err := benchkit.FollowLogs(kubectlCmd(), benchkit.KubectlLogPrefix, *units, 2*time.Minute)
		benchkit.Check("kubectl logs", err)
		if r > 0 {
			allT, allK, rssT = append(allT, t.All), append(allK, k.All), append(rssT, t.MaxRSSKiB)
		}
	}
	t, k := benchkit.Median(allT), benchkit.Median(allK)
	ratio, rs := benchkit.Ratio(t.Seconds(), k.Seconds())
	slices.Sort(rssT)
	e.Emit(benchkit.Row{Group: "Remote", Benchmark: fmt.Sprintf("logs -f, a line from every unit, %d units", *units),
		Tug:     fmt.Sprintf("%s, %s", benchkit.Ms(t), benchkit.MiB(rssT[len(rssT)/2])),
		Kubectl: fmt.Sprintf("kubectl logs -l -f --prefix --max-log-requests=%d: %s", *units, benchkit.Ms(k)),
		Ratio:   rs, Goal: fmt.Sprintf("<= %.2fx", goal), Met: ratio <= goal, Requests: "-",
		Note: fmt.Sprintf("median of %d interleaved rounds", *rounds)})
}

// ---------------------------------------------------------------- shell

func benchShell(e *benchkit.Env, unit string) {
	const goal = 1.05
	tugCmd := func() *exec.Cmd {
		if *tugArgs != "" {
			return e.TugCmd(ns, strings.Fields(*tugArgs)...)
		}
		return e.TugCmd(ns, "shell", appName, unit)
	}
	kubectlCmd := func() *exec.Cmd { return e.KubectlCmd(ns, "exec", "-it", unit, "--", "sh") }
	var tugLat, kubectlLat, tugOpen, kubectlOpen []time.Duration
	for r := 0; r < *rounds+1; r++ { // round 0 warms up and is not counted
		// Both sessions are open at once and keys alternate between them,
		// so each pair of samples sees the same machine load.
		a, err := openShell(tugCmd())
		benchkit.Check("tug shell", err)
		b, err := openShell(kubectlCmd())
		if err != nil {
			a.close()
			benchkit.Check("kubectl exec -it", err)
		}
		for i := 0; i < *keys; i++ {
			key := byte('a' + i%26)
			la, err := a.echo(key)
			benchkit.Check("tug shell", err)
			lb, err := b.echo(key)
			benchkit.Check("kubectl exec -it", err)
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
	diffs := make([]time.Duration, len(tugLat))
	for i := range tugLat {
		diffs[i] = tugLat[i] - kubectlLat[i]
	}
	ratio, rs := benchkit.Ratio(float64(benchkit.Median(tugLat)), float64(benchkit.Median(kubectlLat)))
	e.Emit(benchkit.Row{Group: "Remote", Benchmark: "shell keystroke echo",
		Tug:     fmt.Sprintf("%.2f ms (p95 %.2f ms), prompt after %s", ms(benchkit.Median(tugLat)), ms(percentile(tugLat, 95)), benchkit.Ms(benchkit.Median(tugOpen))),
		Kubectl: fmt.Sprintf("kubectl exec -it: %.2f ms (p95 %.2f ms), prompt after %s", ms(benchkit.Median(kubectlLat)), ms(percentile(kubectlLat, 95)), benchkit.Ms(benchkit.Median(kubectlOpen))),
		Ratio:   rs, Goal: fmt.Sprintf("<= %.2fx", goal), Met: ratio <= goal, Requests: "-",
		Note: fmt.Sprintf("median of %d sessions x %d keys, keys alternating between the two open sessions; median paired difference %+.3f ms", *rounds, *keys, ms(benchkit.Median(diffs)))})
}

// session is an interactive shell under a pty.
type session struct {
	cmd  *exec.Cmd
	tty  *os.File
	out  *watcher
	open time.Duration // to the first prompt
}

func openShell(cmd *exec.Cmd) (*session, error) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "TERM=xterm")
	start := time.Now()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, tty: tty, out: newWatcher(tty)}
	if !s.out.waitFor("# ", 60*time.Second) {
		s.close()
		return nil, fmt.Errorf("no prompt from %s: %q", cmd.Args[0], s.out.text())
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

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
