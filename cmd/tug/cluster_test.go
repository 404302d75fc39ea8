package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
)

func TestNewClusterCmds(t *testing.T) {
	kc := writeKubeconfig(t, "prod-admin")
	t.Setenv("KUBECONFIG", kc)
	a, err := parseCmd(t, newClusterAddCmd, "prod", "--context", "prod-admin", "--pool", "web,worker", "--default")
	if err != nil || a == nil || a.Name != "prod" || a.Context != "prod-admin" || strings.Join(a.Pools, ",") != "web,worker" || !a.Default {
		t.Fatalf("add: error %v, options %+v", err, a)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{{[]string{"prod"}, "missing --context"}, {[]string{"Prod", "--context", "prod-admin"}, "invalid cluster name"}, {[]string{"prod", "--context", "nope"}, "nope"}} {
		a, err := parseCmd(t, newClusterAddCmd, c.argv...)
		wantParseError(t, a, err, c.want)
	}
	r, err := parseCmd(t, newClusterRemoveCmd, "edge")
	if err != nil || r == nil || r.Name != "edge" {
		t.Fatalf("remove: error %v, options %+v", err, r)
	}
	l, err := parseCmd(t, newClusterListCmd, "-o", "yaml")
	if err != nil || l == nil || l.Output.Format != cli.OutputYAML {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
}

// add writes the map, list shows it (warning of a context the kubeconfig
// lacks), remove says where the pools go.
func TestRunClusterAddListRemove(t *testing.T) {
	t.Setenv(cluster.EnvConfig, filepath.Join(t.TempDir(), "tug.yaml"))
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	add := &clusterAddOptions{IO: ios, Clusters: loadClusters, Output: cli.OutputTable}
	add.Cluster = cluster.Cluster{Name: "prod", Context: "prod-admin", Pools: []string{"web"}, Default: true}
	if err := runClusterAdd(ctx, add); err != nil || out.String() != "cluster \"prod\" added: context \"prod-admin\", pools web; the default for other pools\n" {
		t.Fatalf("add: %v, stdout %q", err, out)
	}
	add.Cluster = cluster.Cluster{Name: "gpu", Context: "gpu-admin", Pools: []string{"gpu"}}
	if err := runClusterAdd(ctx, add); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	list := &clusterListOptions{IO: ios, Clusters: loadClusters, CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable},
		Contexts: func() (map[string]bool, error) { return map[string]bool{"prod-admin": true}, nil }}
	if err := runClusterList(ctx, list); err != nil || !strings.Contains(out.String(), "prod\tprod-admin\tweb\tyes") ||
		!strings.Contains(errOut.String(), `warning: cluster "gpu": context "gpu-admin" is not in the kubeconfig`) {
		t.Errorf("list: %v\n%s\n%s", err, out, errOut)
	}
	out.Reset()
	rm := &clusterRemoveOptions{IO: ios, Clusters: loadClusters, Name: "gpu"}
	if err := runClusterRemove(ctx, rm); err != nil || !strings.Contains(out.String(), `its pools (gpu) now go to the default cluster "prod"`) {
		t.Errorf("remove: %v, stdout %q", err, out)
	}
	if err := runClusterRemove(ctx, rm); err == nil || !strings.Contains(err.Error(), `cluster "gpu" not found`) {
		t.Errorf("remove twice: %v", err)
	}
}
