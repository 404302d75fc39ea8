package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

// TestSettingsInputExits2BeforeAnyRequest: bad rollout settings are usage
// errors found before tug talks to a cluster (there is none here: a
// command that got that far would fail with exit 1 about the cluster).
func TestSettingsInputExits2BeforeAnyRequest(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"app", "settings", "set", "shop"}, "nothing to set"},
		{[]string{"app", "settings", "set", "shop", "--max-surge", "0", "--max-unavailable", "0"}, "cannot both be 0"},
		{[]string{"app", "settings", "set", "shop", "--max-surge", "-1"}, "must not be negative"},
		{[]string{"app", "settings", "set", "shop", "--max-unavailable", "120%"}, "from 0% to 100%"},
		{[]string{"app", "settings", "set", "shop", "--max-surge", "lots"}, `invalid --max-surge "lots"`},
		{[]string{"app", "settings", "set", "shop", "--max-surge", ""}, "--max-surge needs a value"},
		{[]string{"app", "settings", "set", "shop", "--history", "0"}, "--history must be from 1 to 200, not 0"},
		{[]string{"app", "settings", "set", "shop", "--history", "100000"}, "--history must be from 1 to 200"},
		{[]string{"app", "settings", "set", "shop", "--grace-period", "soon"}, `invalid --grace-period "soon"`},
		{[]string{"app", "settings", "set", "shop", "--grace-period", "2h"}, "--grace-period must be from 5s to 1h, not 2h"},
		{[]string{"app", "settings", "set", "shop", "--deploy-timeout", "1s"}, "--deploy-timeout must be from 10s to 24h, not 1s"},
		{[]string{"app", "settings", "set", "shop", "--deploy-timeout", "0"}, "must be more than zero"},
		{[]string{"app", "settings", "set", "Bad_Name", "--history", "3"}, "invalid app name"},
		{[]string{"app", "settings", "set", "shop", "--history", "3", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"app", "settings", "unset", "shop"}, "nothing to unset"},
		{[]string{"app", "settings", "show", "Bad_Name"}, "invalid app name"},
		{[]string{"app", "deploy", "shop", "--image", "x", "--timeout", "0s"}, "--timeout must be positive"},
	} {
		t.Run(strings.Join(c.args[2:], " "), func(t *testing.T) {
			r := execute(t, nil, c.args...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", r.code, r.stderr, c.want)
			}
			if strings.Contains(r.stderr, "kubeconfig") || strings.Contains(r.stderr, "cannot reach") {
				t.Errorf("the input was not checked before the cluster: %q", r.stderr)
			}
		})
	}
}

// TestTimeoutFlagDefaultsToTheSetting: --timeout not given is 0, which
// pkg/deploy turns into the release's deploy-timeout; given, it wins; given
// as 0 it is refused.
func TestTimeoutFlagDefaultsToTheSetting(t *testing.T) {
	for _, c := range []struct {
		args  []string
		want  time.Duration
		valid bool
	}{
		{nil, 0, true},
		{[]string{"--timeout", "3m"}, 3 * time.Minute, true},
		{[]string{"--timeout", "0s"}, 0, false},
		{[]string{"--timeout", "-1s"}, -time.Second, false},
	} {
		r := &rolloutFlags{}
		cmd := &cobra.Command{Use: "x"}
		r.add(cmd, true, new(time.Duration))
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if got := r.options().Timeout; got != c.want {
			t.Errorf("%v: timeout %s, want %s", c.args, got, c.want)
		}
		if err := r.validate(); (err == nil) != c.valid {
			t.Errorf("%v: validate = %v, want valid %v", c.args, err, c.valid)
		}
	}
}

// TestSettingsDoneLineSaysWhetherUnitsRestarted: a settings change says
// whether its units restarted; other rollouts say what they always said.
func TestSettingsDoneLineSaysWhetherUnitsRestarted(t *testing.T) {
	res := func(restarted *bool) *deploy.Result {
		return &deploy.Result{App: "shop", Release: 7, Status: app.StatusDeployed, DurationMS: 1500,
			Processes: []deploy.ProcessResult{{Name: "web", Units: 2}}, UnitsRestarted: restarted}
	}
	for _, c := range []struct {
		res  *deploy.Result
		verb string
		want string
	}{
		{res(new(false)), "settings changed", "settings changed; units not restarted: shop v7 keeps running (web 2)"},
		{res(new(true)), "settings changed", "settings changed; units restarted: shop v7 is running (web 2) in 1.5s"},
		{res(nil), "deployed", "deployed: shop v7 is running (web 2) in 1.5s"},
	} {
		if got := doneLine(c.res, c.verb); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// The release's summary names the settings given, with their values, in
// the order settings are shown.
func TestNewSettingsCmdsMessage(t *testing.T) {
	o, err := parseCmd(t, newSettingsSetCmd, "shop", "--history", "20", "--max-surge", "50%")
	if err != nil || o == nil || o.App != "shop" || o.Message != "settings: max-surge 50%, history 20" {
		t.Fatalf("set: error %v, options %+v", err, o)
	}
	u, err := parseCmd(t, newSettingsUnsetCmd, "shop", "--grace-period", "--history")
	if err != nil || u == nil || !u.GracePeriod || !u.History || u.Message != "settings: grace-period, history back to default" {
		t.Fatalf("unset: error %v, options %+v", err, u)
	}
}
