package move

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
)

// Three clusters for the tests of what moves leave: alpha (pool pa), beta
// (pb) and gamma (pc), each a fake; nil is a cluster that does not answer.
var threeClusters = &cluster.Config{Clusters: []cluster.Cluster{
	{Name: "alpha", Context: "ctx-a", Pools: []string{"pa"}},
	{Name: "beta", Context: "ctx-b", Pools: []string{"pb"}},
	{Name: "gamma", Context: "ctx-c", Pools: []string{"pc"}},
}}

// locate finds shop the way routing does, asking each fake for its copy.
func locate(t *testing.T, clusters map[string]*fake.Clientset) *cluster.Location {
	t.Helper()
	loc, err := cluster.Locate(context.Background(), threeClusters, "shop", func(ctx context.Context, kubeContext, name string) (cluster.Copy, error) {
		c := clusters[kubeContext]
		if c == nil {
			return cluster.Copy{}, errors.New("no answer")
		}
		a, err := (&app.Store{Client: c, Namespace: ns}).GetApp(ctx, name)
		if app.IsNotFound(err) {
			return cluster.Copy{Namespace: ns}, nil
		}
		if err != nil {
			return cluster.Copy{}, err
		}
		return a.LocateCopy(ns), nil
	})
	if err != nil {
		t.Fatalf("Locate: %v", err)
	}
	return loc
}

// poolSetIn runs a pool set as 'tug app pool set shop POOL' does, the app
// located in clusters and here the context that holds it.
func poolSetIn(t *testing.T, clusters map[string]*fake.Clientset, here, pool string) (*PoolSetOutcome, error) {
	t.Helper()
	req := PoolSetRequest{App: "shop", Pool: pool, Here: here, Config: threeClusters, Loc: locate(t, clusters)}
	connect := func(kubeContext string) (deploy.Deps, error) {
		if kubeContext == "" {
			kubeContext = here
		}
		c := clusters[kubeContext]
		if c == nil {
			return deploy.Deps{}, errors.New("no answer")
		}
		d := deps(c)
		d.Progress = progress.Nop{}
		return d, nil
	}
	return PoolSet(context.Background(), req, connect, Options{Timeout: 5 * time.Second})
}

func setMark(t *testing.T, s *app.Store, m *app.Move) {
	t.Helper()
	if _, err := s.UpdateApp(context.Background(), "shop", func(x *app.App) error { x.Move = m; return nil }); err != nil {
		t.Fatal(err)
	}
}

func store(c *fake.Clientset) *app.Store { return &app.Store{Client: c, Namespace: ns} }

// halfMadeMove is a move from beta to alpha killed once its copy was made:
// beta's copy marked as the serving source, alpha's as the target.
func halfMadeMove(t *testing.T) (beta, alpha *fake.Clientset, started time.Time) {
	t.Helper()
	beta, _ = deployedSource(t)
	from := store(beta) // a store that read nothing yet: the fake takes a stale write
	alpha, to := newFake()
	started = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	setMark(t, from, &app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa", StartedAt: started})
	if _, err := from.CopyTo(context.Background(), to, "shop", &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa", StartedAt: started}); err != nil {
		t.Fatal(err)
	}
	return beta, alpha, started
}

// A move to a third cluster after a move cut short: the earlier move is
// given up first (its half-made copy removed), so no copy is left that
// every later command would call an unfinished move.
func TestMoveToAThirdClusterGivesUpTheEarlierMove(t *testing.T) {
	ctx := context.Background()
	beta, alpha, _ := halfMadeMove(t)
	gamma := runningTarget(t)
	clusters := map[string]*fake.Clientset{"ctx-a": alpha, "ctx-b": beta, "ctx-c": gamma}
	out, err := poolSetIn(t, clusters, "ctx-b", "pc")
	if err != nil || out.Moved == nil || out.Moved.Status != "moved" || out.Moved.GaveUp != "alpha" {
		t.Fatalf("pool set pc = %+v, %v; want the earlier move given up and the app moved", out, err)
	}
	if _, err := store(alpha).GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("the earlier move's half-made copy is still in alpha: %v", err)
	}
	if secs, _ := alpha.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); len(secs.Items) != 0 {
		t.Errorf("alpha keeps %d secrets", len(secs.Items))
	}
	if a := getApp(t, store(gamma), "shop"); a.Move != nil || a.Pool != "pc" {
		t.Errorf("gamma's copy %+v, mark %+v", a, a.Move)
	}
	if _, err := store(beta).GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("beta still holds the app: %v", err)
	}
	if loc := locate(t, clusters); len(loc.Others()) != 0 || loc.Name != "gamma" || loc.Copy.Describe != "" {
		t.Errorf("after the move the lookup finds %+v and others %+v", loc.Copy, loc.Others())
	}
}

