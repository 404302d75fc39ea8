package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewAutoscaleCmds(t *testing.T) {
	o, err := parseCmd(t, newAutoscaleSetCmd, "shop", "-p", "web", "--min", "2", "--max", "10", "--cpu", "70%")
	if err != nil || o == nil || o.App != "shop" || o.Process != "web" || o.Min != 2 || o.Max != 10 || o.CPU != "70%" {
		t.Fatalf("set: error %v, options %+v", err, o)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"shop", "--max", "3"}, "-p"},
		{[]string{"shop", "-p", "web"}, "--max"},
		{[]string{"shop", "-p", "web", "--max", "3", "--cpu", "lots"}, "lots"},
	} {
		o, err := parseCmd(t, newAutoscaleSetCmd, c.argv...)
		wantParseError(t, o, err, c.want)
	}
	u, err := parseCmd(t, newAutoscaleUnsetCmd, "shop", "-p", "web", "-o", "json")
	if err != nil || u == nil || u.App != "shop" || u.Process != "web" || u.Rollout.Output != cli.OutputJSON {
		t.Fatalf("unset: error %v, options %+v", err, u)
	}
	u, err = parseCmd(t, newAutoscaleUnsetCmd, "shop")
	wantParseError(t, u, err, "-p")
	l, err := parseCmd(t, newAutoscaleListCmd, "shop", "-o", "json")
	if err != nil || l == nil || l.App != "shop" || l.Output.Format != cli.OutputJSON {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
	l, err = parseCmd(t, newAutoscaleListCmd, "shop!")
	wantParseError(t, l, err, `"shop!"`)
}

// autoscale set records the bounds; list shows them, and a process that
// does not autoscale as fixed; unset drops them.
func TestRunAutoscaleSetListUnset(t *testing.T) {
	p := phaseFixture(t, 0)
	p.add(t, deploymentOf("shop", "web", 2))
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	set := &autoscaleSetOptions{Changer: fixtureChanger(p, ios), Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
	set.App, set.Process, set.Min, set.Max, set.CPU = "shop", "web", 2, 5, "70%"
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := runAutoscaleSet(ctx, set); err != nil {
		t.Fatalf("%v; stderr %q", err, errOut)
	}
	list := &autoscaleListOptions{IO: ios, Store: fixtureStore(p), App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runAutoscaleList(ctx, list); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "web\t2\t5\t70%") {
		t.Errorf("list:\n%s", out)
	}
	unset := &autoscaleUnsetOptions{Changer: fixtureChanger(p, ios), Store: fixtureStore(p), Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable},
		App: "shop", Process: "web"}
	if err := runAutoscaleUnset(ctx, unset); err != nil {
		t.Fatal(err)
	}
	if a, err := p.store.GetApp(ctx, "shop"); err != nil || a.Processes["web"].Autoscale != nil {
		t.Errorf("after unset: %+v, %v", a.Processes["web"], err)
	}
	list.App = "blog"
	if err := runAutoscaleList(ctx, list); !app.IsNotFound(err) {
		t.Errorf("a missing app: %v", err)
	}
}
