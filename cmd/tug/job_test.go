package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/session"
)

func TestNewJobAddCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		want    app.Job
		wantErr string
	}{
		{name: "daily", argv: []string{"shop", "report", "--schedule", "0 6 * * *", "--time-zone", "Europe/Paris", "--", "./bin/report", "--full"},
			want: app.Job{Schedule: "0 6 * * *", TimeZone: "Europe/Paris", Command: "./bin/report --full"}},
		{name: "forbid with a timeout", argv: []string{"shop", "cleanup", "--schedule", "@hourly", "--concurrency", "forbid", "--timeout", "10m", "--retries", "2", "--", "rake", "cleanup"},
			want: app.Job{Schedule: "@hourly", Concurrency: "forbid", TimeoutSeconds: 600, Retries: 2, Command: "rake cleanup"}},
		{name: "no command", argv: []string{"shop", "report", "--schedule", "@daily"}, wantErr: "missing command"},
		{name: "no schedule", argv: []string{"shop", "report", "--", "ls"}, wantErr: "schedule"},
		{name: "bad schedule", argv: []string{"shop", "report", "--schedule", "at noon", "--", "ls"}, wantErr: "at noon"},
		{name: "a timeout under a second", argv: []string{"shop", "report", "--schedule", "@daily", "--timeout", "1500ms", "--", "ls"}, wantErr: "--timeout must be a positive number of seconds"},
		{name: "bad job name", argv: []string{"shop", "Report", "--schedule", "@daily", "--", "ls"}, wantErr: "Report"},
		{name: "bad concurrency", argv: []string{"shop", "report", "--schedule", "@daily", "--concurrency", "queue", "--", "ls"}, wantErr: "queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newJobAddCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" {
				t.Fatalf("error %v, options %+v", err, o)
			}
			j := o.Job
			if j.Schedule != tt.want.Schedule || j.TimeZone != tt.want.TimeZone || j.Concurrency != tt.want.Concurrency ||
				j.TimeoutSeconds != tt.want.TimeoutSeconds || j.Retries != tt.want.Retries || j.Command != tt.want.Command {
				t.Errorf("job %+v, want %+v", j, tt.want)
			}
		})
	}
}

func TestNewJobCmds(t *testing.T) {
	l, err := parseCmd(t, newJobListCmd, "shop", "-o", "json")
	if err != nil || l == nil || l.App != "shop" || l.Output.Format != cli.OutputJSON {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
	i, err := parseCmd(t, newJobInfoCmd, "shop", "report")
	if err != nil || i == nil || i.App != "shop" || i.Name != "report" {
		t.Fatalf("info: error %v, options %+v", err, i)
	}
	i, err = parseCmd(t, newJobInfoCmd, "shop", "Report")
	wantParseError(t, i, err, "Report")
	r, err := parseCmd(t, newJobRunCmd, "shop", "report")
	if err != nil || r == nil || r.App != "shop" || r.Name != "report" {
		t.Fatalf("run: error %v, options %+v", err, r)
	}
	g, err := parseCmd(t, newJobLogsCmd, "shop", "report", "--run", "2", "-f")
	if err != nil || g == nil || g.App != "shop" || g.Run != "2" || !g.Follow {
		t.Fatalf("logs: error %v, options %+v", err, g)
	}
	g, err = parseCmd(t, newJobLogsCmd, "shop", "report", "--run", "0")
	wantParseError(t, g, err, "runs are numbered from 1")
	for _, suspend := range []bool{true, false} {
		newCmd := func(f *cli.Factory, runF func(context.Context, *jobSuspendOptions) error) *cobra.Command {
			return newJobSuspendCmd(f, runF, suspend)
		}
		s, err := parseCmd(t, newCmd, "shop", "report", "--wait-lock", "5s")
		if err != nil || s == nil || s.Suspend != suspend || s.Name != "report" {
			t.Fatalf("suspend %v: error %v, options %+v", suspend, err, s)
		}
	}
	rm, err := parseCmd(t, newJobRemoveCmd, "shop", "report", "-y", "--no-wait")
	if err != nil || rm == nil || !rm.Yes || !rm.NoWait || rm.Name != "report" {
		t.Fatalf("remove: error %v, options %+v", err, rm)
	}
	rm, err = parseCmd(t, newJobRemoveCmd, "shop")
	wantParseError(t, rm, err, "missing NAME")
}

// job add is a release with the job; list and info show it; suspend and
// resume say so, once; remove needs --yes off a terminal, then the job goes.
func TestRunJobAddListSuspendRemove(t *testing.T) {
	p := phaseFixture(t, 0)
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	add := &jobAddOptions{Changer: fixtureChanger(p, ios), App: "shop", Name: "report", noWait: true, out: cli.OutputTable,
		Job: app.Job{Schedule: "@daily", Command: "./bin/report"}}
	if err := runJobAdd(ctx, add); err != nil {
		t.Fatalf("add: %v; stderr %q", err, errOut)
	}
	list := &jobListOptions{IO: ios, Store: fixtureStore(p), CommandName: "tug", Now: time.Now, App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runJobList(ctx, list); err != nil || !strings.Contains(out.String(), "report\t@daily\t-\t-\t") {
		t.Errorf("list: %v\n%s", err, out)
	}
	out.Reset()
	info := &jobInfoOptions{IO: ios, Store: fixtureStore(p), Now: time.Now, App: "shop", Name: "report", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runJobInfo(ctx, info); err != nil || !strings.Contains(out.String(), "Schedule:    @daily\n") || !strings.Contains(out.String(), "Runs:        none yet") {
		t.Errorf("info: %v\n%s", err, out)
	}
	for _, c := range []struct {
		suspend bool
		want    string
	}{{true, `job "report" of app "shop" suspended`}, {true, "suspended already"}, {false, `job "report" of app "shop" resumed`}} {
		errOut.Reset()
		s := &jobSuspendOptions{Changer: fixtureChanger(p, ios), App: "shop", Name: "report", Suspend: c.suspend}
		if err := runJobSuspend(ctx, s); err != nil || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("suspend %v: %v, stderr %q", c.suspend, err, errOut)
		}
	}
	rm := &jobRemoveOptions{Changer: fixtureChanger(p, ios), Prompter: func() cli.Prompter { return nil }, App: "shop", Name: "report",
		NoWait: true, Output: cli.OutputTable}
	if err := runJobRemove(ctx, rm); err == nil || !strings.Contains(err.Error(), "pass --yes") {
		t.Errorf("remove without --yes: %v", err)
	}
	rm.Yes = true
	if err := runJobRemove(ctx, rm); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if err := runJobList(ctx, list); err != nil || !strings.Contains(errOut.String(), `app "shop" has no jobs`) {
		t.Errorf("list after remove: %v, stderr %q", err, errOut)
	}
}

func TestRunJobRunWithoutSession(t *testing.T) {
	o := &jobRunOptions{Session: func(context.Context) (session.Deps, error) { return session.Deps{}, errors.New("forbidden") }}
	if err := runJobRun(context.Background(), o); err == nil || err.Error() != "forbidden" {
		t.Errorf("error %v", err)
	}
}
