package session

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

func TestListUnitsSkipsRunPodsAndLeavingUnits(t *testing.T) {
	run := unitPod("shop-run-abcde", "web", true)
	delete(run.Labels, kube.LabelProcess)
	run.Labels[kube.LabelKind] = KindRun
	leaving := unitPod("shop-web-old", "web", true)
	now := metav1.Now()
	leaving.DeletionTimestamp = &now
	c := fake.NewClientset(unitPod("shop-worker-1", "worker", true), unitPod("shop-web-b", "web", true), unitPod("shop-web-a", "web", false), run, leaving)
	units, err := ListUnits(context.Background(), c, ns, "shop")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range units {
		names = append(names, u.Name)
	}
	if got := strings.Join(names, " "); got != "shop-web-a shop-web-b shop-worker-1" {
		t.Fatalf("units = %s", got)
	}
	if !units[1].Ready || units[0].Ready || !units[0].Running || units[0].Container != "web" {
		t.Fatalf("unit state: %+v", units[0])
	}
}

func TestChooseUnit(t *testing.T) {
	c := fake.NewClientset(unitPod("shop-web-a", "web", false), unitPod("shop-web-b", "web", true), unitPod("shop-worker-1", "worker", true))
	seedShop(t, c, nil)
	d, ios, _, _ := testDeps(c, nil)
	f := d.finder()
	if err := f.load(context.Background(), Selection{App: "shop"}); err != nil {
		t.Fatal(err)
	}
	// no terminal: the first ready web unit
	u, err := chooseUnit(context.Background(), d, f, "", "")
	if err != nil || u.Name != "shop-web-b" {
		t.Fatalf("no terminal: %s, %v", u.Name, err)
	}
	u, err = chooseUnit(context.Background(), d, f, "", "worker")
	if err != nil || u.Name != "shop-worker-1" {
		t.Fatalf("-p worker: %s, %v", u.Name, err)
	}
	// a unit named
	if u, err = chooseUnit(context.Background(), d, f, "shop-web-a", ""); err != nil || u.Name != "shop-web-a" {
		t.Fatalf("named: %s, %v", u.Name, err)
	}
	_, err = chooseUnit(context.Background(), d, f, "shop-web-zz", "")
	if err == nil || !strings.Contains(err.Error(), "shop-web-a, shop-web-b, shop-worker-1") {
		t.Fatalf("unknown unit should list the valid ones: %v", err)
	}
	if _, err = chooseUnit(context.Background(), d, f, "shop-web-a", "worker"); !inputerr.Is(err) {
		t.Fatalf("a unit of another process: %v", err)
	}
	// a terminal with several units: the user picks
	ios.stdinTTY, ios.stdoutTTY = true, true
	p := &fakePrompter{answers: []string{"shop-worker-1  worker, started, on node1, up 1h"}}
	d.Prompter = p
	u, err = chooseUnit(context.Background(), d, f, "", "")
	if err != nil || u.Name != "shop-worker-1" {
		t.Fatalf("prompt: %s, %v (asked %v)", u.Name, err, p.asked)
	}
	// ... but only one candidate needs no question
	u, err = chooseUnit(context.Background(), d, f, "", "worker")
	if err != nil || u.Name != "shop-worker-1" || len(p.asked) != 1 {
		t.Fatalf("single candidate: %s, %v, asked %v", u.Name, err, p.asked)
	}
}

func TestNoUnitsSaysHowToGetSome(t *testing.T) {
	c := fake.NewClientset(pending(unitPod("shop-worker-1", "worker", false)))
	seedShop(t, c, nil)
	d, _, _, _ := testDeps(c, nil)
	f := d.finder()
	if err := f.load(context.Background(), Selection{App: "shop"}); err != nil {
		t.Fatal(err)
	}
	_, err := chooseUnit(context.Background(), d, f, "", "web")
	if err == nil || !strings.Contains(err.Error(), `process "web" of app "shop" has no units`) || !strings.Contains(err.Error(), "tug app scale shop web=1") {
		t.Fatalf("no web units: %v", err)
	}
	_, err = chooseUnit(context.Background(), d, f, "", "worker")
	if err == nil || !strings.Contains(err.Error(), "not started") || !strings.Contains(err.Error(), "tug unit list shop") {
		t.Fatalf("a pending unit only: %v", err)
	}
	if _, err = chooseUnit(context.Background(), d, f, "shop-worker-1", ""); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("a named pending unit: %v", err)
	}
	if err := f.load(context.Background(), Selection{App: "shop", Process: "db"}); !inputerr.Is(err) || !strings.Contains(err.Error(), "web, worker") {
		t.Fatalf("unknown process: %v", err)
	}
}
