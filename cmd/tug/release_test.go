package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/canary"
	"tug.dev/tug/pkg/cli"
)

func TestNewReleaseCmds(t *testing.T) {
	l, err := parseCmd(t, newReleaseListCmd, "shop", "-o", "name")
	if err != nil || l == nil || l.App != "shop" || l.Output.Format != cli.OutputName {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
	l, err = parseCmd(t, newReleaseListCmd, "shop", "v2")
	wantParseError(t, l, err, `unexpected argument "v2"`)

	i, err := parseCmd(t, newReleaseInfoCmd, "shop", "v3", "-o", "json")
	if err != nil || i == nil || i.App != "shop" || i.Version != 3 || i.Output.Format != cli.OutputJSON {
		t.Fatalf("info: error %v, options %+v", err, i)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{{[]string{"shop", "three"}, "three"}, {[]string{"shop"}, "missing RELEASE"}, {[]string{"Shop", "v1"}, `"Shop"`}} {
		i, err := parseCmd(t, newReleaseInfoCmd, c.argv...)
		wantParseError(t, i, err, c.want)
	}

	tests := []struct {
		name    string
		argv    []string
		target  int
		wantErr string
	}{
		{name: "the one before", argv: []string{"shop"}},
		{name: "a version", argv: []string{"shop", "v3", "--dry-run", "--skip-release-phase"}, target: 3},
		{name: "bad version", argv: []string{"shop", "3x"}, wantErr: "3x"},
		{name: "dry run without waiting", argv: []string{"shop", "--dry-run", "--no-wait"}, wantErr: "--dry-run and --no-wait"},
		{name: "negative timeout", argv: []string{"shop", "--timeout", "-1s"}, wantErr: "--timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run("rollback "+tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newReleaseRollbackCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" || o.Target != tt.target {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}

	for _, newCmd := range []func(*cli.Factory, func(context.Context, *canaryEndOptions) error) *cobra.Command{newReleasePromoteCmd, newReleaseAbortCmd} {
		o, err := parseCmd(t, newCmd, "shop", "--wait-lock", "1m", "-o", "yaml")
		if err != nil || o == nil || o.App != "shop" || o.Format != cli.OutputYAML || o.End == nil {
			t.Fatalf("promote/abort: error %v, options %+v", err, o)
		}
		o, err = parseCmd(t, newCmd, "shop", "--wait-lock", "soon")
		wantParseError(t, o, err, `invalid argument "soon"`)
	}
}

// rollback makes a new release from v1's image and config; release list
// marks it deployed and release info shows it; promote without a canary
// says there is nothing to promote.
func TestRunReleaseRollbackListInfo(t *testing.T) {
	p := dryRunFixture(t, true)
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	rb := &releaseRollbackOptions{Changer: fixtureChanger(p, ios), Store: fixtureStore(p), App: "shop", SkipReleasePhase: true,
		Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
	if err := runReleaseRollback(ctx, rb); err != nil {
		t.Fatalf("%v; stderr %q", err, errOut)
	}
	if !strings.Contains(errOut.String(), "rolled back") {
		t.Errorf("stderr %q", errOut)
	}
	list := &releaseListOptions{IO: ios, Store: fixtureStore(p), App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	out.Reset()
	if err := runReleaseList(ctx, list); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(out.String(), "\n"); len(lines) < 2 || !strings.HasPrefix(lines[1], "v3 *\trollback\t") || !strings.Contains(lines[1], "shop:1") {
		t.Errorf("release list:\n%s", out)
	}
	info := &releaseInfoOptions{IO: ios, Store: fixtureStore(p), App: "shop", Version: 3, Output: cli.OutputOptions{Format: cli.OutputTable}}
	out.Reset()
	if err := runReleaseInfo(ctx, info); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Release:  v3 (rollback)") || !strings.Contains(out.String(), "Config:   COLOR") {
		t.Errorf("release info:\n%s", out)
	}
	info.Version = 9
	if err := runReleaseInfo(ctx, info); err == nil {
		t.Error("release info v9: no error")
	}
	end := &canaryEndOptions{Changer: fixtureChanger(p, ios), End: canary.Promote, Words: rollVerb{"promoted", "promoting the canary of"},
		App: "shop", Format: cli.OutputTable}
	if err := runCanaryEnd(ctx, end); err == nil || !strings.Contains(err.Error(), "canary") {
		t.Errorf("promote without a canary: %v", err)
	}
}

// A viewer's release list and info read the records (ConfigMaps) and
// never a Secret: the RBAC that refuses it every Secret refuses them
// nothing, and what they print names the config's keys, not its values.
func TestReleaseListAndInfoReadNoSecret(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 1, LastRelease: 1, Processes: map[string]app.Process{"web": {Replicas: 1}}})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: app.KindDeploy, Status: app.StatusDeployed, Author: "alice",
		Processes: map[string]string{"web": ""}}, app.ConfigMap{"API_TOKEN": "s3cr3t-5e2d"})
	var secretReads []string
	p.cs.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		secretReads = append(secretReads, a.GetVerb())
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "",
			errors.New(`User "vic" cannot `+a.GetVerb()+` resource "secrets" in API group "" in the namespace "dev"`))
	})
	for _, args := range [][]string{{"release", "info", "shop", "v1"}, {"release", "info", "shop", "v1", "-o", "json"}, {"release", "list", "shop"}} {
		r := p.run(t, false, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "shop:1") || strings.Contains(r.stdout+r.stderr, "s3cr3t") {
			t.Errorf("tug %v with every Secret refused: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		if args[1] == "info" && !strings.Contains(r.stdout, "API_TOKEN") {
			t.Errorf("tug %v does not name the config's keys: %q", args, r.stdout)
		}
	}
	// the list asks for the old form's Secrets at once (refused, not an
	// error); info never asks for one
	if !slices.Equal(secretReads, []string{"list"}) {
		t.Errorf("Secret requests: %q, want one list (release list's)", secretReads)
	}
}