// The cluster of the earlier move's copy does not answer: tug cannot
// remove that copy, so it does not erase the only record of it either.
func TestMoveToAThirdClusterWhileTheEarlierTargetIsSilent(t *testing.T) {
	ctx := context.Background()
	beta, _, started := halfMadeMove(t)
	gamma := runningTarget(t)
	_, err := poolSetIn(t, map[string]*fake.Clientset{"ctx-b": beta, "ctx-c": gamma}, "ctx-b", "pc")
	if err == nil || !strings.Contains(err.Error(), `"alpha"`) {
		t.Fatalf("pool set pc with alpha silent = %v; want a refusal naming alpha", err)
	}
	if a := getApp(t, store(beta), "shop"); a.Move == nil || !a.Move.StartedAt.Equal(started) || a.Move.To != "alpha" {
		t.Errorf("beta's mark of the earlier move was changed: %+v", a.Move)
	}
	if _, err := store(gamma).GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("gamma got a copy: %v", err)
	}
}

// App itself never overwrites the mark of an unfinished move to another
// cluster (PoolSet gives that move up first).
func TestMoveRefusesASourceMarkedForAnotherCluster(t *testing.T) {
	beta, _, started := halfMadeMove(t)
	gamma := runningTarget(t)
	o := moveOpts()
	o.Pool, o.To = "pc", "gamma"
	_, err := App(context.Background(), deps(beta), deps(gamma), "shop", o)
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "alpha") {
		t.Fatalf("Move = %v; want a usage error naming the earlier move's cluster", err)
	}
	if a := getApp(t, store(beta), "shop"); a.Move == nil || !a.Move.StartedAt.Equal(started) {
		t.Errorf("the earlier mark was changed: %+v", a.Move)
	}
	assertNoLease(t, beta)
}

// Giving up a move cut short, the app staying on the pool it has: the
// half-made copy goes, the mark is dropped, and nothing is rolled out
// (no unit restarts); another pool of the same cluster rolls out.
func TestGiveUpWithoutARollout(t *testing.T) {
	ctx := context.Background()
	beta, alpha, _ := halfMadeMove(t)
	deploysBefore := listDeployments(t, beta)
	clusters := map[string]*fake.Clientset{"ctx-a": alpha, "ctx-b": beta, "ctx-c": fakeClient()}
	out, err := poolSetIn(t, clusters, "ctx-b", "pb")
	if err != nil || !out.Abandoned || out.Rollout {
		t.Fatalf("pool set pb = %+v, %v; want the move given up and no rollout", out, err)
	}
	if out.Result == nil || out.Result.Release != 2 || out.Result.UnitsRestarted == nil || *out.Result.UnitsRestarted {
		t.Errorf("result of giving up %+v; want v2, units not restarted", out.Result)
	}
	if _, err := store(alpha).GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("the half-made copy is still in alpha: %v", err)
	}
	a := getApp(t, store(beta), "shop")
	if a.Move != nil || a.Release != 2 || a.LastRelease != 2 {
		t.Errorf("beta after giving up: %+v mark %+v", a, a.Move)
	}
	after := listDeployments(t, beta)
	for name, d := range deploysBefore {
		if after[name].Spec.Template.Labels[kube.LabelRelease] != d.Spec.Template.Labels[kube.LabelRelease] {
			t.Errorf("deployment %s changed its release", name)
		}
	}
}

