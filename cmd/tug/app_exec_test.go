package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tug.dev/tug/pkg/session"
)

func TestNewAppExecCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		want    session.ExecOptions
		wantErr string
	}{
		{name: "one unit", argv: []string{"shop", "--", "ls", "/app"}, want: session.ExecOptions{App: "shop", Command: []string{"ls", "/app"}}},
		{name: "all of a process", argv: []string{"shop", "--all", "-p", "worker", "--", "sh", "-c", "echo $HOSTNAME"},
			want: session.ExecOptions{App: "shop", All: true, Process: "worker", Command: []string{"sh", "-c", "echo $HOSTNAME"}}},
		{name: "a unit with a terminal", argv: []string{"shop", "-u", "shop-web-7c9d8-h2k4p", "-it", "--", "sh"},
			want: session.ExecOptions{App: "shop", Unit: "shop-web-7c9d8-h2k4p", Stdin: true, TTY: true, Command: []string{"sh"}}},
		{name: "the command's flags stay its own", argv: []string{"shop", "--", "ls", "-l", "--all"}, want: session.ExecOptions{App: "shop", Command: []string{"ls", "-l", "--all"}}},
		{name: "no dash", argv: []string{"shop", "ls"}, wantErr: "'--'"},
		{name: "all and unit", argv: []string{"shop", "--all", "-u", "shop-web-1", "--", "ls"}, wantErr: "--all and --unit exclude each other"},
		{name: "all with stdin", argv: []string{"shop", "--all", "-i", "--", "ls"}, wantErr: "-i and -t work with one unit only"},
		{name: "bad process", argv: []string{"shop", "-p", "Web", "--", "ls"}, wantErr: "Web"},
		{name: "bad unit", argv: []string{"shop", "-u", "Unit_1", "--", "ls"}, wantErr: "Unit_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppExecCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil {
				t.Fatalf("error %v", err)
			}
			got := o.ExecOptions
			if got.App != tt.want.App || got.Process != tt.want.Process || got.Unit != tt.want.Unit || got.All != tt.want.All ||
				got.Stdin != tt.want.Stdin || got.TTY != tt.want.TTY || strings.Join(got.Command, "|") != strings.Join(tt.want.Command, "|") {
				t.Errorf("options %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRunAppExecWithoutSession(t *testing.T) {
	o := &appExecOptions{Session: func(context.Context) (session.Deps, error) {
		return session.Deps{}, errors.New("bad TUG_EXEC_PROTOCOL")
	}}
	if err := runAppExec(context.Background(), o); err == nil || err.Error() != "bad TUG_EXEC_PROTOCOL" {
		t.Errorf("error %v", err)
	}
}
