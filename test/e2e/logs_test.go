package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestLogsFollowNewUnits(t *testing.T) {
	h := New(t)
	pods := h.deployShop("shop", 1, "HEARTBEAT=1s")
	first := pods[0].Name

	cmd := exec.Command(env.tug, "logs", "shop", "-f")
	cmd.Env = h.tugEnv(nil)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	s := NewStream(stdout)
	s.WaitFor(t, first+" | sample v1: heartbeat", 30*time.Second)

	// a unit created after logs started: its lines appear, from its first
	h.mustTug("app", "scale", "shop", "web=2")
	var second string
	for _, p := range h.waitUnits("shop", "web", 2, sampleV1) {
		if p.Name != first {
			second = p.Name
		}
	}
	s.WaitFor(t, second+" | sample v1: started mode=serve", 30*time.Second)
	s.WaitFor(t, second+" | sample v1: heartbeat", 30*time.Second)
	// the first unit is still followed
	s.WaitFor(t, first+" | sample v1: heartbeat", 30*time.Second)

	// a one-off run shows up too
	h.mustTug("run", "shop", "--", "sh", "-c", "echo from-a-run; sleep 2")
	s.WaitFor(t, "| from-a-run", 30*time.Second)

	// Ctrl-C ends it cleanly
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("logs -f after Ctrl-C: exit %d (%v), want 0", code, err)
	}
}

var stampRE = regexp.MustCompile(`^(\S+)\s+\| (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) `)

func TestLogsMergedPrefixedAndSelected(t *testing.T) {
	h := New(t)
	pods := h.deployShop("shop", 2, "HEARTBEAT=1s")
	names := []string{pods[0].Name, pods[1].Name}
	sort.Strings(names)
	h.Eventually(30*time.Second, "three heartbeats in each unit", func() (bool, error) {
		r := h.Tug("logs", "shop", "--tail", "-1")
		for _, n := range names {
			if strings.Count(r.Stdout, n+" | sample v1: heartbeat") < 3 {
				return false, fmt.Errorf("not yet: %s", r.Stdout)
			}
		}
		return true, nil
	})

	// --tail applies per unit; every line is prefixed; lines are in time order
	r := h.mustTug("logs", "shop", "--tail", "2", "--timestamps")
	out := lines(r.Stdout)
	if len(out) != 4 {
		t.Fatalf("logs --tail 2 of 2 units: want 4 lines, got:\n%s", r.Stdout)
	}
	var last string
	per := map[string]int{}
	for _, l := range out {
		m := stampRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q should be '<unit> | <timestamp> <text>'", l)
		}
		per[m[1]]++
		if m[2] < last {
			t.Fatalf("lines are not in time order:\n%s", r.Stdout)
		}
		last = m[2]
	}
	if per[names[0]] != 2 || per[names[1]] != 2 {
		t.Fatalf("want 2 lines of each unit: %v", per)
	}

	// --unit: one unit, no prefix
	r = h.mustTug("logs", "shop", "--unit", names[1], "--tail", "1")
	if got := lines(r.Stdout); len(got) != 1 || !strings.HasPrefix(got[0], "sample v1: ") {
		t.Fatalf("logs --unit: %q", r.Stdout)
	}
	// --since keeps to the window
	r = h.mustTug("logs", "shop", "--since", "1h")
	if !strings.Contains(r.Stdout, "started mode=serve") {
		t.Fatalf("logs --since 1h should start from the units' first lines:\n%s", r.Stdout)
	}
	// an unknown unit lists the valid ones; an unknown process is a usage error
	if r := h.Tug("logs", "shop", "--unit", "nope"); r.Code != 1 || !strings.Contains(r.Stderr, names[0]) {
		t.Fatalf("logs --unit nope: %s", r)
	}
	if r := h.Tug("logs", "shop", "-p", "worker"); r.Code != 2 || !strings.Contains(r.Stderr, "web") {
		t.Fatalf("logs -p worker: %s", r)
	}
	// --previous of units that never restarted: one line for all, no failure
	if r := h.Tug("logs", "shop", "--previous"); r.Code != 0 || r.Stderr != "no unit of app \"shop\" has restarted, so none has a previous log\n" {
		t.Fatalf("logs --previous: %s", r)
	}
}
