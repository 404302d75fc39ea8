package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/progress"
)

func TestNewNodeContainerCmds(t *testing.T) {
	a, err := parseCmd(t, newNodeContainerAddCmd, "agent", "--image", "agent:1.4", "--pool", "gpu", "--env", "MODE=gpu", "--privileged", "--no-wait")
	if err != nil || a == nil || a.Name != "agent" || a.Image != "agent:1.4" || a.Pool != "gpu" || len(a.AddOptions.Env) != 1 || a.AddOptions.Env[0].Value != "gpu" || !a.Privileged || !a.Wait.NoWait {
		t.Fatalf("add: error %v, options %+v", err, a)
	}
	a, err = parseCmd(t, newNodeContainerAddCmd, "agent", "--image", "x", "--pool", "a b")
	wantParseError(t, a, err, `invalid pool "a b"`)
	u, err := parseCmd(t, newNodeContainerUpgradeCmd, "agent", "--image", "agent:1.5", "--timeout", "1m")
	if err != nil || u == nil || u.Name != "agent" || u.Image != "agent:1.5" || u.Wait.Timeout != time.Minute {
		t.Fatalf("upgrade: error %v, options %+v", err, u)
	}
	u, err = parseCmd(t, newNodeContainerUpgradeCmd, "Agent")
	wantParseError(t, u, err, "invalid node container name")
	r, err := parseCmd(t, newNodeContainerRemoveCmd, "agent", "--pool", "gpu", "-y")
	if err != nil || r == nil || r.Name != "agent" || r.Pool != "gpu" || !r.Yes {
		t.Fatalf("remove: error %v, options %+v", err, r)
	}
	r, err = parseCmd(t, newNodeContainerRemoveCmd, "agent", "--pool", "a/b")
	wantParseError(t, r, err, "invalid pool")
	l, err := parseCmd(t, newNodeContainerListCmd, "--cluster", "edge")
	if err != nil || l == nil || l.Cluster != "edge" {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
}

// add stores the DaemonSet, list shows it, remove needs --yes off a
// terminal and then removes it.
func TestRunNodeContainerAddListRemove(t *testing.T) {
	cs := fake.NewClientset()
	target := cluster.Target{Cluster: cluster.Cluster{Name: "local", Context: "dev"}, Implicit: true, Client: cs, Namespace: "dev"}
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	clusters := ncClusters{Targets: func(string) ([]cluster.Target, error) { return []cluster.Target{target}, nil },
		PoolTarget: func(string, string) (cluster.Target, error) { return target, nil },
		Progress:   func() progress.Reporter { return cli.NewProgress(ios) }}
	add := &ncAddOptions{IO: ios, Clusters: clusters, Wait: waitFlags{NoWait: true}, Output: cli.OutputTable}
	add.Name, add.Image = "agent", "agent:1.4"
	if err := runNodeContainerAdd(ctx, add); err != nil {
		t.Fatalf("add: %v; stderr %q", err, errOut)
	}
	out.Reset()
	list := &ncListOptions{IO: ios, Targets: clusters.Targets, CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runNodeContainerList(ctx, list); err != nil || !strings.Contains(out.String(), "agent\t(default)\tagent:1.4\t") {
		t.Errorf("list: %v\n%s", err, out)
	}
	rm := &ncRemoveOptions{IO: ios, Clusters: clusters, Prompter: func() cli.Prompter { return nil }, Name: "agent"}
	if err := runNodeContainerRemove(ctx, rm); err == nil || !strings.Contains(err.Error(), "pass --yes") {
		t.Errorf("remove without --yes: %v", err)
	}
	rm.Yes = true
	if err := runNodeContainerRemove(ctx, rm); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if err := runNodeContainerList(ctx, list); err != nil || !strings.Contains(errOut.String(), "no node containers") {
		t.Errorf("list after remove: %v, stderr %q", err, errOut)
	}
}
