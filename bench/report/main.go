// Command report turns the rows the benchmarks wrote (JSON lines, a file per
// bench/run.sh section) into docs/benchmarks.md, with the machine and the
// date of the run. It keeps every row in docs/benchmarks.jsonl too, so a run
// of some sections (make bench ONLY=...) replaces their rows and keeps the
// others, each with the date and commit of the run that measured it.
//
//	go run ./bench/report -dir DIR -sections deploy,route -order startup,deploy,... -doc docs/benchmarks.md -data docs/benchmarks.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

func main() {
	dir := flag.String("dir", "", "folder with rows-SECTION.jsonl and took.txt from this run")
	sections := flag.String("sections", "", "the sections this run measured (comma-separated)")
	order := flag.String("order", "", "every section, in the order bench/run.sh runs them")
	out := flag.String("doc", "docs/benchmarks.md", "markdown file to write")
	data := flag.String("data", "docs/benchmarks.jsonl", "every row kept, with its section, date and commit")
	k8s := flag.String("k8s", "", "the cluster's Kubernetes version")
	took := flag.String("took", "", "how long make bench took")
	quick := flag.Bool("quick", false, "the rows come from a BENCH_QUICK smoke run (small scales)")
	notes := flag.String("notes", "bench/notes.md", "text appended after the tables (what the numbers do not say)")
	built := flag.String("commit", "", "the commit tug was built from (default: git describe now)")
	flag.Parse()

	run := runInfo{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Commit: commitOr(*built), Took: *took, K8s: *k8s, Quick: *quick}
	measured := split(*sections)
	kept, err := readRows(*data)
	if !errors.Is(err, fs.ErrNotExist) {
		benchkit.Check("kept rows", err)
	}
	fresh := map[string][]benchkit.Row{}
	for _, s := range measured {
		rows, err := readRows(filepath.Join(*dir, "rows-"+s+".jsonl"))
		if errors.Is(err, fs.ErrNotExist) {
			err = nil // a section that wrote no row (it failed before its first)
		}
		benchkit.Check("rows of "+s, err)
		for i := range rows {
			rows[i].Section, rows[i].Date, rows[i].Commit = s, run.Date, run.Commit
		}
		fresh[s] = rows
	}
	rows := merge(kept, fresh, split(*order))
	run.Times = readTimes(filepath.Join(*dir, "took.txt"))
	run.Partial = len(measured) < len(split(*order))

	var b strings.Builder
	for _, r := range rows {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	if !*quick {
		benchkit.Check("write", os.WriteFile(*data, []byte(b.String()), 0o644))
	}
	text, _ := os.ReadFile(*notes)
	benchkit.Check("write", os.WriteFile(*out, []byte(render(run, rows, string(text))), 0o644))
}

// runInfo is what the document's head says of the run that wrote it.
type runInfo struct {
	Date, Commit, Took, K8s string
	Quick, Partial          bool
	Times                   [][2]string // section, seconds
}

// merge puts the rows in section order: a section measured now has its new
// rows, any other its kept ones. Kept rows with no section (a file from
// before sections) are dropped once every section has been measured anew.
func merge(kept []benchkit.Row, fresh map[string][]benchkit.Row, order []string) []benchkit.Row {
	var out []benchkit.Row
	for _, s := range order {
		if rows, ok := fresh[s]; ok {
			out = append(out, rows...)
			continue
		}
		for _, r := range kept {
			if r.Section == s {
				out = append(out, r)
			}
		}
	}
	return out
}

func render(run runInfo, rows []benchkit.Row, notes string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (bench/run.sh): every benchmark against the local cluster, tug and\n")
	fmt.Fprintf(&b, "the kubectl command a user would run instead, side by side in one run. Do not edit by hand\n")
	fmt.Fprintf(&b, "(notes: bench/notes.md; every row with its date and commit: docs/benchmarks.jsonl).\n\n")
	if run.Quick {
		fmt.Fprintf(&b, "**A BENCH_QUICK smoke run at small scales: not the benchmarks' figures; do not commit.**\n\n")
	}
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s\n- Commit: %s\n", run.Date, machine(), run.Commit)
	if run.K8s != "" {
		fmt.Fprintf(&b, "- Cluster: the local cluster (test/cluster), Kubernetes %s; kubectl is the cluster's own version\n", run.K8s)
	}
	if run.Took != "" {
		what := "make bench"
		if run.Partial {
			what = "this run (ONLY=" + sectionsOf(run.Times) + ")"
		}
		fmt.Fprintf(&b, "- %s took %s (wall, setup and clean-up included)", what, run.Took)
		if len(run.Times) > 0 {
			var parts []string
			for _, t := range run.Times {
				parts = append(parts, t[0]+" "+t[1]+" s")
			}
			fmt.Fprintf(&b, "; per section: %s", strings.Join(parts, ", "))
		}
		b.WriteString("\n")
	}
	if run.Partial {
		b.WriteString("- Rows of sections this run did not measure are kept from the run that did: their group says when\n")
	}
	b.WriteString("\nPeak memory is the process's max RSS (wait4 rusage); requests are counted from -v 6 trace lines.\n")
	var groups []string
	byGroup := map[string][]benchkit.Row{}
	for _, r := range rows {
		if _, ok := byGroup[r.Group]; !ok {
			groups = append(groups, r.Group)
		}
		byGroup[r.Group] = append(byGroup[r.Group], r)
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "\n## %s\n\n", g)
		if when := keptFrom(byGroup[g], run); when != "" {
			fmt.Fprintf(&b, "Kept from an earlier run: %s.\n\n", when)
		}
		b.WriteString("| benchmark | tug | kubectl | ratio | goal | met | tug requests | note |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range byGroup[g] {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(r.Benchmark), cell(r.Tug), cell(r.Kubectl), cell(r.Ratio), cell(r.Goal), benchkit.Verdict(r.Met), cell(r.Requests), cell(r.Note))
		}
	}
	if notes != "" {
		b.WriteString("\n")
		b.WriteString(notes)
	}
	return b.String()
}

// keptFrom says when a group's rows were measured, if not by this run.
func keptFrom(rows []benchkit.Row, run runInfo) string {
	var whens []string
	for _, r := range rows {
		if r.Date == run.Date && r.Commit == run.Commit {
			continue
		}
		w := r.Date + " at " + r.Commit
		if !slices.Contains(whens, w) {
			whens = append(whens, w)
		}
	}
	return strings.Join(whens, "; ")
}

func sectionsOf(times [][2]string) string {
	var s []string
	for _, t := range times {
		s = append(s, t[0])
	}
	return strings.Join(s, ",")
}

func readRows(path string) ([]benchkit.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []benchkit.Row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r benchkit.Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// readTimes reads took.txt: a line "SECTION SECONDS" per section run.
func readTimes(path string) [][2]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			if _, err := strconv.Atoi(f[1]); err == nil {
				out = append(out, [2]string{f[0], f[1]})
			}
		}
	}
	return out
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
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

// commitOr is built, or when empty the work tree's commit now (edits
// made while a long run ran would be credited to it: run.sh passes the
// one it built from).
func commitOr(built string) string {
	if built != "" {
		return built
	}
	return commit()
}

func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
