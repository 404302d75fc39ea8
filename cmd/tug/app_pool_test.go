package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/deploy"
)

// Flags that do not apply to a move between clusters are refused before
// anything is asked of a cluster (its server here answers nobody).
func TestPoolSetRefusesFlagsAMoveIgnores(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "tug.yaml")
	kc := writeKubeconfig(t, "prod", "gpu")
	run := func(args ...string) result {
		t.Helper()
		t.Setenv("TUG_CONFIG", cfg)
		return execute(t, nil, append([]string{"--kubeconfig", kc}, args...)...)
	}
	for _, c := range [][]string{{"cluster", "add", "prod", "--context", "prod", "--pool", "web"}, {"cluster", "add", "gpu", "--context", "gpu", "--pool", "gpu"}} {
		if r := run(c...); r.code != 0 {
			t.Fatalf("%v: %+v", c, r)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"app", "pool", "set", "shop", "gpu", "--context", "prod", "--no-wait"}, "--no-wait and --no-rollback do not apply"},
		{[]string{"app", "pool", "set", "shop", "gpu", "--context", "prod", "--no-rollback"}, "--no-wait and --no-rollback do not apply"},
		{[]string{"app", "pool", "set", "shop", "gpu", "--context", "prod", "--adopt"}, "--adopt needs tug to look for the move's old copy in every configured cluster"},
	} {
		if r := run(c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

func TestNewPoolSetCmd(t *testing.T) {
	o, err := parseCmd(t, newPoolSetCmd, "shop", "gpu", "--dry-run", "--adopt")
	if err != nil || o == nil || o.App != "shop" || o.Pool != "gpu" || !o.Adopt || !o.Rollout.DryRun {
		t.Fatalf("error %v, options %+v", err, o)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"shop", "gpu pool"}, "gpu pool"},
		{[]string{"shop"}, "missing POOL"},
		{[]string{"shop", "gpu", "--dry-run", "--no-wait"}, "--dry-run and --no-wait"},
		{[]string{"Shop", "gpu"}, `"Shop"`},
	} {
		o, err := parseCmd(t, newPoolSetCmd, c.argv...)
		wantParseError(t, o, err, c.want)
	}
}

// With no cluster map, pool set is a release of kind pool in place.
func TestRunPoolSetInPlace(t *testing.T) {
	p := phaseFixture(t, 0)
	ctx := context.Background()
	ios, _, _, errOut := cli.TestIOStreams()
	ch := fixtureChanger(p, ios)
	o := &poolSetOptions{Changer: ch, Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}, App: "shop", Pool: "gpu",
		Clusters: func() (*cluster.Config, error) { return &cluster.Config{}, nil },
		Here:     func(*cluster.Config, string) (string, error) { return "dev", nil },
		Connect:  func(ctx context.Context, _ string) (deploy.Deps, error) { return ch.Deps(ctx) }}
	if err := runPoolSet(ctx, o); err != nil {
		t.Fatalf("%v; stderr %q", err, errOut)
	}
	a, err := p.store.GetApp(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	rel, _, err := p.store.GetRelease(ctx, "shop", a.Release)
	if err != nil || rel.Kind != app.KindPool || rel.Pool != "gpu" {
		t.Errorf("release %+v, %v", rel, err)
	}
}
