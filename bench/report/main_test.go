package main

import (
	"strings"
	"testing"

	"tug.dev/tug/bench/internal/benchkit"
)

func TestMergeReplacesTheMeasuredSectionsAndKeepsTheOthers(t *testing.T) {
	kept := []benchkit.Row{
		{Group: "A", Benchmark: "a1", Section: "one", Date: "old"},
		{Group: "B", Benchmark: "b1", Section: "two", Date: "old"},
		{Group: "B", Benchmark: "b2", Section: "two", Date: "old"},
		{Group: "C", Benchmark: "c1", Section: "three", Date: "old"},
		{Group: "Z", Benchmark: "from before sections"},
	}
	fresh := map[string][]benchkit.Row{"two": {{Group: "B", Benchmark: "b1", Section: "two", Date: "new"}}}
	got := merge(kept, fresh, []string{"one", "two", "three"})
	var names []string
	for _, r := range got {
		names = append(names, r.Benchmark+"@"+r.Date)
	}
	if want := "a1@old b1@new c1@old"; strings.Join(names, " ") != want {
		t.Fatalf("merge: %s; want %s (b2 went with its section's new run; a row with no section is dropped)", strings.Join(names, " "), want)
	}
}

func TestRenderSaysWhichGroupsAreKeptFromAnEarlierRun(t *testing.T) {
	run := runInfo{Date: "now", Commit: "c2", Took: "1 min 0 s", Partial: true, Times: [][2]string{{"two", "50"}}}
	rows := []benchkit.Row{
		{Group: "A", Benchmark: "a1", Date: "then", Commit: "c1"},
		{Group: "B", Benchmark: "b1", Date: "now", Commit: "c2"},
	}
	doc := render(run, rows, "")
	if !strings.Contains(doc, "## A\n\nKept from an earlier run: then at c1.") {
		t.Errorf("group A measured earlier is not said to be kept:\n%s", doc)
	}
	if strings.Contains(doc, "## B\n\nKept") {
		t.Errorf("group B measured now is said to be kept:\n%s", doc)
	}
	if !strings.Contains(doc, "this run (ONLY=two) took 1 min 0 s") || !strings.Contains(doc, "per section: two 50 s") {
		t.Errorf("the head does not say what ran and how long each section took:\n%s", doc)
	}
}
