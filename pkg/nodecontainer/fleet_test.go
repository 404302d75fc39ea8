package nodecontainer

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
)

func target(name string) cluster.Target {
	return cluster.Target{Cluster: cluster.Cluster{Name: name}, Client: fake.NewClientset(), Namespace: "infra"}
}

func TestFleetAddUpgradeRemoveAcrossClusters(t *testing.T) {
	ctx := context.Background()
	a, b := target("a"), target("b")
	fl := Fleet{Targets: []cluster.Target{a, b}}
	got, err := fl.Add(ctx, AddOptions{Name: "agent", Image: "agent:1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Cluster != "a" || got[1].Cluster != "b" || got[0].Image != "agent:1" {
		t.Fatalf("Add = %+v", got)
	}
	// only cluster a keeps it: an upgrade skips b, and so does a removal
	if err := (Fleet{Targets: []cluster.Target{b}}).Remove(ctx, "agent", ""); err != nil {
		t.Fatal(err)
	}
	up, err := fl.Upgrade(ctx, "agent", "", "agent:2")
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 1 || up[0].Cluster != "a" || up[0].Image != "agent:2" {
		t.Fatalf("Upgrade = %+v", up)
	}
	if err := fl.Remove(ctx, "agent", ""); err != nil {
		t.Fatal(err)
	}
	// now no cluster has it
	if _, err := fl.Upgrade(ctx, "agent", "", "agent:3"); !inputerr.Is(err) {
		t.Fatalf("Upgrade of a node container no cluster has = %v, want an input error", err)
	}
	if err := fl.Remove(ctx, "agent", ""); !inputerr.Is(err) {
		t.Fatalf("Remove of a node container no cluster has = %v, want an input error", err)
	}
	all, warnings, err := fl.List(ctx)
	if err != nil || len(all) != 0 || len(warnings) != 0 {
		t.Fatalf("List = %v, %v, %v", all, warnings, err)
	}
}

func TestFleetUnreachableCluster(t *testing.T) {
	ctx := context.Background()
	down := cluster.Target{Cluster: cluster.Cluster{Name: "down"}, Err: errors.New("context \"gone\" not found")}
	up := target("up")
	if _, err := (Fleet{Targets: []cluster.Target{up, down}}).Add(ctx, AddOptions{Name: "agent", Image: "agent:1"}); err == nil {
		t.Fatal("Add with an unreachable cluster succeeded")
	}
	all, warnings, err := Fleet{Targets: []cluster.Target{up, down}}.List(ctx)
	if err != nil || len(all) != 1 || len(warnings) != 1 {
		t.Fatalf("List = %v, %v, %v; want the reachable cluster's container and one warning", all, warnings, err)
	}
	if _, _, err := (Fleet{Targets: []cluster.Target{down}}).List(ctx); err == nil {
		t.Fatal("List with no cluster answering succeeded")
	}
}

func TestFleetRefusesBadInput(t *testing.T) {
	fl := Fleet{Targets: []cluster.Target{target("a")}}
	if _, err := fl.Add(context.Background(), AddOptions{Name: "Bad_Name", Image: "agent:1"}); !inputerr.Is(err) {
		t.Fatalf("Add of a bad name = %v", err)
	}
	if _, err := fl.Upgrade(context.Background(), "Bad_Name", "", ""); !inputerr.Is(err) {
		t.Fatalf("Upgrade of a bad name = %v", err)
	}
}
