//go:build unix

// Command usage benchmarks what the metrics API adds to tug's listings, on
// an app of -units real units (the sample image) once metrics-server knows
// them:
//
//	unit list, with metrics   tug unit list APP      vs  tug unit list APP -o name
//	                          (the PodMetrics LIST alongside the pods' against the pods' LIST alone)
//	unit top                  tug unit top APP --once  vs  kubectl top pods -l SELECTOR
//
// Each reports median wall time and peak memory over -rounds interleaved
// runs, and API requests (-v 6).
//
//	go run ./bench/usage -tug bin/tug -kubectl PATH -kubeconfig FILE [-units 3]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	units  = flag.Int("units", 3, "units of the app")
	rounds = flag.Int("rounds", 9, "timed runs of each command")
)

const ns = "bench-usage"

func main() {
	e := benchkit.Setup(true)
	ctx := context.Background()
	cleanup := e.Namespace(ctx, ns)
	defer cleanup()
	e.MustTug(ns, "app", "create", "bench")
	e.MustTug(ns, "app", "deploy", "bench", "--image", "localhost/tug/sample:v1")
	e.MustTug(ns, "app", "limit", "set", "bench", "-p", "web", "--cpu", "100m", "--memory", "64Mi")
	e.MustTug(ns, "app", "scale", "bench", fmt.Sprintf("web=%d", *units))
	benchkit.Check("metrics", waitUsage(e))

	scale := fmt.Sprintf("%d units with metrics", *units)
	list := func() *exec.Cmd { return e.TugCmd(ns, "unit", "list", "bench") }
	names := func() *exec.Cmd { return e.TugCmd(ns, "unit", "list", "bench", "-o", "name") }
	compare(e, "unit list with CPU and memory against without, "+scale, list, names, "tug unit list -o name (no metrics)", 1.1, 1,
		"tug's own two forms: -o name makes no PodMetrics request; the table's LIST of PodMetrics runs alongside the pods' LIST")
	top := func() *exec.Cmd { return e.TugCmd(ns, "unit", "top", "bench", "--once") }
	ktop := func() *exec.Cmd {
		return e.KubectlCmd(ns, "top", "pods", "-l", "app.kubernetes.io/managed-by=tug,tug.dev/app=bench")
	}
	compare(e, "unit top --once, "+scale, top, ktop, "kubectl top pods -l", 0.5, 0,
		"tug: the app record GET, the pods' LIST and the PodMetrics' LIST at once; kubectl: discovery of the metrics API, then the PodMetrics LIST")
}

// waitUsage waits until unit list shows every unit's CPU (metrics-server
// scrapes every 15 s), polling the command as a user would.
func waitUsage(e *benchkit.Env) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var rows []struct {
			CPU *int64 `json:"cpu"`
		}
		out := e.MustTug(ns, "unit", "list", "bench", "-o", "json")
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			return err
		}
		known := 0
		for _, r := range rows {
			if r.CPU != nil {
				known++
			}
		}
		if known == *units && len(rows) == *units {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d units have metrics after 3 min: is the metrics API served? (cluster.sh ensure-metrics)", known, len(rows))
		}
		time.Sleep(time.Second) // a poll of a command, not a synchronisation: no event says metrics-server scraped
	}
}

// compare measures a against b; reqGoal > 0 judges a's requests against
// b's plus reqGoal.
func compare(e *benchkit.Env, what string, a, b func() *exec.Cmd, bname string, wallGoal float64, reqGoal int, note string) {
	res, err := benchkit.Rounds(*rounds, a, b)
	benchkit.Check(what, err)
	ta, tb := res[0], res[1]
	ar, err := benchkit.CountRequests(a())
	benchkit.Check(what, err)
	br, err := benchkit.CountRequests(b())
	benchkit.Check(what, err)
	wr, wrs := benchkit.Ratio(ta.Wall.Seconds(), tb.Wall.Seconds())
	_, mrs := benchkit.Ratio(float64(ta.MaxRSSKiB), float64(tb.MaxRSSKiB))
	met := wr <= wallGoal
	goal := fmt.Sprintf("wall <= %.1fx", wallGoal)
	if reqGoal > 0 {
		met = met && ar <= br+reqGoal
		goal += fmt.Sprintf(", at most %d more request", reqGoal)
	}
	e.Emit(benchkit.Row{
		Group: "Metrics", Benchmark: what,
		Tug:     fmt.Sprintf("%s, %s", benchkit.Ms(ta.Wall), benchkit.MiB(ta.MaxRSSKiB)),
		Kubectl: fmt.Sprintf("%s: %s, %s", bname, benchkit.Ms(tb.Wall), benchkit.MiB(tb.MaxRSSKiB)),
		Ratio:   fmt.Sprintf("wall %s, memory %s", wrs, mrs),
		Goal:    goal, Met: met,
		Requests: fmt.Sprintf("%d (%s %d)", ar, bname, br),
		Note:     fmt.Sprintf("%s; median of %d interleaved rounds", note, *rounds),
	})
}
