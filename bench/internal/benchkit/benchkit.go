//go:build unix

// Package benchkit is what every benchmark in bench/ shares: the local
// cluster's kubeconfig and a client for it, the tug and kubectl binaries,
// running a command while measuring its wall time, peak memory (wait4's
// rusage) and CPU time, counting its API requests from -v 6 trace lines,
// and recording result rows that bench/report turns into
// docs/benchmarks.md.
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Env is a benchmark's setup: binaries, cluster and where rows go.
type Env struct {
	Tug, Kubectl, Kubeconfig string
	Out                      string // JSON lines of Rows; "" prints them only
	Client                   kubernetes.Interface
}

var (
	tugFlag        = flag.String("tug", "bin/tug", "tug binary")
	kubectlFlag    = flag.String("kubectl", "kubectl", "kubectl binary (the cluster's own version)")
	kubeconfigFlag = flag.String("kubeconfig", os.Getenv("TUG_E2E_KUBECONFIG"), "admin kubeconfig of the local cluster")
	outFlag        = flag.String("out", os.Getenv("TUG_BENCH_OUT"), "file to append result rows to (JSON lines)")
	tugBeforeFlag  = flag.String("tug-before", "", "another tug binary to measure too (before a fix)")
	beforeFlag     = flag.String("before", "", "what -tug-before is, for its rows' names (e.g. its commit)")
	beforeRowsFlag = flag.String("before-rows", "node", "which benchmarks get a -tug-before row: unit, node, many (comma-separated)")
)

// Before is the tug binary before a fix (-tug-before) and the name of its
// rows, when benchmark (unit, node, many) is one -before-rows asks for.
func Before(benchmark string) (tug, rowName string, ok bool) {
	if *tugBeforeFlag == "" || !slices.Contains(strings.Split(*beforeRowsFlag, ","), benchmark) {
		return "", "", false
	}
	if *beforeFlag == "" {
		return *tugBeforeFlag, "before", true
	}
	return *tugBeforeFlag, "before (" + *beforeFlag + ")", true
}

// WithTug is e running another tug binary.
func (e *Env) WithTug(bin string) *Env {
	c := *e
	c.Tug = bin
	return &c
}

// Setup parses the flags and connects to the cluster; a benchmark that
// needs no cluster passes cluster=false. From here on an interrupt
// (SIGINT, SIGTERM) runs the registered cleanups (see Cleanup) and
// exits 130.
func Setup(cluster bool) *Env {
	flag.Parse()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "bench: %v: cleaning up\n", s)
		Exit(130)
	}()
	// binaries named by a relative path run from any folder (a source
	// deploy runs tug in the folder it deploys)
	e := &Env{Tug: absBinary(*tugFlag), Kubectl: absBinary(*kubectlFlag), Kubeconfig: *kubeconfigFlag, Out: *outFlag}
	if !cluster {
		return e
	}
	if e.Kubeconfig == "" {
		e.Kubeconfig = "/var/lib/tug-cluster/admin.kubeconfig"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	Check("kubeconfig", err)
	cfg.QPS, cfg.Burst = 300, 600
	e.Client = kubernetes.NewForConfigOrDie(cfg)
	return e
}

// Check ends the benchmark on an error, after the registered cleanups.
func Check(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s: %v\n", what, err)
		Exit(1)
	}
}

// Phase prints how long a step of a benchmark's setup or clean-up took
// (where a section's minutes go, in make bench's log), and returns a func
// that prints it when called: defer benchkit.Phase("creating pods")().
func Phase(what string) func() {
	start := time.Now()
	return func() { fmt.Printf("  %s took %.1f s\n", what, time.Since(start).Seconds()) }
}

// cleanups are what a benchmark must undo however it ends (its
// namespace, the fake nodes it registered), last registered first.
var cleanups struct {
	sync.Mutex
	fns []func()
}

// Cleanup registers fn to run when the benchmark ends: by Exit (so by
// Check's failures and by an interrupt) or by calling the function it
// returns, which a benchmark defers for its normal end. fn runs once.
func Cleanup(fn func()) func() {
	var once sync.Once
	run := func() { once.Do(fn) }
	cleanups.Lock()
	cleanups.fns = append(cleanups.fns, run)
	cleanups.Unlock()
	return run
}

// Exit runs the registered cleanups, last first, and exits with code.
func Exit(code int) {
	cleanups.Lock()
	fns := cleanups.fns
	cleanups.fns = nil
	cleanups.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
	os.Exit(code)
}

// TugCmd is tug with args in namespace ns.
func (e *Env) TugCmd(ns string, args ...string) *exec.Cmd {
	c := exec.Command(e.Tug, append(args, "-n", ns)...)
	c.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig, "NO_COLOR=1")
	return c
}

