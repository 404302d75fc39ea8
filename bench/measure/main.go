//go:build unix

// Command measure runs two commands in interleaved rounds and prints the
// median wall time and peak memory (max RSS) of each, and their ratios.
// Interleaving makes both see the same machine load; medians ignore the odd
// slow run. It is a benchmark, not a test: it prints numbers and passes
// judgement only as "goal met" lines.
//
//	go run ./bench/measure -n 30 -a 'bin/tug version --client' -b 'kubectl version --client'
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

type sample struct {
	wall   time.Duration
	rssKiB int64
}

func main() {
	n := flag.Int("n", 30, "rounds")
	a := flag.String("a", "", "first command (the one judged)")
	b := flag.String("b", "", "second command (the baseline)")
	wallGoal := flag.Float64("wall-goal", 0.5, "goal for the wall time ratio a/b")
	memGoal := flag.Float64("mem-goal", 0.6, "goal for the peak memory ratio a/b")
	name := flag.String("name", "", "benchmark name of the row written to -out")
	note := flag.String("note", "", "what the row's numbers do not say")
	sizeGoal := flag.Float64("size-goal", 0, "with -name: also a row for the size of a's binary against b's, with this goal")
	sizeNote := flag.String("size-note", "", "the binary size row's note")
	env := benchkit.Setup(false)
	if *a == "" || *b == "" {
		fmt.Fprintln(os.Stderr, "usage: measure -a CMD -b CMD [-n ROUNDS]")
		os.Exit(2)
	}
	cmdA, cmdB := strings.Fields(*a), strings.Fields(*b)
	// One unmeasured round each, so both start with warm page caches.
	for _, c := range [][]string{cmdA, cmdB} {
		if _, err := run(c); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", strings.Join(c, " "), err)
			os.Exit(1)
		}
	}
	var sa, sb []sample
	for i := 0; i < *n; i++ {
		for _, x := range []struct {
			cmd []string
			out *[]sample
		}{{cmdA, &sa}, {cmdB, &sb}} {
			s, err := run(x.cmd)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", strings.Join(x.cmd, " "), err)
				os.Exit(1)
			}
			*x.out = append(*x.out, s)
		}
	}
	wa, ma := medians(sa)
	wb, mb := medians(sb)
	fmt.Printf("%-45s wall %7.1f ms   peak RSS %7.1f MiB\n", *a, ms(wa), mib(ma))
	fmt.Printf("%-45s wall %7.1f ms   peak RSS %7.1f MiB\n", *b, ms(wb), mib(mb))
	wr, mr := float64(wa)/float64(wb), float64(ma)/float64(mb)
	fmt.Printf("ratio wall %.2fx (goal <= %.2fx: %s)   peak RSS %.2fx (goal <= %.2fx: %s)   rounds %d\n",
		wr, *wallGoal, verdict(wr <= *wallGoal), mr, *memGoal, verdict(mr <= *memGoal), *n)
	if *name != "" {
		env.Emit(benchkit.Row{Group: "Start-up", Benchmark: *name,
			Tug:     fmt.Sprintf("%.1f ms, %.1f MiB", ms(wa), mib(ma)),
			Kubectl: fmt.Sprintf("%s: %.1f ms, %.1f MiB", strings.Join(cmdB[1:], " "), ms(wb), mib(mb)),
			Ratio:   fmt.Sprintf("wall %.2fx, memory %.2fx", wr, mr), Goal: fmt.Sprintf("wall <= %.2fx, memory <= %.2fx", *wallGoal, *memGoal),
			Met: wr <= *wallGoal && mr <= *memGoal, Requests: "0", Note: strings.TrimPrefix(*note+fmt.Sprintf("; median of %d interleaved rounds", *n), "; ")})
		if *sizeGoal > 0 {
			sa, sb := size(cmdA[0]), size(cmdB[0])
			r := float64(sa) / float64(sb)
			env.Emit(benchkit.Row{Group: "Start-up", Benchmark: "binary size",
				Tug: fmt.Sprintf("%.1f MB", float64(sa)/1e6), Kubectl: fmt.Sprintf("the kubectl binary: %.1f MB", float64(sb)/1e6),
				Ratio: fmt.Sprintf("%.2fx", r), Goal: fmt.Sprintf("<= %.2fx", *sizeGoal), Met: r <= *sizeGoal, Requests: "-", Note: *sizeNote})
		}
	}
}

// size is the size of the file a command runs (through symlinks).
func size(bin string) int64 {
	if p, err := exec.LookPath(bin); err == nil {
		bin = p
	}
	fi, err := os.Stat(bin)
	benchkit.Check("binary size", err)
	return fi.Size()
}

func run(argv []string) (sample, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, err
	}
	wall := time.Since(start)
	_, rss := benchkit.Usage(cmd)
	return sample{wall: wall, rssKiB: rss}, nil
}

func medians(s []sample) (time.Duration, int64) {
	walls := make([]time.Duration, len(s))
	rss := make([]int64, len(s))
	for i, x := range s {
		walls[i], rss[i] = x.wall, x.rssKiB
	}
	slices.Sort(walls)
	slices.Sort(rss)
	return walls[len(walls)/2], rss[len(rss)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
func mib(kib int64) float64      { return float64(kib) / 1024 }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
