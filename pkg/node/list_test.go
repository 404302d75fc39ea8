package node

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/usage"
)

func TestListSpansClustersAndReportsUnreachable(t *testing.T) {
	a := readyNode("a1", true)
	a.Labels[kube.LabelPool] = "web"
	prod := fake.NewClientset(a, readyNode("a2", false), unitPod("x", "shop", "web", "u1", "a1", true), unitPod("x", "shop", "web", "u2", "a1", false))
	gpu := fake.NewClientset(readyNode("g1", true))
	ts := []cluster.Target{
		{Cluster: cluster.Cluster{Name: "prod", Context: "p"}, Client: prod},
		{Cluster: cluster.Cluster{Name: "gpu", Context: "g"}, Client: gpu},
		{Cluster: cluster.Cluster{Name: "dead", Context: "d"}, Err: errors.New("cannot reach the cluster")},
	}
	res, err := List(context.Background(), ts, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range res.Nodes {
		names = append(names, n.Cluster+"/"+n.Name)
	}
	if got := strings.Join(names, ","); got != "gpu/g1,prod/a1,prod/a2" {
		t.Fatalf("nodes %s", got)
	}
	if *res.Nodes[1].Units != 2 || res.Nodes[1].Pool != "web" || res.Nodes[2].Status != StatusNotReady {
		t.Fatalf("a1/a2: %+v %+v", res.Nodes[1], res.Nodes[2])
	}
	if len(res.Unreachable) != 1 || res.Unreachable[0].Cluster != "dead" {
		t.Fatalf("unreachable %+v", res.Unreachable)
	}

	// By pool: label selector.
	res, err = List(context.Background(), ts[:1], ListOptions{Pool: "web"})
	if err != nil || len(res.Nodes) != 1 || res.Nodes[0].Name != "a1" {
		t.Fatalf("pool web: %+v %v", res, err)
	}
	// Every cluster failing is the command's failure.
	if _, err := List(context.Background(), ts[2:], ListOptions{}); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("all unreachable: %v", err)
	}
}

func TestFind(t *testing.T) {
	prod := fake.NewClientset(readyNode("a1", true))
	gpu := fake.NewClientset(readyNode("a1", true), readyNode("g1", true))
	ts := []cluster.Target{
		{Cluster: cluster.Cluster{Name: "prod"}, Client: prod},
		{Cluster: cluster.Cluster{Name: "gpu"}, Client: gpu},
	}
	ctx := context.Background()
	if f, err := Find(ctx, ts, "g1"); err != nil || f.Target.Name != "gpu" {
		t.Fatalf("g1: %+v %v", f, err)
	}
	var amb *AmbiguousError
	if _, err := Find(ctx, ts, "a1"); !errors.As(err, &amb) {
		t.Fatalf("a1 is in both: %v", err)
	}
	var nf *NotFoundError
	if _, err := Find(ctx, ts, "zz"); !errors.As(err, &nf) {
		t.Fatalf("zz: %v", err)
	}
	// By address.
	if f, err := Find(ctx, ts[1:], "10.0.0.9"); err != nil || f.Node.Name != "a1" {
		t.Fatalf("by address: %+v %v", f, err)
	}
}

func TestListPools(t *testing.T) {
	ctx := context.Background()
	n1 := readyNode("n1", true)
	n1.Labels[kube.LabelPool] = "web"
	n2 := readyNode("n2", true)
	n2.Labels[kube.LabelPool] = "web"
	n2.Spec.Unschedulable = true
	n3 := readyNode("n3", true) // no pool
	client := fake.NewClientset(n1, n2, n3)
	for ns, a := range map[string]*app.App{"team-a": {Name: "shop", Pool: "web"}, "team-b": {Name: "ml", Pool: "gpu"}, "team-c": {Name: "free"}} {
		a.Namespace = ns
		if err := (&app.Store{Client: client, Namespace: ns}).CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	ts := []cluster.Target{{Cluster: cluster.Cluster{Name: "prod", Pools: []string{"web", "batch"}}, Client: client}}
	res, err := ListPools(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Pool{}
	for _, p := range res.Pools {
		got[p.Name] = p
	}
	if len(got) != 3 {
		t.Fatalf("pools %+v; want web (nodes), gpu (an app), batch (configured)", res.Pools)
	}
	if w := got["web"]; strings.Join(w.Nodes, ",") != "n1,n2" || w.Ready != 1 || strings.Join(w.Apps, ",") != "team-a/shop" {
		t.Fatalf("web %+v", w)
	}
	if g := got["gpu"]; len(g.Nodes) != 0 || strings.Join(g.Apps, ",") != "team-b/ml" {
		t.Fatalf("gpu %+v: an app's pool with no node is listed", g)
	}
	if b := got["batch"]; b.Cluster != "prod" || len(b.Nodes) != 0 {
		t.Fatalf("batch %+v", b)
	}
}

// TestValidateRef (issue 12 item 8): a node argument that cannot name a
// node is an input error, found without a cluster.
func TestValidateRef(t *testing.T) {
	for _, ok := range []string{"node7", "ip-10-0-0-1.ec2.internal", "10.0.0.1", "fd00::1"} {
		if err := ValidateRef(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Bad_Name!", "a b", "node7/x"} {
		if err := ValidateRef(bad); !usage.Is(err) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}
