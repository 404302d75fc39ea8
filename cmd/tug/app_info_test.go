package main

import (
	"context"
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

func TestNewAppInfoCmd(t *testing.T) {
	o, err := parseCmd(t, newAppInfoCmd, "shop", "-o", "yaml")
	if err != nil || o == nil || o.App != "shop" || o.Output.Format != cli.OutputYAML {
		t.Fatalf("error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newAppInfoCmd, "shop", "--no-headers")
	wantParseError(t, o, err, "unknown flag: --no-headers")
	o, err = parseCmd(t, newAppInfoCmd, "shop_1")
	wantParseError(t, o, err, `invalid app name "shop_1"`)
}

func TestRunAppInfo(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Team: "payments"})
	ios, _, out, _ := cli.TestIOStreams()
	o := &appInfoOptions{IO: ios, Store: fixtureStore(p), App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runAppInfo(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"App:        shop\n", "Team:       payments\n", "No processes yet: deploy an image."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	o.App = "blog"
	if err := runAppInfo(context.Background(), o); !app.IsNotFound(err) {
		t.Errorf("a missing app: %v", err)
	}
}