// KubectlCmd is kubectl with args in namespace ns.
func (e *Env) KubectlCmd(ns string, args ...string) *exec.Cmd {
	return exec.Command(e.Kubectl, append([]string{"--kubeconfig", e.Kubeconfig, "-n", ns}, args...)...)
}

// MustTug runs tug and ends the benchmark when it fails.
func (e *Env) MustTug(ns string, args ...string) string {
	out, err := e.TugCmd(ns, args...).CombinedOutput()
	Check("tug "+strings.Join(args, " "), withOutput(err, out))
	return string(out)
}

// MustKubectl runs kubectl and ends the benchmark when it fails.
func (e *Env) MustKubectl(ns string, args ...string) string {
	out, err := e.KubectlCmd(ns, args...).CombinedOutput()
	Check("kubectl "+strings.Join(args, " "), withOutput(err, out))
	return string(out)
}

func withOutput(err error, out []byte) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%v: %.2000s", err, out)
}

// Result is one finished command.
type Result struct {
	Wall           time.Duration
	CPU            time.Duration // user + system
	MaxRSSKiB      int64
	Stdout, Stderr []byte
	Walls          []time.Duration // Rounds: every round's wall time
}

// Run runs c to its end and measures it; a failing command is an error.
func Run(c *exec.Cmd) (Result, error) {
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	err := c.Run()
	r := Result{Wall: time.Since(start), Stdout: out.Bytes(), Stderr: errb.Bytes()}
	if c.ProcessState != nil {
		r.CPU = c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSSKiB = maxRSSKiB(ru)
		}
	}
	if err != nil {
		return r, fmt.Errorf("%s: %v: %.1000s", strings.Join(c.Args, " "), err, errb.Bytes())
	}
	return r, nil
}

// Usage reads a finished command's CPU time and peak memory.
func Usage(c *exec.Cmd) (cpu time.Duration, rssKiB int64) {
	if c.ProcessState == nil {
		return 0, 0
	}
	cpu = c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rssKiB = maxRSSKiB(ru)
	}
	return cpu, rssKiB
}

// Rounds runs each command rounds times, interleaved so load spikes hit
// all of them, after one unmeasured warm-up run each, and returns the
// median wall time and peak memory of each.
func Rounds(rounds int, cmds ...func() *exec.Cmd) ([]Result, error) {
	samples := make([][]Result, len(cmds))
	for r := 0; r <= rounds; r++ {
		for i, mk := range cmds {
			res, err := Run(mk())
			if err != nil {
				return nil, err
			}
			if r > 0 {
				samples[i] = append(samples[i], res)
			}
		}
	}
	out := make([]Result, len(cmds))
	for i, s := range samples {
		walls := make([]time.Duration, len(s))
		cpus := make([]time.Duration, len(s))
		rss := make([]int64, len(s))
		for j, x := range s {
			walls[j], cpus[j], rss[j] = x.Wall, x.CPU, x.MaxRSSKiB
		}
		out[i] = Result{Wall: Median(walls), CPU: Median(cpus), MaxRSSKiB: median64(rss), Walls: walls}
	}
	return out, nil
}

