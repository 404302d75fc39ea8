package main

import (
	"strings"
	"testing"
)

func TestReportPrintsFailuresWholeAndPassesAsOneLine(t *testing.T) {
	var out strings.Builder
	r := newReporter(&out)
	for _, e := range []event{
		{Action: "output", Package: "p", Test: "TestGood", Output: "=== RUN   TestGood\n"},
		{Action: "output", Package: "p", Test: "TestBad", Output: "    x_test.go:9: what went wrong\n"},
		{Action: "pass", Package: "p", Test: "TestGood", Elapsed: 3},
		{Action: "fail", Package: "p", Test: "TestBad", Elapsed: 7},
		{Action: "output", Package: "p", Output: "FAIL\n"},
		{Action: "fail", Package: "p", Elapsed: 10},
		{Action: "pass", Package: "q", Elapsed: 1},
	} {
		r.add(e)
	}
	r.summary(5)
	got := out.String()
	for _, want := range []string{"what went wrong", "FAIL\tp\t10.000s", "ok  \tq\t1.000s", "7.0s  p.TestBad\n      3.0s  p.TestGood", "1 failed:\n  p.TestBad"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=== RUN   TestGood") {
		t.Errorf("a passing test's output is printed:\n%s", got)
	}
}
