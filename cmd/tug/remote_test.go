package main

import (
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/logs"
)

func TestRemoteCommandsUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "shop"}, "missing command: put it after '--'"},
		{[]string{"run", "shop", "--"}, "no command after '--'"},
		{[]string{"run", "shop", "ls"}, "put the command after '--': tug run shop -- ls"},
		{[]string{"run", "shop", "ls", "-l"}, "unknown shorthand flag: 'l' in -l; the command and its own flags go after '--'"},
		{[]string{"run", "--", "ls"}, "missing APP"},
		{[]string{"run", "shop", "extra", "--", "ls"}, `unexpected argument "extra" before '--'`},
		{[]string{"run", "Bad_App", "--", "ls"}, "invalid app name"},
		{[]string{"run", "shop", "-p", "Web", "--", "ls"}, "invalid process name"},
		{[]string{"run", "shop", "--detach", "-t", "--", "sh"}, "--detach cannot be combined"},
		{[]string{"run", "shop", "--timeout", "-5s", "--", "ls"}, "--timeout must not be negative"},
		{[]string{"run", "shop", "--env", "A-B=1", "--", "ls"}, "--env A-B"},
		{[]string{"app", "exec", "shop", "--", "ls", "--all"}, ""}, // flags after -- belong to the command: not a usage error
		{[]string{"app", "exec", "shop", "-a", "-u", "x", "--", "ls"}, "--all and --unit exclude each other"},
		{[]string{"app", "exec", "shop", "-a", "-i", "--", "ls"}, "one unit only"},
		{[]string{"shell"}, "missing APP"},
		{[]string{"shell", "shop", "unit", "more"}, `unexpected argument "more"`},
		{[]string{"logs", "shop", "-f", "--previous"}, "cannot be followed"},
		{[]string{"logs", "shop", "--since", "soon"}, "give a duration"},
		{[]string{"logs", "shop", "--since", "-5m"}, "must be positive"},
		{[]string{"logs", "shop", "--tail", "-2"}, "--tail must be -1"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := execute(t, nil, c.args...)
			if c.want == "" {
				// valid usage: it gets as far as the missing kubeconfig
				if r.code != 1 || !strings.Contains(r.stderr, "kubeconfig") {
					t.Fatalf("want a failure to connect (exit 1), got %d: %s", r.code, r.stderr)
				}
				return
			}
			if r.code != 2 || !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("want exit 2 with %q, got %d:\n%s", c.want, r.code, r.stderr)
			}
		})
	}
}

func TestBadExecProtocolIsAUsageError(t *testing.T) {
	t.Setenv("TUG_EXEC_PROTOCOL", "carrier-pigeon")
	r := execute(t, nil, "shell", "shop")
	if r.code != 2 || !strings.Contains(r.stderr, "TUG_EXEC_PROTOCOL") {
		t.Fatalf("got %d: %s", r.code, r.stderr)
	}
}

func TestParseRunEnv(t *testing.T) {
	env := map[string]string{"FROM_HERE": "local"}
	got, err := parseRunEnv([]string{"A=1", "B=", "C=x=y", "FROM_HERE"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || got["A"] != "1" || got["B"] != "" || got["C"] != "x=y" || got["FROM_HERE"] != "local" {
		t.Fatalf("parseRunEnv = %v, %v", got, err)
	}
	if _, err := parseRunEnv([]string{"MISSING"}, func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "MISSING=VALUE") {
		t.Fatalf("a bare KEY that is not set: %v", err)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var o logs.Options
	if err := parseSince("90m", &o, now); err != nil || o.Since != 90*time.Minute {
		t.Fatalf("duration: %v %v", o.Since, err)
	}
	o = logs.Options{}
	if err := parseSince("2026-05-01T10:00:00Z", &o, now); err != nil || !o.SinceTime.Equal(now.Add(-2*time.Hour)) {
		t.Fatalf("time: %v %v", o.SinceTime, err)
	}
	if err := parseSince("2026-05-02T10:00:00Z", &o, now); err == nil {
		t.Fatal("a time in the future must be refused")
	}
}
