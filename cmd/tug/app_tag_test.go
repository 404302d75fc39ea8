package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewTagCmds(t *testing.T) {
	o, err := parseCmd(t, newTagSetCmd, "shop", "disk=ssd", "zone=a", "--no-wait")
	if err != nil || o == nil || o.App != "shop" || len(o.Tags) != 2 || o.Tags["disk"] != "ssd" || !o.Rollout.NoWait {
		t.Fatalf("set: error %v, options %+v", err, o)
	}
	for _, c := range []struct{ argv, want string }{
		{"shop", "missing KEY=VALUE"},
		{"shop disk", "disk"},
		{"Shop disk=ssd", `"Shop"`},
	} {
		o, err := parseCmd(t, newTagSetCmd, strings.Fields(c.argv)...)
		wantParseError(t, o, err, c.want)
	}
	u, err := parseCmd(t, newTagUnsetCmd, "shop", "zone", "disk")
	if err != nil || u == nil || u.App != "shop" || strings.Join(u.Keys, ",") != "zone,disk" {
		t.Fatalf("unset: error %v, options %+v", err, u)
	}
	u, err = parseCmd(t, newTagUnsetCmd, "shop")
	wantParseError(t, u, err, "missing KEY")
	u, err = parseCmd(t, newTagUnsetCmd, "shop", "bad key")
	wantParseError(t, u, err, "bad key")
}

// tag set and unset are releases whose units go to nodes with the labels.
func TestRunTagSetUnset(t *testing.T) {
	p := phaseFixture(t, 0)
	ctx := context.Background()
	ios, _, _, errOut := cli.TestIOStreams()
	set := &tagSetOptions{Changer: fixtureChanger(p, ios), Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable},
		App: "shop", Tags: map[string]string{"disk": "ssd"}}
	if err := runTagSet(ctx, set); err != nil {
		t.Fatalf("%v; stderr %q", err, errOut)
	}
	rel := func() *app.Release {
		a, err := p.store.GetApp(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := p.store.GetRelease(ctx, "shop", a.Release)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := rel(); r.Kind != app.KindTags || r.Tags["disk"] != "ssd" {
		t.Errorf("release after set: kind %s, tags %v", r.Kind, r.Tags)
	}
	unset := &tagUnsetOptions{Changer: fixtureChanger(p, ios), Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable},
		App: "shop", Keys: []string{"disk"}}
	if err := runTagUnset(ctx, unset); err != nil {
		t.Fatal(err)
	}
	if r := rel(); len(r.Tags) != 0 {
		t.Errorf("tags after unset: %v", r.Tags)
	}
	unset.Keys = []string{"zone"}
	if err := runTagUnset(ctx, unset); err == nil {
		t.Error("unset of a tag never set: no error")
	}
}
