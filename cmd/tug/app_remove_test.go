package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewAppRemoveCmd(t *testing.T) {
	tests := []struct {
		name          string
		argv          []string
		yes, moveCopy bool
		wantErr       string
	}{
		{name: "asks", argv: []string{"shop"}},
		{name: "yes", argv: []string{"shop", "-y", "--move-copy", "--wait-lock", "30s"}, yes: true, moveCopy: true},
		{name: "no app", argv: []string{}, wantErr: "missing APP"},
		{name: "two apps", argv: []string{"shop", "blog"}, wantErr: `unexpected argument "blog"`},
		{name: "bad app", argv: []string{"shop.v2"}, wantErr: `invalid app name "shop.v2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppRemoveCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" || o.Yes != tt.yes || o.MoveCopy != tt.moveCopy {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}
}

// remove fails on a missing app before it asks; off a terminal it needs
// --yes, and with it the app's record is gone.
func TestRunAppRemove(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop"})
	ctx := context.Background()
	run := func(name string, yes bool) (string, error) {
		ios, _, _, errOut := cli.TestIOStreams()
		o := &appRemoveOptions{Changer: fixtureChanger(p, ios), App: name, Yes: yes,
			Prompter: func() cli.Prompter { return nil }} // never asked off a terminal
		err := runAppRemove(ctx, o)
		return errOut.String(), err
	}
	if _, err := run("blog", false); !app.IsNotFound(err) {
		t.Errorf("a missing app: %v", err)
	}
	if _, err := run("shop", false); err == nil || !strings.Contains(err.Error(), "pass --yes") {
		t.Errorf("without --yes: %v", err)
	}
	if _, err := p.store.GetApp(ctx, "shop"); err != nil {
		t.Fatalf("refused, yet: %v", err)
	}
	stderr, err := run("shop", true)
	if err != nil || !strings.Contains(stderr, `app "shop" removed`) {
		t.Fatalf("--yes: %v, stderr %q", err, stderr)
	}
	if _, err := p.store.GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("removed, yet: %v", err)
	}
}