// Median of durations (the middle one).
func Median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func median64(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// tugTrace is tug's -v 6 line; kubectlTrace is klog's round_trippers line
// for an answered request at -v 6.
var (
	tugTrace     = regexp.MustCompile(`(?m)^trace: \S+ ([A-Z]+) (\S+) `)
	kubectlTrace = regexp.MustCompile(`(?m)round_trippers\.go:\d+\] .*(?:"Response" verb="([A-Z]+)" url="([^"]+)"|\b(GET|POST|PUT|PATCH|DELETE) (https?://\S+) \d{3})`)
)

// Requests is the API requests in a tug or kubectl -v 6 stderr, by
// "METHOD path" (watches as WATCH).
func Requests(stderr []byte) (total int, byKind map[string]int) {
	byKind = map[string]int{}
	add := func(method, url string) {
		if i := strings.Index(url, "://"); i >= 0 {
			url = url[i+3:]
			if j := strings.IndexByte(url, '/'); j >= 0 {
				url = url[j:]
			}
		}
		path, query, _ := strings.Cut(url, "?")
		if strings.Contains(query, "watch=true") {
			method = "WATCH"
		}
		byKind[method+" "+path]++
		total++
	}
	for _, m := range tugTrace.FindAllSubmatch(stderr, -1) {
		add(string(m[1]), string(m[2]))
	}
	for _, m := range kubectlTrace.FindAllSubmatch(stderr, -1) {
		if len(m[1]) > 0 {
			add(string(m[1]), string(m[2]))
		} else {
			add(string(m[3]), string(m[4]))
		}
	}
	return total, byKind
}

// CountRequests runs c with -v 6 appended and returns its request count.
func CountRequests(c *exec.Cmd) (int, error) {
	c.Args = append(c.Args, "-v", "6")
	r, err := Run(c)
	if err != nil {
		return 0, err
	}
	n, _ := Requests(r.Stderr)
	return n, nil
}

// Row is one line of docs/benchmarks.md.
type Row struct {
	Group     string `json:"group"`     // the table it goes in
	Benchmark string `json:"benchmark"` // what was measured, with its scale
	Tug       string `json:"tug"`       // tug's figures
	Kubectl   string `json:"kubectl"`   // the kubectl command's figures
	Ratio     string `json:"ratio"`
	Goal      string `json:"goal"`
	Met       bool   `json:"met"`
	Requests  string `json:"requests"` // tug's API requests (and kubectl's)
	Note      string `json:"note,omitempty"`
	// Set by bench/report when it keeps the row in docs/benchmarks.jsonl:
	// the bench/run.sh section that measured it, and that run's date and
	// commit (a run with ONLY= keeps the other sections' rows as they were).
	Section string `json:"section,omitempty"`
	Date    string `json:"date,omitempty"`
	Commit  string `json:"commit,omitempty"`
}

// Emit prints a row and appends it to the -out file.
func (e *Env) Emit(r Row) {
	fmt.Printf("%s | %s: tug %s | kubectl %s | ratio %s | goal %s (%s) | requests %s %s\n",
		r.Group, r.Benchmark, r.Tug, r.Kubectl, r.Ratio, r.Goal, Verdict(r.Met), r.Requests, r.Note)
	if e.Out == "" {
		return
	}
	f, err := os.OpenFile(e.Out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	Check("results file", err)
	defer f.Close()
	b, _ := json.Marshal(r)
	_, err = f.Write(append(b, '\n'))
	Check("results file", err)
}

// Verdict is "met" or "MISSED".
func Verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// Ms formats a duration in milliseconds or seconds.
func Ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000)
}

// MsList is durations in whole ms, in the order they were measured: a
// row's note shows every run, so a reader sees the spread behind a median.
func MsList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprint(d.Milliseconds())
	}
	return strings.Join(parts, ", ") + " ms"
}

// MiB formats KiB as MiB.
func MiB(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// Ratio is a/b formatted as "0.42x".
func Ratio(a, b float64) (float64, string) {
	if b == 0 {
		return 0, "-"
	}
	return a / b, fmt.Sprintf("%.2fx", a/b)
}

// BenchLabel marks what the benchmarks create (namespaces), so that
// bench/run.sh can delete whatever a killed benchmark left behind.
const BenchLabel = "tug.dev/bench"

// Namespace makes a fresh namespace (deleting one left from an earlier
// run first) and returns a function that deletes it and waits for it;
// the deletion is registered with Cleanup too, so a failure or an
// interrupt deletes it as well.
func (e *Env) Namespace(ctx context.Context, name string) func() {
	e.DeleteNamespace(ctx, name)
	done := Cleanup(func() { e.DeleteNamespace(context.Background(), name) })
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{BenchLabel: "1"}}}, metav1.CreateOptions{})
	Check("creating namespace "+name, err)
	return done
}

// DeleteNamespace deletes its pods at once (units on fake nodes would
// wait for a kubelet forever), then the namespace, and waits until it is
// gone.
func (e *Env) DeleteNamespace(ctx context.Context, name string) {
	zero := int64(0)
	_ = e.Client.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	err := e.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := e.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(time.Second)
	}
	fmt.Fprintf(os.Stderr, "bench: namespace %s is still terminating after 5 minutes\n", name)
}