// The new copy of a move is not a source for another move, whatever the
// context says: its old copy may still serve, and the move that made it
// may still be running.
func TestMoveRefusesAMoveTargetAsSource(t *testing.T) {
	_, alpha, started := halfMadeMove(t)
	gamma := runningTarget(t)
	o := moveOpts()
	o.Pool, o.From, o.To = "pc", "alpha", "gamma"
	_, err := App(context.Background(), deps(alpha), deps(gamma), "shop", o)
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "new copy") {
		t.Fatalf("Move of a move's new copy = %v; want a usage error", err)
	}
	if a := getApp(t, store(alpha), "shop"); a.Move == nil || a.Move.Role != app.MoveTarget || !a.Move.StartedAt.Equal(started) {
		t.Errorf("the new copy's mark was changed: %+v", a.Move)
	}
	if _, err := store(gamma).GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("gamma got a copy: %v", err)
	}
}

// The marks are checked again under the lock: a copy that became a move's
// new copy while App waited for the lock is refused too.
func TestMoveChecksTheMarkUnderTheLock(t *testing.T) {
	src, _ := deployedSource(t)
	from := store(src)
	// the record as it will be: marked as another move's new copy
	setMark(t, from, &app.Move{Role: app.MoveTarget, From: "gamma", To: "beta", Pool: "pb", StartedAt: time.Unix(7, 0).UTC()})
	marked, err := src.CoreV1().ConfigMaps(ns).Get(context.Background(), app.AppRecordName("shop"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setMark(t, from, nil)
	src.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		cm := marked.DeepCopy()
		cm.ResourceVersion = ""
		if err := src.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), cm, ns); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	_, err = App(context.Background(), deps(src), deps(runningTarget(t)), "shop", moveOpts())
	if !inputerr.Is(err) {
		t.Fatalf("Move = %v; want a refusal found under the lock", err)
	}
	if a := getApp(t, from, "shop"); a.Move == nil || a.Move.Role != app.MoveTarget || a.Move.From != "gamma" {
		t.Errorf("the mark set meanwhile was overwritten: %+v", a.Move)
	}
}

