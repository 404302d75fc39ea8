package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
)

// A run number below 1 is refused before any request (no cluster here: a
// request would fail with another exit code).
func TestJobLogsRunBelowOneExit2(t *testing.T) {
	for _, run := range []string{"0", "-2"} {
		r := execute(t, nil, "job", "logs", "shop", "report", "--run", run)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "numbered from 1") {
			t.Errorf("--run %s: exit %d, stderr %q", run, r.code, r.stderr)
		}
	}
}
