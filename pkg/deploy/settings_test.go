package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lock"
)

// settingsFixture is an app "shop" with web and worker, deployed as v1 and
// v2 (no wait: the fake clientset runs no controllers).
func settingsFixture(t *testing.T) (*fake.Clientset, *app.Store) {
	t.Helper()
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	for _, image := range []string{"shop:1", "shop:2"} {
		if _, err := Roll(context.Background(), deps(c), "shop", DeployChange(image, map[string]string{"web": "", "worker": "work"}, ""), Options{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	return c, s
}

func releaseVersions(t *testing.T, s *app.Store) []int {
	t.Helper()
	rels, err := s.ListReleases(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	var vs []int
	for _, r := range rels {
		vs = append(vs, r.Version)
	}
	return vs
}

func changeRollout(c *fake.Clientset, set app.SetRolloutOptions) (*Result, error) {
	set.App = "shop"
	return ChangeRollout(context.Background(), deps(c), "shop", "settings: test", set.Apply, Options{NoWait: true})
}

// Pace, history and deploy timeout change in place: no release, the pod
// templates as they were (no unit restarts), the strategy and the record
// changed, the lowered history pruned at once.
func TestChangeRolloutInPlace(t *testing.T) {
	c, s := settingsFixture(t)
	ctx := context.Background()
	before := listDeployments(t, c)
	res, err := changeRollout(c, app.SetRolloutOptions{MaxSurge: "0", MaxUnavailable: "1", History: "1", DeployTimeout: "15m"})
	if err != nil {
		t.Fatal(err)
	}
	if res.UnitsRestarted == nil || *res.UnitsRestarted || res.Release != 2 || res.Status != app.StatusDeployed || len(res.Processes) != 2 {
		t.Errorf("result: %+v, want release 2 deployed, units not restarted", res)
	}
	after := listDeployments(t, c)
	for name, d := range after {
		if !equalJSON(d.Spec.Template, before[name].Spec.Template) {
			t.Errorf("%s: pod template changed:\n%v\n%v", name, before[name].Spec.Template, d.Spec.Template)
		}
		ru := d.Spec.Strategy.RollingUpdate
		if ru == nil || ru.MaxSurge.String() != "0" || ru.MaxUnavailable.String() != "1" {
			t.Errorf("%s: strategy %+v, want surge 0 unavailable 1", name, ru)
		}
	}
	a := getApp(t, s, "shop")
	if a.Release != 2 || a.LastRelease != 2 {
		t.Errorf("record: release %d last %d, want 2 and 2 (no new release)", a.Release, a.LastRelease)
	}
	r, cfg := getRelease(t, s, 2)
	want := app.Rollout{MaxSurge: "0", MaxUnavailable: "1", History: 1, DeployTimeout: 900}
	if r.Rollout != want || r.Status != app.StatusDeployed || r.Image != "shop:2" || cfg == nil {
		t.Errorf("v2 after the change: rollout %+v status %s image %s", r.Rollout, r.Status, r.Image)
	}
	if len(r.RolloutChanges) != 1 || r.RolloutChanges[0].Message != "settings: test" || r.RolloutChanges[0].Author != "alice" || r.RolloutChanges[0].At.IsZero() {
		t.Errorf("v2's rollout changes: %+v", r.RolloutChanges)
	}
	if got := releaseVersions(t, s); !slices.Equal(got, []int{2}) {
		t.Errorf("releases after --history 1: %v, want [2] (pruned now, not at the next deploy)", got)
	}

	// the next deploy starts from the new settings, and runs under them
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:3", map[string]string{"web": "", "worker": "work"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if r, _ := getRelease(t, s, 3); r.Rollout != want || len(r.RolloutChanges) != 0 {
		t.Errorf("v3: rollout %+v changes %+v, want v2's settings and no changes of its own", r.Rollout, r.RolloutChanges)
	}
	if got := releaseVersions(t, s); !slices.Equal(got, []int{3}) {
		t.Errorf("releases after a deploy with history 1: %v, want [3]", got)
	}
	if ru := listDeployments(t, c)["shop-web"].Spec.Strategy.RollingUpdate; ru.MaxSurge.String() != "0" {
		t.Errorf("strategy after the deploy: %+v", ru)
	}
}

// A rollback to a release from before an in-place change brings back its
// settings; one to the changed release, the new ones.
func TestChangeRolloutRollback(t *testing.T) {
	c, s := settingsFixture(t)
	ctx := context.Background()
	if _, err := changeRollout(c, app.SetRolloutOptions{MaxSurge: "0", MaxUnavailable: "1", History: "5"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := getRelease(t, s, 1); !r.Rollout.IsZero() || len(r.RolloutChanges) != 0 {
		t.Errorf("v1 changed too: %+v %+v", r.Rollout, r.RolloutChanges)
	}
	roll := func(target int) {
		t.Helper()
		if _, err := Roll(ctx, deps(c), "shop", RollbackChange(ctx, s, target), Options{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	roll(1) // v3
	if r, _ := getRelease(t, s, 3); !r.Rollout.IsZero() {
		t.Errorf("rollback to v1: settings %+v, want v1's (the defaults)", r.Rollout)
	}
	if ru := listDeployments(t, c)["shop-web"].Spec.Strategy.RollingUpdate; ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "0" {
		t.Errorf("strategy after rollback to v1: %+v", ru)
	}
	roll(2) // v4
	if r, _ := getRelease(t, s, 4); r.Rollout != (app.Rollout{MaxSurge: "0", MaxUnavailable: "1", History: 5}) {
		t.Errorf("rollback to v2: settings %+v, want those set in place", r.Rollout)
	}
	if ru := listDeployments(t, c)["shop-web"].Spec.Strategy.RollingUpdate; ru.MaxSurge.String() != "0" || ru.MaxUnavailable.String() != "1" {
		t.Errorf("strategy after rollback to v2: %+v", ru)
	}
}

// The grace period is part of the pod spec: a change of it, alone or with
// others, is a release that rolls the units.
func TestChangeRolloutGracePeriodRolls(t *testing.T) {
	for _, set := range []app.SetRolloutOptions{
		{GracePeriod: "5s"},
		{GracePeriod: "5s", MaxSurge: "50%", History: "3"},
	} {
		c, s := settingsFixture(t)
		before := listDeployments(t, c)
		res, err := changeRollout(c, set)
		if err != nil {
			t.Fatal(err)
		}
		if res.UnitsRestarted == nil || !*res.UnitsRestarted || res.Release != 3 {
			t.Errorf("%+v: result %+v, want release 3 with units restarted", set, res)
		}
		r, _ := getRelease(t, s, 3)
		if r.Kind != app.KindSettings || r.Rollout.GracePeriod != 5 || r.Message != "settings: test" || len(r.RolloutChanges) != 0 {
			t.Errorf("%+v: v3 %+v", set, r)
		}
		if r, _ := getRelease(t, s, 2); !r.Rollout.IsZero() || len(r.RolloutChanges) != 0 {
			t.Errorf("%+v: v2 changed in place: %+v", set, r.Rollout)
		}
		web := listDeployments(t, c)["shop-web"]
		if equalJSON(web.Spec.Template, before["shop-web"].Spec.Template) || web.Spec.Template.Labels["tug.dev/release"] != "3" {
			t.Errorf("%+v: the pod template did not change to v3's", set)
		}
		if g := web.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 5 {
			t.Errorf("%+v: grace period %v", set, g)
		}
	}
}

// Settings as they are, and a refusal found under the lock: nothing is
// written, neither a record nor a Deployment.
func TestChangeRolloutNothingChanges(t *testing.T) {
	c, s := settingsFixture(t)
	if _, err := changeRollout(c, app.SetRolloutOptions{MaxSurge: "0", MaxUnavailable: "1"}); err != nil {
		t.Fatal(err)
	}
	versions := func() map[string]string {
		out := map[string]string{}
		secs, _ := c.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
		for _, x := range secs.Items {
			out["secret "+x.Name] = x.ResourceVersion
		}
		for name, d := range listDeployments(t, c) {
			out["deployment "+name] = d.ResourceVersion
		}
		return out
	}
	before := versions()
	if _, err := changeRollout(c, app.SetRolloutOptions{MaxSurge: "0", MaxUnavailable: "1"}); !errors.Is(err, ErrNoChange) {
		t.Errorf("the same settings: %v, want ErrNoChange", err)
	}
	// max-unavailable 0 with the release's surge of 0 could not roll out
	_, err := changeRollout(c, app.SetRolloutOptions{MaxUnavailable: "0"})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "cannot both be 0") {
		t.Errorf("surge and unavailable both 0: %v, want a usage error", err)
	}
	_, err = ChangeRollout(context.Background(), deps(c), "shop", "unset", app.UnsetRolloutOptions{App: "shop", MaxUnavailable: true}.Apply, Options{NoWait: true})
	if !inputerr.Is(err) {
		t.Errorf("unset max-unavailable with surge 0: %v, want a usage error", err)
	}
	if after := versions(); !equalJSON(before, after) {
		t.Errorf("a change refused or without effect wrote:\n%v\n%v", before, after)
	}
	if r, _ := getRelease(t, s, 2); len(r.RolloutChanges) != 1 {
		t.Errorf("v2's changes: %+v, want the one change", r.RolloutChanges)
	}
}

// Config staged for the next rollout (env set --no-restart) is the next
// deploy's base: it gets the new settings too, and stays staged.
func TestChangeRolloutStaged(t *testing.T) {
	c, s := settingsFixture(t)
	ctx := context.Background()
	if _, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	res, err := changeRollout(c, app.SetRolloutOptions{History: "4"})
	if err != nil || !(res.UnitsRestarted != nil && !*res.UnitsRestarted) || res.Release != 2 {
		t.Fatalf("result %+v, %v", res, err)
	}
	for _, v := range []int{2, 3} {
		if r, _ := getRelease(t, s, v); r.Rollout.History != 4 || len(r.RolloutChanges) != 1 {
			t.Errorf("v%d: %+v %+v", v, r.Rollout, r.RolloutChanges)
		}
	}
	if r, _ := getRelease(t, s, 3); r.Status != app.StatusStaged {
		t.Errorf("v3 is %s, want still staged", r.Status)
	}
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:3", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if r, cfg := getRelease(t, s, 4); r.Rollout.History != 4 || cfg["A"] != "1" {
		t.Errorf("deploy after: history %d config %v", r.Rollout.History, cfg)
	}
}

// Before the first deploy there is nothing to change the settings of.
func TestChangeRolloutNotDeployed(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	_, err := changeRollout(c, app.SetRolloutOptions{History: "4"})
	if err == nil || !strings.Contains(err.Error(), "has not been deployed yet") {
		t.Errorf("got %v", err)
	}
}

// A Deployment of the app's name that is not the app's is not changed.
func TestChangeRolloutForeignDeployment(t *testing.T) {
	c, s := settingsFixture(t)
	web := listDeployments(t, c)["shop-web"]
	web.Labels = map[string]string{"owner": "helm"}
	if _, err := c.AppsV1().Deployments(ns).Update(context.Background(), &web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := changeRollout(c, app.SetRolloutOptions{MaxSurge: "1"})
	if err == nil || !strings.Contains(err.Error(), "is not tug's") {
		t.Errorf("got %v", err)
	}
	deps := listDeployments(t, c)
	for _, name := range []string{"shop-web", "shop-worker"} {
		if ru := deps[name].Spec.Strategy.RollingUpdate; ru.MaxSurge.String() != "25%" {
			t.Errorf("%s changed: %+v", name, ru)
		}
	}
	if r, _ := getRelease(t, s, 2); !r.Rollout.IsZero() {
		t.Errorf("v2's settings changed: %+v", r.Rollout)
	}
}

// A change waits for no one: while another command holds the app's lock
// it fails at once, and nothing is written.
func TestChangeRolloutLocked(t *testing.T) {
	c, s := settingsFixture(t)
	held, err := lock.Acquire(context.Background(), lock.Request{Client: c, Namespace: ns, App: "shop", Holder: lock.Holder{User: "bob", PID: 7, Host: "ci"}})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	_, err = changeRollout(c, app.SetRolloutOptions{History: "3"})
	var locked *lock.HeldError
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), "bob") {
		t.Errorf("got %v, want the lock's holder named", err)
	}
	if r, _ := getRelease(t, s, 2); !r.Rollout.IsZero() {
		t.Errorf("v2 changed without the lock: %+v", r.Rollout)
	}
}
