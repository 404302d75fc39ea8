package main

import (
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/cli"
)

// The service commands' flags land in their options, and bad input fails
// before any client is made.
func TestNewServiceCmds(t *testing.T) {
	c, err := parseCmd(t, newServiceCreateCmd, "db", "--plan", "postgres", "--version", "16", "--size", "2Gi", "-o", "json")
	if err != nil || c == nil || c.Name != "db" || c.Plan != "postgres" || c.Version != "16" || c.Size != "2Gi" || c.Output.Format != cli.OutputJSON {
		t.Fatalf("create: error %v, options %+v", err, c)
	}
	e, err := parseCmd(t, newServiceCreateCmd, "legacy", "--uri", "postgres://u:p@db.example.com/app")
	if err != nil || e == nil || e.URI == "" || e.Plan != "" {
		t.Fatalf("create --uri: error %v, options %+v", err, e)
	}
	for _, bad := range []struct {
		argv []string
		want string
	}{
		{[]string{"db"}, "--plan"},
		{[]string{"Db", "--plan", "postgres"}, "Db"},
		{[]string{"db", "--plan", "postgres", "--size", "big"}, "big"},
		{[]string{"db", "--uri", "postgres://u:p@h/d", "--plan", "postgres"}, "without --plan"},
		{[]string{"db", "--uri", "ftp://h/d"}, "ftp"},
	} {
		c, err := parseCmd(t, newServiceCreateCmd, bad.argv...)
		wantParseError(t, c, err, bad.want)
	}
	b, err := parseCmd(t, newServiceBindCmd, "shop", "db", "--as", "ORDERS", "--dry-run")
	if err != nil || b == nil || b.App != "shop" || b.Service != "db" || b.Prefix != "ORDERS" || !b.Rollout.DryRun {
		t.Fatalf("bind: error %v, options %+v", err, b)
	}
	b, err = parseCmd(t, newServiceBindCmd, "shop", "db", "--as", "orders")
	wantParseError(t, b, err, "orders")
	r, err := parseCmd(t, newServiceRemoveCmd, "db", "--delete-data", "-y")
	if err != nil || r == nil || !r.DeleteData || !r.Yes {
		t.Fatalf("remove: error %v, options %+v", err, r)
	}
	k, err := parseCmd(t, newServiceBackupCmd, "db", "--schedule", "0 3 * * *", "--keep", "3")
	if err != nil || k == nil || k.Schedule.Cron != "0 3 * * *" || k.Schedule.Keep != 3 {
		t.Fatalf("backup --schedule: error %v, options %+v", err, k)
	}
	k, err = parseCmd(t, newServiceBackupCmd, "db", "--schedule", "0 3 * * *", "--keep", "0")
	wantParseError(t, k, err, "--keep")
	k, err = parseCmd(t, newServiceBackupCmd, "db", "--keep", "3", "-f", "x")
	wantParseError(t, k, err, "--keep goes with --schedule")
	s, err := parseCmd(t, newServiceRestoreCmd, "db")
	wantParseError(t, s, err, "-f FILE")
	s, err = parseCmd(t, newServiceRestoreCmd, "db", "-f", "x", "--from", "y")
	wantParseError(t, s, err, "-f FILE")
	n, err := parseCmd(t, newServiceConnectCmd, "db", "--", "psql", "-c", "select 1")
	if err != nil || n == nil || n.Name != "db" || len(n.Command) != 3 {
		t.Fatalf("connect: error %v, options %+v", err, n)
	}
	n, err = parseCmd(t, newServiceConnectCmd, "db", "psql")
	wantParseError(t, n, err, "--")
	u, err := parseCmd(t, newServiceUpdateCmd, "legacy")
	wantParseError(t, u, err, "--uri")
	o, err := parseCmd(t, newServiceRotateCmd, "db", "--wait-runs", "15m")
	if err != nil || o == nil || o.Name != "db" || o.WaitRuns != 15*time.Minute {
		t.Fatalf("rotate --wait-runs: error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newServiceRotateCmd, "db", "--wait-runs", "-1s")
	wantParseError(t, o, err, "--wait-runs")
}

// --uri - reads the URI from stdin (out of argv, which ps shows); an empty
// stdin is bad input.
func TestServiceURIFromStdin(t *testing.T) {
	got, err := uriFrom(strings.NewReader("postgres://u:p@h/d\n"), "-")
	if err != nil || got != "postgres://u:p@h/d" {
		t.Fatalf("uriFrom: %q %v", got, err)
	}
	if got, _ := uriFrom(strings.NewReader("ignored"), "redis://h"); got != "redis://h" {
		t.Errorf("a --uri given in argv: %q", got)
	}
	e, err := parseCmd(t, newServiceCreateCmd, "legacy", "--uri", "-")
	wantParseError(t, e, err, "stdin gave no URI")
	u, err := parseCmd(t, newServiceUpdateCmd, "legacy", "--uri", "-")
	wantParseError(t, u, err, "stdin gave no URI")
}
