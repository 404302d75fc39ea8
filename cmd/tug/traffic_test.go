package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/traffic"
)

func TestNewOnOffCmds(t *testing.T) {
	for _, c := range []struct {
		newCmd  func(*cli.Factory, func(context.Context, *onOffOptions) error) *cobra.Command
		setting traffic.Setting
	}{{newAppRoutableCmd, traffic.Routable}, {newAppMaintenanceCmd, traffic.Maintenance}} {
		o, err := parseCmd(t, c.newCmd, "shop", "off", "--wait-lock", "10s")
		if err != nil || o == nil || o.Setting != c.setting || o.App != "shop" || o.Word != "off" || o.On {
			t.Fatalf("%s: error %v, options %+v", c.setting, err, o)
		}
		o, err = parseCmd(t, c.newCmd, "shop", "on")
		if err != nil || o == nil || !o.On {
			t.Fatalf("%s on: error %v, options %+v", c.setting, err, o)
		}
		o, err = parseCmd(t, c.newCmd, "shop", "maybe")
		wantParseError(t, o, err, "maybe")
		o, err = parseCmd(t, c.newCmd, "Shop", "on")
		wantParseError(t, o, err, `"Shop"`)
	}
}

func TestNewAllowCmds(t *testing.T) {
	for _, remove := range []bool{false, true} {
		newCmd := func(f *cli.Factory, runF func(context.Context, *allowEditOptions) error) *cobra.Command {
			return newAllowEditCmd(f, runF, "add", "", remove)
		}
		o, err := parseCmd(t, newCmd, "shop", "10.0.0.0/8", "192.168.1.7")
		if err != nil || o == nil || o.App != "shop" || len(o.Sources) != 2 || o.Remove != remove {
			t.Fatalf("remove %v: error %v, options %+v", remove, err, o)
		}
		o, err = parseCmd(t, newCmd, "shop", "10.0.0.0/33")
		wantParseError(t, o, err, "10.0.0.0/33")
		o, err = parseCmd(t, newCmd, "shop")
		wantParseError(t, o, err, "missing CIDR")
	}
	l, err := parseCmd(t, newAllowListCmd, "shop", "-o", "json")
	if err != nil || l == nil || l.App != "shop" || l.Output.Format != cli.OutputJSON {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
	a, err := parseCmd(t, newAppAddressCmd, "shop", "--no-headers")
	if err != nil || a == nil || a.App != "shop" || !a.Output.NoHeaders {
		t.Fatalf("address: error %v, options %+v", err, a)
	}
}

// allow list prints the app's sources, or says none restrict it; address
// says when the app has no web process to reach.
func TestRunAllowListAndAddress(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Allow: []string{"10.0.0.0/8"}})
	p.mustCreateApp(t, &app.App{Name: "blog"})
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	o := &allowListOptions{IO: ios, Store: fixtureStore(p), App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runAllowList(ctx, o); err != nil || !strings.Contains(out.String(), "10.0.0.0/8") {
		t.Errorf("shop: %v, stdout %q", err, out)
	}
	o.App = "blog"
	if err := runAllowList(ctx, o); err != nil || !strings.Contains(errOut.String(), "no restriction") {
		t.Errorf("blog: %v, stderr %q", err, errOut)
	}
	addr := &appAddressOptions{IO: ios, Store: fixtureStore(p), App: "blog", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runAppAddress(ctx, addr); err != nil || !strings.Contains(errOut.String(), `app "blog" has no web process, so no address`) {
		t.Errorf("address: %v, stderr %q", err, errOut)
	}
}

// A traffic change that cannot reach the cluster changes nothing and
// returns why.
func TestRunTrafficChangesWithoutCluster(t *testing.T) {
	ios, _, out, _ := cli.TestIOStreams()
	ch := failingChanger(ios, errors.New("forbidden"))
	if err := runOnOff(context.Background(), &onOffOptions{Changer: ch, Setting: traffic.Maintenance, App: "shop", Word: "on", On: true}); err == nil || err.Error() != "forbidden" {
		t.Errorf("maintenance: %v", err)
	}
	if err := runAllowEdit(context.Background(), &allowEditOptions{Changer: ch, AllowOptions: traffic.AllowOptions{App: "shop", Sources: []string{"10.0.0.0/8"}}}); err == nil || err.Error() != "forbidden" {
		t.Errorf("allow: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q", out)
	}
}
