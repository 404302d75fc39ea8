package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/session"
)

func TestNewRunCmd(t *testing.T) {
	t.Setenv("TUG_TEST_TOKEN", "from-here")
	tests := []struct {
		name    string
		argv    []string
		check   func(*testing.T, *runOptions)
		wantErr string
	}{
		{name: "a command", argv: []string{"shop", "--", "rake", "db:migrate"},
			check: func(t *testing.T, o *runOptions) {
				if strings.Join(o.Command, " ") != "rake db:migrate" || o.Stdin || o.Detach {
					t.Errorf("options %+v", o.RunOptions)
				}
			}},
		{name: "env and timeout", argv: []string{"shop", "-p", "worker", "-e", "BATCH=500", "-e", "TUG_TEST_TOKEN", "--timeout", "30m", "--", "./reindex"},
			check: func(t *testing.T, o *runOptions) {
				if o.Process != "worker" || o.Env["BATCH"] != "500" || o.Env["TUG_TEST_TOKEN"] != "from-here" || o.Timeout != 30*time.Minute {
					t.Errorf("options %+v", o.RunOptions)
				}
			}},
		{name: "a terminal", argv: []string{"shop", "-it", "--", "/bin/sh"},
			check: func(t *testing.T, o *runOptions) {
				if !o.Stdin || !o.TTY {
					t.Errorf("options %+v", o.RunOptions)
				}
			}},
		{name: "no dash", argv: []string{"shop", "ls"}, wantErr: "'--'"},
		{name: "negative timeout", argv: []string{"shop", "--timeout", "-1s", "--", "ls"}, wantErr: "--timeout must not be negative"},
		{name: "detached with input", argv: []string{"shop", "-d", "-i", "--", "ls"}, wantErr: "--detach cannot be combined with -i or -t"},
		{name: "bad env", argv: []string{"shop", "-e", "=x", "--", "ls"}, wantErr: `invalid config name ""`},
		{name: "bad process", argv: []string{"shop", "-p", "Web", "--", "ls"}, wantErr: "Web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newRunCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" {
				t.Fatalf("error %v, options %+v", err, o)
			}
			tt.check(t, o)
		})
	}
}

func TestNewShellCmd(t *testing.T) {
	o, err := parseCmd(t, newShellCmd, "shop", "shop-web-1", "-p", "web", "-c", "rails console")
	if err != nil || o == nil || o.App != "shop" || o.Unit != "shop-web-1" || o.Command != "rails console" {
		t.Fatalf("error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newShellCmd, "shop")
	if err != nil || o == nil || o.Unit != "" {
		t.Fatalf("no unit: error %v, options %+v", err, o)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{{[]string{"Shop"}, `"Shop"`}, {[]string{"shop", "-p", "Web"}, "Web"}, {[]string{"shop", "a", "b"}, `"b"`}} {
		o, err := parseCmd(t, newShellCmd, c.argv...)
		wantParseError(t, o, err, c.want)
	}
}

func TestRunRunAndShellWithoutSession(t *testing.T) {
	fail := func(context.Context) (session.Deps, error) {
		return session.Deps{}, errors.New("bad TUG_EXEC_PROTOCOL")
	}
	if err := runRun(context.Background(), &runOptions{Session: fail}); err == nil || err.Error() != "bad TUG_EXEC_PROTOCOL" {
		t.Errorf("run: %v", err)
	}
	if err := runShell(context.Background(), &shellOptions{Session: fail}); err == nil || err.Error() != "bad TUG_EXEC_PROTOCOL" {
		t.Errorf("shell: %v", err)
	}
}
