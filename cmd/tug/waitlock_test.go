package main

import (
	"strings"
	"testing"
)

// A negative --wait-lock is refused as the flags are parsed: exit 2
// before a build or any request (the kubeconfig is never read).
func TestNegativeWaitLockRefusedBeforeAnything(t *testing.T) {
	for _, args := range [][]string{
		{"app", "deploy", "shop", "--wait-lock", "-1s"},
		{"app", "scale", "shop", "web=2", "--wait-lock", "-5m"},
	} {
		r := execute(t, nil, append([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "must not be negative") || strings.Contains(r.stderr, "kubeconfig") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 refusing the negative wait before reading the kubeconfig", args, r.code, r.stderr)
		}
	}
}
