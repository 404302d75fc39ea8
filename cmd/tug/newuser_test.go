package main

import (
	"fmt"
	"testing"

	"tug.dev/tug/pkg/cli/clitest"
)

// What a new user types on a first day (issue 40, item 12) gets a message
// that says what to do, held in golden files (go test -update).
func TestNewUserMessagesGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"logs-tail-no-number", []string{"logs", "shop", "--tail"}},
		{"logs-tail-takes-app", []string{"logs", "--tail", "shop"}},
		{"promote-to", []string{"release", "promote", "shop", "--to", "x"}},
		{"env-list", []string{"env", "list", "shop"}},
		{"job-add-dry-run", []string{"job", "add", "shop", "report", "--schedule", "@daily", "--dry-run", "--", "echo", "hi"}},
		{"image-upper-case", []string{"app", "deploy", "shop", "--image", "UPPER/Case:1"}},
		{"heroku-create-flags", []string{"create", "shop2", "--pool", "x"}},
		{"heroku-create-global-flags", []string{"-n", "dev", "create", "shop2", "--pool", "x", "-m", "a new shop"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := execute(t, nil, c.args...)
			clitest.Golden(t, "newuser/"+c.name, []byte(fmt.Sprintf("exit %d\n--- stderr\n%s--- stdout\n%s", r.code, r.stderr, r.stdout)))
		})
	}
}

// --yes, which CI scripts pass to whatever they run, is accepted by
// commands that ask nothing (it was an unknown flag, exit 2).
func TestYesIsAcceptedWhereNothingAsks(t *testing.T) {
	p := shopFixture(t)
	for _, args := range [][]string{{"env", "get", "shop", "--yes"}, {"app", "info", "shop", "-y"}, {"release", "list", "shop", "--yes"}} {
		if r := p.run(t, false, args...); r.code != 0 || r.stdout == "" {
			t.Errorf("tug %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
