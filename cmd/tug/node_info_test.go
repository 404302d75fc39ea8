package main

import (
	"testing"

	"tug.dev/tug/pkg/node"
)

// The status line adds only what the status word does not already say.
func TestNodeStatus(t *testing.T) {
	for _, tt := range []struct {
		in   node.Info
		want string
	}{
		{node.Info{Status: node.StatusReady}, "ready"},
		{node.Info{Status: node.StatusReady, Cordoned: true, Disabled: true}, "ready (also cordoned, disabled)"},
		{node.Info{Status: node.StatusCordoned, Cordoned: true}, "cordoned"},
		{node.Info{Status: node.StatusDisabled, Cordoned: true, Disabled: true}, "disabled (also cordoned)"},
	} {
		if got := nodeStatus(&tt.in); got != tt.want {
			t.Errorf("nodeStatus(%+v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNodeSystem(t *testing.T) {
	if got := nodeSystem(node.System{KubeletVersion: "v1.33.1", Architecture: "arm64"}); got != "v1.33.1, arm64" {
		t.Errorf("nodeSystem = %q", got)
	}
	if got := nodeSystem(node.System{}); got != "" {
		t.Errorf("nodeSystem of nothing = %q, want no line", got)
	}
}
