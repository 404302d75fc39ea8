package e2e

import (
	"strings"
	"testing"
)

// A namespace that does not exist: one line saying so and what to do,
// exit 1, from a command that creates there and from one that lists.
func TestMissingNamespace(t *testing.T) {
	h := New(t)
	missing := h.NS + "-missing" // never created
	want := "error: namespace \"" + missing + "\" does not exist; create it with 'kubectl create namespace " + missing + "', or pick another with -n\n"
	for _, args := range [][]string{
		{"app", "create", "shop", "-n", missing},
		{"app", "list", "-n", missing},
	} {
		r := h.Tug(args...)
		if r.Code != 1 || r.Stderr != want || r.Stdout != "" {
			t.Errorf("tug %s: %s; want exit 1 and %q", strings.Join(args, " "), r, want)
		}
	}
}