// Finishing drops the new copy's mark only if it is the same move's; a
// copy marked by another move is not the superseded copy's successor, and
// the superseded copy stays.
func TestFinishMoveLeavesAnotherMovesMark(t *testing.T) {
	ctx := context.Background()
	beta, alpha, started := halfMadeMove(t)
	setMark(t, store(beta), &app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa", StartedAt: started, Superseded: true})
	other := &app.Move{Role: app.MoveSource, From: "alpha", To: "gamma", Pool: "pc", StartedAt: started.Add(time.Hour)}
	setMark(t, store(alpha), other)
	if err := Finish(ctx, deps(alpha), deps(beta), "shop"); err == nil {
		t.Error("Finish with the new copy marked by another move succeeded")
	}
	if a := getApp(t, store(alpha), "shop"); a.Move == nil || !a.Move.SameMove(other) || a.Move.Role != app.MoveSource {
		t.Errorf("another move's mark was dropped: %+v", a.Move)
	}
	if _, err := store(beta).GetApp(ctx, "shop"); err != nil {
		t.Errorf("the superseded copy was removed: %v", err)
	}
}

// A superseded copy whose new copy no configured cluster holds: pool set
// to its own pool makes it the app again (its mark dropped, the release
// rolled out again, as its removal may have begun); a move from it is
// refused, saying that; a silent cluster, which may hold the new copy,
// leaves the mark alone.
func TestSupersededCopyWithoutItsNewCopy(t *testing.T) {
	beta, _ := deployedSource(t)
	setMark(t, store(beta), &app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa", StartedAt: time.Unix(9, 0).UTC(), Superseded: true})
	clusters := map[string]*fake.Clientset{"ctx-a": fakeClient(), "ctx-b": beta, "ctx-c": fakeClient()}
	_, err := poolSetIn(t, clusters, "ctx-b", "pa")
	if err == nil || !strings.Contains(err.Error(), "'tug app pool set shop pb'") {
		t.Errorf("moving a superseded copy = %v; want it to say 'tug app pool set shop pb'", err)
	}
	if a := getApp(t, store(beta), "shop"); a.Move == nil || !a.Move.Superseded {
		t.Errorf("the refused move changed the mark: %+v", a.Move)
	}
	out, err := poolSetIn(t, clusters, "ctx-b", "pb")
	if err != nil || !out.Reclaimed || !out.Rollout {
		t.Fatalf("pool set pb = %+v, %v; want the copy made the app again, then a rollout", out, err)
	}
	if a := getApp(t, store(beta), "shop"); a.Move != nil {
		t.Errorf("the superseded mark is still there: %+v", a.Move)
	}
}

func TestPlanReclaimNeedsEveryClusterToAnswer(t *testing.T) {
	beta := threeClusters.Clusters[1]
	cp := cluster.Copy{Found: true, Namespace: ns, Pool: "pb", Move: cluster.MoveSuperseded, Describe: "superseded"}
	loc := &cluster.Location{App: "shop", Found: true, Cluster: beta, Copy: cp, Clusters: []cluster.Searched{
		{Cluster: threeClusters.Clusters[0], Err: errors.New("down")}, {Cluster: beta, Copy: cp}, {Cluster: threeClusters.Clusters[2]},
	}}
	p, err := PlanPoolSet(PoolSetRequest{App: "shop", Pool: "pb", Here: "ctx-b", Config: threeClusters, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	if p.Has(StepReclaim) {
		t.Errorf("plan %v reclaims a superseded copy while a cluster was silent", p.Steps)
	}
	loc.Clusters[0].Err = nil
	if p, err = PlanPoolSet(PoolSetRequest{App: "shop", Pool: "pb", Here: "ctx-b", Config: threeClusters, Loc: loc}); err != nil || !p.Has(StepReclaim) || !p.Has(StepRollout) {
		t.Errorf("plan %v, %v; want reclaim and rollout", p, err)
	}
}

// Finish and Adopt change the serving copy's record under its lock.
func TestFinishAndAdoptTakeTheLock(t *testing.T) {
	ctx := context.Background()
	beta, alpha, started := halfMadeMove(t)
	setMark(t, store(beta), &app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa", StartedAt: started, Superseded: true})
	held, err := lock.Acquire(ctx, lock.Request{Client: alpha, Namespace: ns, App: "shop", Holder: lock.Holder{User: "bob", PID: 1, Host: "desk"}})
	if err != nil {
		t.Fatal(err)
	}
	var locked *lock.HeldError
	if err := Finish(ctx, deps(alpha), deps(beta), "shop"); !errors.As(err, &locked) {
		t.Errorf("Finish while the new copy is locked = %v; want a LockedError", err)
	}
	if a := getApp(t, store(alpha), "shop"); a.Move == nil {
		t.Error("Finish dropped the mark without the lock")
	}
	held.Unlock()
	if err := Finish(ctx, deps(alpha), deps(beta), "shop"); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if a := getApp(t, store(alpha), "shop"); a.Move != nil {
		t.Errorf("mark after Finish: %+v", a.Move)
	}
	if _, err := store(beta).GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("superseded copy after Finish: %v", err)
	}
	assertNoLease(t, alpha)
	assertNoLease(t, beta)
}

// Adopt drops the mark of a rolled-out new copy under its lock.
func TestAdoptMoveTakesTheLock(t *testing.T) {
	ctx := context.Background()
	_, from := deployedSource(t)
	dst := runningTarget(t)
	to := store(dst)
	if _, err := from.CopyTo(ctx, to, "shop", &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa"}); err != nil {
		t.Fatal(err)
	}
	change := deploy.SettingsChange(app.KindPool, "pool pa", func(_ *app.App, r *app.Release) error { r.Pool = "pa"; return nil })
	if _, err := deploy.Roll(ctx, deps(dst), "shop", change, deploy.Options{Timeout: 5 * time.Second, NoRollback: true, SkipReleasePhase: true}); err != nil {
		t.Fatal(err)
	}
	held, err := lock.Acquire(ctx, lock.Request{Client: dst, Namespace: ns, App: "shop", Holder: lock.Holder{User: "bob", PID: 1, Host: "desk"}})
	if err != nil {
		t.Fatal(err)
	}
	var locked *lock.HeldError
	if err := Adopt(ctx, deps(dst), "shop"); !errors.As(err, &locked) {
		t.Errorf("Adopt while locked = %v; want a LockedError", err)
	}
	if a := getApp(t, store(dst), "shop"); a.Move == nil {
		t.Error("Adopt dropped the mark without the lock")
	}
	held.Unlock()
	if err := Adopt(ctx, deps(dst), "shop"); err != nil || getApp(t, store(dst), "shop").Move != nil {
		t.Errorf("Adopt: %v", err)
	}
	assertNoLease(t, dst)
}
