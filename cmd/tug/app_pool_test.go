package main

import (
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/move"
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

func TestMovedRuns(t *testing.T) {
	if got := movedRuns(&move.Result{Pool: "pa"}); strings.Contains(got, "v0") || !strings.Contains(got, "never deployed") {
		t.Errorf("never-deployed app: %q", got)
	}
	if got := movedRuns(&move.Result{Pool: "pa", Release: 3}); got != "v3 runs on pool pa" {
		t.Errorf("deployed app: %q", got)
	}
}
