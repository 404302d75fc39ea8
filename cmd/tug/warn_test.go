package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
)

// A change may give the same warning on each render (a rollout and its
// restore): the user reads it once per command, on a line of its own.
func TestWarnOncePerCommand(t *testing.T) {
	ios, _, _, errOut := cli.TestIOStreams()
	warn := warnOnce(ios)
	warn("the allow list is not enforced at the router")
	warn("the allow list is not enforced at the router")
	warn("another\x1b[2Jthing")
	want := "warning: the allow list is not enforced at the router\nwarning: another"
	if got := errOut.String(); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 2 || strings.Contains(got, "\x1b[2J") {
		t.Errorf("stderr = %q", got)
	}
}
