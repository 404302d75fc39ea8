package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/access"
)

// TestEveryCommandDeclaresALevel: each command says, with itself, the
// access level it needs (atLevel); the levels' Roles, the refusal of a
// command to a lower level, doctor's "cannot run" list and
// docs/rbac/levels.md follow it. A new command without one fails here,
// saying what to add.
func TestEveryCommandDeclaresALevel(t *testing.T) {
	valid := map[string]bool{levelNone: true, levelClusterAdmin: true}
	for _, l := range access.Levels {
		valid[string(l)] = true
	}
	n := 0
	for _, c := range commandTree(t) {
		if !isLeaf(c) {
			if declaredLevel(c) != "" {
				t.Errorf("%q groups commands but declares level %q; declare it on its subcommands", c.CommandPath(), declaredLevel(c))
			}
			continue
		}
		n++
		switch l := declaredLevel(c); {
		case l == "":
			t.Errorf("%q declares no access level: add Annotations: atLevel(access.Viewer|Developer|Operator|Admin, ...) (or levelNone, levelClusterAdmin) to its cobra.Command", c.CommandPath())
		case !valid[l]:
			t.Errorf("%q declares level %q; want viewer, developer, operator, admin, none or cluster-admin", c.CommandPath(), l)
		}
	}
	if n < 80 {
		t.Errorf("only %d commands walked", n)
	}
}

// The levels the issue names for the commands people know (issue 38).
func TestLevelsOfTheNamedCommands(t *testing.T) {
	want := map[string]string{
		"tug app list": "viewer", "tug app info": "viewer", "tug logs": "viewer", "tug unit list": "viewer",
		"tug app deploy": "developer", "tug app scale": "developer", "tug app restart": "developer", "tug run": "developer",
		"tug shell": "developer", "tug env set": "developer", "tug env get": "developer", "tug release rollback": "developer",
		"tug domain add": "operator", "tug cert add": "operator", "tug app allow add": "operator", "tug app maintenance": "operator",
		"tug job add": "operator", "tug app create": "admin", "tug app remove": "admin", "tug access add": "admin",
		"tug access token": "admin", "tug access list": "viewer", "tug node remove": "cluster-admin", "tug version": "none",
	}
	for _, c := range commandTree(t) {
		if w, ok := want[c.CommandPath()]; ok {
			if got := declaredLevel(c); got != w {
				t.Errorf("%s: level %q, want %q", c.CommandPath(), got, w)
			}
			delete(want, c.CommandPath())
		}
	}
	for path := range want {
		t.Errorf("%s: no such command", path)
	}
}

// The guard wraps exactly the commands with a namespace level.
func TestGuardedCommandsRefuseWithTheLevel(t *testing.T) {
	e := &access.RefusedError{Command: "tug domain add", Need: access.Operator, Have: access.Developer, User: "alice", Namespace: "shop"}
	msg := e.Error()
	for _, w := range []string{"needs the operator level", `namespace "shop"`, "alice", "a developer", "tug access add alice --role operator -n shop", "tug access list"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
}

// Bad input to the access commands exits 2 before anything reaches the
// cluster.
func TestAccessBadInputAsksNothing(t *testing.T) {
	p := newPrinterFixture(t)
	for _, args := range [][]string{
		{"access", "add", "alice", "--role", "root"},
		{"access", "add", "alice"},
		{"access", "add", "group:", "--role", "viewer"},
		{"access", "remove", "a b", "--yes"},
		{"access", "token", "Bad_Name", "--role", "viewer"},
		{"access", "token", "ci", "--role", "viewer", "--ttl", "5m"},
		{"access", "token", "ci"},
	} {
		p.cs.ClearActions()
		r := p.run(t, false, args...)
		if r.code != 2 {
			t.Errorf("%q: exit %d, stderr %q; want 2", args, r.code, r.stderr)
		}
		if a := p.cs.Actions(); len(a) > 0 {
			t.Errorf("%q asked the cluster %d times", args, len(a))
		}
	}
}

// access add makes the level's Role and tug's binding; access list shows
// it (fake cluster: the logic, not RBAC).
func TestAccessAddThenList(t *testing.T) {
	p := newPrinterFixture(t)
	if r := p.run(t, false, "access", "add", "alice", "--role", "developer"); r.code != 0 || !strings.Contains(r.stderr, `alice is now developer in namespace "dev"`) {
		t.Fatalf("add: exit %d, stderr %q", r.code, r.stderr)
	}
	r := p.run(t, false, "access", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "alice\tdeveloper\tRole/tug-developer\t") || !strings.Contains(r.stdout, "\ttug\n") {
		t.Fatalf("list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
