// Command testreport reads `go test -json` on stdin and prints what a plain
// `go test` prints (each package's ok/FAIL line, and the whole output of
// every test that failed, as it ends), then the slowest tests: where the
// suite's time goes. With -events FILE it also keeps every event there.
//
//	go test -json ./... | go run ./hack/testreport -slowest 25
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type result struct {
	name    string
	elapsed float64
}

func main() {
	slowest := flag.Int("slowest", 20, "how many of the slowest tests to list at the end")
	keep := flag.String("events", "", "file to keep every event in (JSON lines)")
	flag.Parse()
	var events io.Writer = io.Discard
	if *keep != "" {
		f, err := os.Create(*keep)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(1)
		}
		defer f.Close()
		events = f
	}
	r := newReporter(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = events.Write(append(append([]byte{}, line...), '\n'))
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			fmt.Println(string(line)) // not an event (a build error): pass it on
			continue
		}
		r.add(e)
	}
	r.summary(*slowest)
}

type reporter struct {
	out    io.Writer
	buf    map[string]*strings.Builder // output per package/test until it ends
	tests  []result
	failed []string
}

func newReporter(out io.Writer) *reporter {
	return &reporter{out: out, buf: map[string]*strings.Builder{}}
}

func (r *reporter) add(e event) {
	key := e.Package + " " + e.Test
	switch e.Action {
	case "build-output": // a compile error, as go build prints it
		fmt.Fprint(r.out, e.Output)
	case "output":
		b := r.buf[key]
		if b == nil {
			b = &strings.Builder{}
			r.buf[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		r.end(e, key)
	}
}

// end prints what a test or package that just ended leaves in the log: a
// failed test's whole output, a package's result line (and its own output
// when it failed: a build error, a panic outside a test, a timeout).
func (r *reporter) end(e event, key string) {
	out := ""
	if b := r.buf[key]; b != nil {
		out = b.String()
		delete(r.buf, key)
	}
	if e.Test != "" {
		if e.Action == "pass" || e.Action == "fail" {
			r.tests = append(r.tests, result{e.Package + "." + e.Test, e.Elapsed})
		}
		if e.Action == "fail" {
			r.failed = append(r.failed, e.Package+"."+e.Test)
			fmt.Fprint(r.out, out)
		}
		return
	}
	switch e.Action {
	case "fail":
		fmt.Fprint(r.out, out)
		if !strings.Contains(out, "FAIL\t"+e.Package) {
			fmt.Fprintf(r.out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	case "pass":
		fmt.Fprintf(r.out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
	}
}

func (r *reporter) summary(n int) {
	// top-level tests only: a subtest's time is inside its parent's
	var top []result
	for _, t := range r.tests {
		if !strings.Contains(t.name[strings.LastIndex(t.name, ".")+1:], "/") {
			top = append(top, t)
		}
	}
	sort.Slice(top, func(i, j int) bool { return top[i].elapsed > top[j].elapsed })
	if len(top) > n {
		top = top[:n]
	}
	if len(top) > 0 {
		fmt.Fprintf(r.out, "\nslowest tests (a test's own wall time; parallel tests overlap):\n")
		for _, t := range top {
			fmt.Fprintf(r.out, "  %7.1fs  %s\n", t.elapsed, t.name)
		}
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(r.out, "\n%d failed:\n", len(r.failed))
		for _, f := range r.failed {
			fmt.Fprintf(r.out, "  %s\n", f)
		}
	}
}
