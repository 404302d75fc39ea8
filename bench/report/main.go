// Command report turns the rows the benchmarks wrote (JSON lines) into
// docs/benchmarks.md, with the machine and the date of the run.
//
//	go run ./bench/report -rows ROWS.jsonl -doc docs/benchmarks.md
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

func main() {
	in := flag.String("rows", "", "rows (JSON lines)")
	out := flag.String("doc", "docs/benchmarks.md", "markdown file to write")
	k8s := flag.String("k8s", "", "the cluster's Kubernetes version")
	took := flag.String("took", "", "how long make bench took")
	quick := flag.Bool("quick", false, "the rows come from a BENCH_QUICK smoke run (small scales)")
	notes := flag.String("notes", "bench/notes.md", "text appended after the tables (what the numbers do not say)")
	flag.Parse()
	f, err := os.Open(*in)
	benchkit.Check("rows", err)
	var groups []string
	rows := map[string][]benchkit.Row{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r benchkit.Row
		benchkit.Check("rows", json.Unmarshal(sc.Bytes(), &r))
		if _, ok := rows[r.Group]; !ok {
			groups = append(groups, r.Group)
		}
		rows[r.Group] = append(rows[r.Group], r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (bench/run.sh): every benchmark against the local cluster, tug and\n")
	fmt.Fprintf(&b, "the kubectl command a user would run instead, side by side in one run. Do not edit by hand\n")
	fmt.Fprintf(&b, "(notes: bench/notes.md).\n\n")
	if *quick {
		fmt.Fprintf(&b, "**A BENCH_QUICK smoke run at small scales: not the benchmarks' figures; do not commit.**\n\n")
	}
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s\n- Commit: %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), commit())
	if *k8s != "" {
		fmt.Fprintf(&b, "- Cluster: the local cluster (test/cluster), Kubernetes %s; kubectl is the cluster's own version\n", *k8s)
	}
	if *took != "" {
		fmt.Fprintf(&b, "- make bench took %s (wall, setup and clean-up included)\n", *took)
	}
	b.WriteString("\nPeak memory is the process's max RSS (wait4 rusage); requests are counted from -v 6 trace lines.\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "\n## %s\n\n| benchmark | tug | kubectl | ratio | goal | met | tug requests | note |\n|---|---|---|---|---|---|---|---|\n", g)
		for _, r := range rows[g] {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(r.Benchmark), cell(r.Tug), cell(r.Kubectl), cell(r.Ratio), cell(r.Goal), benchkit.Verdict(r.Met), cell(r.Requests), cell(r.Note))
		}
	}
	if text, err := os.ReadFile(*notes); err == nil {
		b.WriteString("\n")
		b.Write(text)
	}
	benchkit.Check("write", os.WriteFile(*out, []byte(b.String()), 0o644))
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.1f GiB memory", float64(kb)/1024/1024)
		}
	}
	kernel, _ := exec.Command("uname", "-sr").Output()
	return fmt.Sprintf("%d CPUs (nproc)%s, %s, %s", runtime.NumCPU(), mem, strings.TrimSpace(string(kernel)), runtime.Version())
}

func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
