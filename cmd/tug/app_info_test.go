package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

// Text in an app's record (written by whoever can write its namespace)
// reaches the terminal without control characters: a move's pool, the
// description, the team, domains.
func TestPrintAppInfoSanitizes(t *testing.T) {
	evil := "x\x1b]0;pwned\x07\x1b[2J"
	in := &app.Info{Description: evil, Domains: []string{evil}, Addresses: []string{evil},
		Move: &app.Move{Role: app.MoveSource, From: "a", To: "b", Pool: evil}}
	in.Name, in.Namespace, in.Team, in.Pool = "shop", "ns", evil, evil
	in.Processes = []app.ProcessSummary{{Name: "web", Command: evil}}
	ios, _, out, _ := cli.TestIOStreams()
	if err := printAppInfo(ios, in); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("control characters reach the terminal:\n%q", got)
	}
	for _, want := range []string{"Move:", "About:", "Team:", "Domains:", "web"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