// Parallel runs fn(0..n-1) with width goroutines and returns the first error.
func Parallel(n, width int, fn func(i int) error) error {
	errs := make(chan error, n)
	sem := make(chan struct{}, width)
	done := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				errs <- fn(i)
			}()
		}
		for i := 0; i < width; i++ {
			sem <- struct{}{}
		}
		close(done)
	}()
	<-done
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Sockets counts the open sockets of a running process (its connections
// to the API server, for a tug or kubectl that only talks to it).
func Sockets(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// SampleImage is the app image the benchmarks deploy: test/images/sample,
// which the local cluster imports into every node (tags v1 and v2 differ
// only in their version string, so a deploy of the other one rolls out).
const SampleImage = "localhost/tug/sample"

// SampleApp makes app in ns with one process, proc, of units units, all
// Ready when it returns: the sample image logging a heartbeat every second,
// with tiny requests (1m CPU, 4Mi memory) so that many units fit next to
// whatever else the shared cluster runs. A "web" process serves HTTP (with
// the readiness probe and stop delay tug gives web units); any other runs
// `sample worker`: no listener, no probe, exits at once on SIGTERM.
func (e *Env) SampleApp(ns, app, proc string, units int) {
	e.MustTug(ns, "app", "create", app)
	e.MustTug(ns, "env", "set", app, "HEARTBEAT=1s", "--no-restart")
	e.MustTug(ns, "app", "deploy", app, "--image", SampleImage+":v1", "--process", SampleProcess(proc), "--timeout", "5m")
	e.MustTug(ns, "app", "limit", "set", app, "-p", proc, "--cpu-request", "1m", "--memory-request", "4Mi", "--timeout", "5m")
	e.MustTug(ns, "app", "scale", app, fmt.Sprintf("%s=%d", proc, units), "--timeout", "15m")
	e.WaitUnits(ns, app, proc, units)
}

// WaitUnits waits until proc's pods are units Ready units and nothing
// else: a unit the last rollout replaced may still be stopping (a web
// unit keeps serving for a few seconds), and it would be one more log
// stream. A benchmark's setup, so it polls.
func (e *Env) WaitUnits(ns, app, proc string, units int) {
	sel := fmt.Sprintf("tug.dev/app=%s,tug.dev/process=%s", app, proc)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		pods, err := e.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		Check("units", err)
		ready := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		if ready == units && len(pods.Items) == units {
			return
		}
		if time.Now().After(deadline) {
			Check("units", fmt.Errorf("%s: %d pods, %d ready, after 5 minutes; want %d", sel, len(pods.Items), ready, units))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// SampleProcess is SampleApp's --process value for proc: every deploy of
// the app passes it again (without one, tug runs the image's own command
// as the only process, web).
func SampleProcess(proc string) string {
	if proc == "web" {
		return "web=sample"
	}
	return proc + "=sample worker"
}

// FreePodSlots is how many more pods the cluster's schedulable nodes
// take: their allocatable pods less the pods bound to them that have not
// finished. The cluster is shared, so it is a snapshot.
func (e *Env) FreePodSlots(ctx context.Context) (free, nodes int, perNode int64) {
	list, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Check("nodes", err)
	pods, err := e.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	Check("pods", err)
	bound := map[string]int{}
	for _, p := range pods.Items {
		bound[p.Spec.NodeName]++
	}
	for _, nd := range list.Items {
		if nd.Spec.Unschedulable {
			continue
		}
		nodes++
		perNode = nd.Status.Allocatable.Pods().Value()
		free += int(perNode) - bound[nd.Name]
	}
	return free, nodes, perNode
}

// Log line prefixes that name the unit: tug logs' "UNIT | " (without
// colour) and kubectl logs --prefix's "[pod/UNIT/CONTAINER] ".
var (
	TugLogPrefix     = regexp.MustCompile(`^(\S+)\s+\| `)
	KubectlLogPrefix = regexp.MustCompile(`^\[pod/([^/\]]+)/`)
)

// Follow is a logs -f command followed until every unit had a line.
type Follow struct {
	First, All time.Duration // from start to the first line, to a line from every unit
	Sockets    int           // the command's open sockets when the last unit's first line came
	MaxRSSKiB  int64
	Stderr     []byte
}

// FollowLogs starts c, a logs -f command whose lines name their unit
// (prefix's first group), until a line from each of units units has come
// or timeout passed; then it interrupts c and waits for it.
func FollowLogs(c *exec.Cmd, prefix *regexp.Regexp, units int, timeout time.Duration) (Follow, error) {
	var f Follow
	stdout, err := c.StdoutPipe()
	if err != nil {
		return f, err
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	start := time.Now()
	if err := c.Start(); err != nil {
		return f, err
	}
	seen := map[string]bool{}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if f.First == 0 {
				f.First = time.Since(start)
			}
			if m := prefix.FindSubmatch(sc.Bytes()); m != nil && !seen[string(m[1])] {
				seen[string(m[1])] = true
				if len(seen) == units {
					f.All = time.Since(start)
					f.Sockets = Sockets(c.Process.Pid)
					done <- nil
					_, _ = io.Copy(io.Discard, stdout)
					return
				}
			}
		}
		done <- fmt.Errorf("output ended after a line from %d of %d units: %s", len(seen), units, stderr.Bytes())
	}()
	select {
	case err = <-done:
	case <-time.After(timeout):
		err = fmt.Errorf("no line from each of %d units within %s", units, timeout)
	}
	_ = c.Process.Signal(os.Interrupt)
	_ = c.Wait()
	_, f.MaxRSSKiB = Usage(c)
	f.Stderr = stderr.Bytes()
	if err != nil {
		return f, fmt.Errorf("%s: %w", strings.Join(c.Args, " "), err)
	}
	return f, nil
}

// absBinary is path made absolute when it is a relative path with a
// folder in it ("bin/tug"); a bare name ("kubectl") is left to $PATH.
func absBinary(path string) string {
	if !strings.ContainsRune(path, '/') || filepath.IsAbs(path) {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return abs
}
