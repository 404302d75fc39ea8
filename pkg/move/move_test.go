package move

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lifecycle"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/rollout"
)

// deployedSource is a cluster where shop runs release v1 with some config.
func deployedSource(t *testing.T) (*fake.Clientset, *app.Store) {
	t.Helper()
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Pool: "pb"})
	ctx := context.Background()
	if _, err := deploy.Roll(ctx, deps(c), "shop", deploy.DeployChange("shop:1", map[string]string{"web": ""}, ""), deploy.Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := deploy.Roll(ctx, deps(c), "shop", deploy.EnvChange(app.ConfigMap{"A": "1"}, nil, ""), deploy.Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	return c, s
}

// runningTarget is a target cluster whose Deployment shop-web reports
// itself rolled out (the fake has no controllers).
func runningTarget(t *testing.T) *fake.Clientset {
	t.Helper()
	l := kube.AppLabels("shop")
	l[kube.LabelProcess] = "web"
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: ns, Labels: l}, Status: done(1, 0)}
	ready := true
	eps := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "shop-x1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "shop"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
	return fakeClient(d, eps)
}

func moveOpts() Options {
	return Options{Pool: "pa", From: "beta", To: "alpha", Timeout: 5 * time.Second}
}

func TestMoveRollsOutThereAndRemovesHere(t *testing.T) {
	src, from := deployedSource(t)
	dst := runningTarget(t)
	to := &app.Store{Client: dst, Namespace: ns}
	res, err := App(context.Background(), deps(src), deps(dst), "shop", moveOpts())
	if err != nil {
		t.Fatalf("Move: %v", err)
	}
	if res.Status != "moved" || res.Release != 3 || res.To.Cluster != "alpha" || res.From.Cluster != "beta" {
		t.Errorf("result %+v", res)
	}
	if _, err := from.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("source still holds the app: %v", err)
	}
	if secs, _ := src.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{}); len(secs.Items) != 0 {
		t.Errorf("source keeps %d secrets", len(secs.Items))
	}
	assertNoLease(t, src)
	a := getApp(t, to, "shop")
	if a.Move != nil || a.Pool != "pa" || a.Release != 3 || a.Namespace != ns {
		t.Errorf("target record %+v (move %+v)", a, a.Move)
	}
	// history and config came along
	r2, _, err := to.GetRelease(context.Background(), "shop", 2)
	if err != nil || r2.Status != app.StatusSuperseded {
		t.Errorf("v2 in the target: %+v %v", r2, err)
	}
	r3, cfg, err := to.GetRelease(context.Background(), "shop", 3)
	if err != nil || r3.Pool != "pa" || cfg["A"] != "1" || r3.Kind != app.KindPool {
		t.Errorf("v3 in the target: %+v %v %v", r3, cfg, err)
	}
	web := listDeployments(t, dst)["shop-web"]
	if got := web.Spec.Template.Spec.NodeSelector[kube.LabelPool]; got != "pa" {
		t.Errorf("target units' pool %q", got)
	}
}

func TestMoveFailureLeavesTheAppWhereItWas(t *testing.T) {
	src, from := deployedSource(t)
	dst := fakeClient(crashPod("3"))
	res, err := App(context.Background(), deps(src), deps(dst), "shop", moveOpts())
	var me *Error
	var rollErr *deploy.Error
	if res == nil || !errors.As(err, &me) || !errors.As(err, &rollErr) || rollErr.ExitCode() != 11 || me.CleanupErr != nil {
		t.Fatalf("Move = %+v, %v; want a Error carrying the crash, and a result", res, err)
	}
	// the message says where the app serves, not the rollout's advice for
	// units left in place (the copy is removed)
	if msg := err.Error(); strings.Contains(msg, "rolled back") || strings.Contains(msg, "left for inspection") || !strings.Contains(msg, `it still serves in cluster "beta"`) {
		t.Errorf("a failed move says %q", msg)
	}
	// the result says so: failed, the crash's diagnosis, serving in the source
	if res.Status != "failed" || res.Failure == nil || res.Failure.Class != rollout.ClassCrash || res.Serving != res.From || res.From.Cluster != "beta" {
		t.Errorf("result of a failed move: %+v failure %+v", res, res.Failure)
	}
	a := getApp(t, from, "shop")
	if a.Move != nil || a.Release != 2 || a.Pool != "pb" {
		t.Errorf("source record after a failed move: %+v move %+v", a, a.Move)
	}
	to := &app.Store{Client: dst, Namespace: ns}
	if _, err := to.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("target keeps a record: %v", err)
	}
	if secs, _ := dst.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{}); len(secs.Items) != 0 {
		t.Errorf("target keeps %d secrets", len(secs.Items))
	}
	if len(listDeployments(t, dst)) != 0 {
		t.Error("target keeps Deployments")
	}
	assertNoLease(t, src)
	assertNoLease(t, dst)
}

func TestMoveRefusals(t *testing.T) {
	src, _ := deployedSource(t)
	// an app of the same name, not a move's copy, is in the way
	dst, to := newFake()
	seedApp(t, to, &app.App{Name: "shop"})
	if _, err := App(context.Background(), deps(src), deps(dst), "shop", moveOpts()); !inputerr.Is(err) {
		t.Errorf("foreign app in the target: %v; want a usage error", err)
	}
	if a := getApp(t, to, "shop"); a.Release != 0 {
		t.Errorf("the target's app was changed: %+v", a)
	}
	// volumes hold data that does not move
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Volumes: []string{"data"}})
	if _, err := App(context.Background(), deps(c), deps(fakeClient()), "shop", moveOpts()); !inputerr.Is(err) {
		t.Errorf("app with volumes: %v; want a usage error", err)
	}
	// so are its backing services: the target has none of them, or others
	// of the same name
	c, s = newFake()
	seedApp(t, s, &app.App{Name: "shop", Services: []string{"db"}})
	if _, err := App(context.Background(), deps(c), deps(fakeClient()), "shop", moveOpts()); !inputerr.Is(err) || !strings.Contains(err.Error(), "tug service unbind shop NAME") {
		t.Errorf("app with services: %v; want a usage error", err)
	}
}

func TestMoveDryRunChangesNothing(t *testing.T) {
	src, from := deployedSource(t)
	dst := fakeClient()
	o := moveOpts()
	o.DryRun = true
	res, err := App(context.Background(), deps(src), deps(dst), "shop", o)
	if err != nil || res.Status != "dry-run" || len(res.Plan) != 3 {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	if a := getApp(t, from, "shop"); a.Move != nil {
		t.Errorf("dry run marked the source: %+v", a.Move)
	}
	if cms, _ := dst.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{}); len(cms.Items) != 0 {
		t.Error("dry run wrote to the target")
	}
}

// A move killed before the switch left a marked copy in the target: the
// next move removes it and starts over.
func TestMoveRedoesAnUnfinishedCopy(t *testing.T) {
	src, from := deployedSource(t)
	dst := runningTarget(t)
	// Removing the stale copy must not take the rolled-out Deployment that
	// stands in for the missing controller.
	dst.PrependReactor("delete", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	to := &app.Store{Client: dst, Namespace: ns}
	ctx := context.Background()
	started := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	// a copy marked by some other move is not this one's to remove
	if _, err := from.CopyTo(ctx, to, "shop", &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa", StartedAt: started.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := from.UpdateApp(ctx, "shop", func(x *app.App) error {
		x.Move = &app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa", StartedAt: started}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := App(ctx, deps(src), deps(dst), "shop", moveOpts()); !inputerr.Is(err) {
		t.Fatalf("Move over another move's copy: %v; want a usage error", err)
	}
	if a := getApp(t, to, "shop"); a.Move == nil || !a.Move.StartedAt.Equal(started.Add(-time.Hour)) {
		t.Fatalf("another move's copy was touched: %+v", a.Move)
	}
	if err := lifecycle.Remove(ctx, deps(dst), "shop", lifecycle.RemoveOptions{}); !inputerr.Is(err) {
		t.Fatalf("Remove of a move's new copy: %v; want a refusal", err)
	}
	if err := lifecycle.Remove(ctx, deps(dst), "shop", lifecycle.RemoveOptions{MoveCopy: true}); err != nil {
		t.Fatal(err)
	}
	// the copy this source's move left: removed, and the move redone
	if _, err := (&app.Store{Client: src, Namespace: ns}).CopyTo(ctx, &app.Store{Client: dst, Namespace: ns}, "shop", &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa", StartedAt: started}); err != nil {
		t.Fatal(err)
	}
	if _, err := App(ctx, deps(src), deps(dst), "shop", moveOpts()); err != nil {
		t.Fatalf("Move over a stale copy: %v", err)
	}
	if a := getApp(t, to, "shop"); a.Move != nil || a.Pool != "pa" {
		t.Errorf("target %+v", a)
	}
}

// A move killed after the switch: Finish drops the target's mark and
// removes the superseded source; a source that still serves is left alone.
func TestFinishMove(t *testing.T) {
	src, from := deployedSource(t)
	dst, to := newFake()
	mark := &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa"}
	if _, err := from.CopyTo(context.Background(), to, "shop", mark); err != nil {
		t.Fatal(err)
	}
	if err := Finish(context.Background(), deps(dst), deps(src), "shop"); err == nil {
		t.Fatal("finishing a move whose source still serves should fail")
	}
	if _, err := from.UpdateApp(context.Background(), "shop", func(x *app.App) error {
		x.Move = &app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa", Superseded: true}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := Finish(context.Background(), deps(dst), deps(src), "shop"); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if _, err := src.CoreV1().ConfigMaps(ns).Get(context.Background(), app.AppRecordName("shop"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("superseded source record left: %v", err)
	}
	if a := getApp(t, to, "shop"); a.Move != nil {
		t.Errorf("target still marked: %+v", a.Move)
	}
}

// A move whose source removal fails is unfinished: the result says the app
// serves in the target, and why the move stopped.
func TestMoveUnfinishedResult(t *testing.T) {
	src, from := deployedSource(t)
	dst := runningTarget(t)
	src.PrependReactor("delete", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("disk full"))
	})
	res, err := App(context.Background(), deps(src), deps(dst), "shop", moveOpts())
	var un *UnfinishedError
	if !errors.As(err, &un) || res == nil {
		t.Fatalf("Move = %+v, %v; want an UnfinishedError and a result", res, err)
	}
	if res.Status != "unfinished" || res.Serving != res.To || res.Failure == nil || res.Failure.Class != rollout.ClassError || res.Failure.Message == "" {
		t.Errorf("result of an unfinished move: %+v failure %+v", res, res.Failure)
	}
	if a := getApp(t, from, "shop"); a.Move == nil || !a.Move.Superseded {
		t.Errorf("the source copy should be left superseded: %+v", a.Move)
	}
}

// A move cut short before its switch, then the app asked to stay: the
// half-made copy goes and the source's mark is dropped. A superseded
// source is not touched.
func TestAbandonMove(t *testing.T) {
	src, _ := deployedSource(t)
	from := &app.Store{Client: src, Namespace: ns} // a store that read nothing yet
	dst, to := newFake()
	ctx := context.Background()
	mark := func(m *app.Move) {
		t.Helper()
		if _, err := from.UpdateApp(ctx, "shop", func(x *app.App) error { x.Move = m; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	mark(&app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa"})
	if _, err := from.CopyTo(ctx, to, "shop", &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa"}); err != nil {
		t.Fatal(err)
	}
	if err := Abandon(ctx, deps(src), []deploy.Deps{deps(dst)}, "shop"); err != nil {
		t.Fatalf("Abandon: %v", err)
	}
	if _, err := to.GetApp(ctx, "shop"); !app.IsNotFound(err) {
		t.Errorf("the half-made copy is still there: %v", err)
	}
	if secs, _ := dst.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); len(secs.Items) != 0 {
		t.Errorf("target keeps %d secrets", len(secs.Items))
	}
	if a := getApp(t, from, "shop"); a.Move != nil || a.Release != 2 {
		t.Errorf("source after abandoning: %+v move %+v", a, a.Move)
	}
	assertNoLease(t, src)
	// killed before copying: only the mark to drop
	mark(&app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa"})
	if err := Abandon(ctx, deps(src), nil, "shop"); err != nil || getApp(t, from, "shop").Move != nil {
		t.Errorf("Abandon with no copy made: %v, move %+v", err, getApp(t, from, "shop").Move)
	}
	// an app in the target that is not the move's copy stays
	seedApp(t, to, &app.App{Name: "shop"})
	mark(&app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa"})
	if err := Abandon(ctx, deps(src), []deploy.Deps{deps(dst)}, "shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := to.GetApp(ctx, "shop"); err != nil {
		t.Errorf("an unmarked app in the target was removed: %v", err)
	}
	// a copy marked by another move (another start) stays too
	if err := lifecycle.Remove(ctx, deps(dst), "shop", lifecycle.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := from.CopyTo(ctx, to, "shop", &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa", StartedAt: time.Unix(1, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	mark(&app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa"})
	if err := Abandon(ctx, deps(src), []deploy.Deps{deps(dst)}, "shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := to.GetApp(ctx, "shop"); err != nil {
		t.Errorf("another move's copy in the target was removed: %v", err)
	}
	// superseded: the switch happened; abandoning is not for it
	m := &app.Move{Role: app.MoveSource, From: "beta", To: "alpha", Pool: "pa", Superseded: true}
	mark(m)
	if err := Abandon(ctx, deps(src), []deploy.Deps{deps(dst)}, "shop"); err != nil || getApp(t, from, "shop").Move == nil {
		t.Errorf("a superseded source: %v, its mark %+v", err, getApp(t, from, "shop").Move)
	}
}

// An app of the same name created in the target between the move's check
// and its copy is not the move's: the failed move leaves it alone and
// drops the source's mark.
func TestMoveLeavesAnAppCreatedMeanwhileAlone(t *testing.T) {
	src, from := deployedSource(t)
	dst := runningTarget(t)
	ctx := context.Background()
	// theirs: an unmarked record, made in another fake to get its ConfigMap
	other, otherStore := newFake()
	seedApp(t, otherStore, &app.App{Name: "shop", Pool: "theirs"})
	theirs, err := other.CoreV1().ConfigMaps(ns).Get(ctx, app.AppRecordName("shop"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName() == app.AppRecordName("shop") {
			if err := dst.Tracker().Add(theirs.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	res, err := App(ctx, deps(src), deps(dst), "shop", moveOpts())
	var me *Error
	if !errors.As(err, &me) || !me.Foreign || me.CleanupErr != nil || res == nil || res.Status != "failed" {
		t.Fatalf("Move = %+v, %v; want a failed move that left the target's app alone", res, err)
	}
	a := getApp(t, &app.Store{Client: dst, Namespace: ns}, "shop")
	if a.Pool != "theirs" || a.Move != nil {
		t.Errorf("the target's own app was changed: %+v move %+v", a, a.Move)
	}
	if a := getApp(t, from, "shop"); a.Move != nil || a.Release != 2 {
		t.Errorf("source after the failed move: %+v move %+v", a, a.Move)
	}
}

// A failed move whose target copy cannot be removed keeps the source's
// mark (the next move recognises the copy by it); one whose mark cannot
// be dropped says so.
func TestMoveFailureCleanupErrors(t *testing.T) {
	src, from := deployedSource(t)
	dst := fakeClient(crashPod("3"))
	dst.PrependReactor("delete", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("disk full"))
	})
	_, err := App(context.Background(), deps(src), deps(dst), "shop", moveOpts())
	var me *Error
	if !errors.As(err, &me) || me.CleanupErr == nil {
		t.Fatalf("Move = %v; want a Error with a cleanup error", err)
	}
	own := getApp(t, from, "shop").Move
	there := getApp(t, &app.Store{Client: dst, Namespace: ns}, "shop").Move
	if own == nil || own.Role != app.MoveSource || !there.SameMove(own) {
		t.Errorf("source mark %+v, target mark %+v: want the same move's", own, there)
	}

	src2, _ := deployedSource(t)
	marked := false
	src2.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		if cm.Name != app.AppRecordName("shop") {
			return false, nil, nil
		}
		if strings.Contains(fmt.Sprint(cm.Data), `"move"`) {
			marked = true
			return false, nil, nil
		}
		if marked { // dropping the mark
			return true, nil, apierrors.NewInternalError(errors.New("etcd down"))
		}
		return false, nil, nil
	})
	_, err = App(context.Background(), deps(src2), deps(fakeClient(crashPod("3"))), "shop", moveOpts())
	if !errors.As(err, &me) || me.MarkErr == nil || !strings.Contains(err.Error(), "still calls the move unfinished") {
		t.Errorf("Move = %v; want the failed mark drop reported", err)
	}
}

// A move moves what runs: config staged with 'env set --no-restart' is not
// put live by it; the move is refused, dry run included, and nothing changes.
func TestMoveRefusesStagedConfig(t *testing.T) {
	src, from := deployedSource(t)
	ctx := context.Background()
	if _, err := deploy.Roll(ctx, deps(src), "shop", deploy.EnvChange(app.ConfigMap{"B": "2"}, nil, ""), deploy.Options{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		dst := runningTarget(t)
		o := moveOpts()
		o.DryRun = dry
		_, err := App(ctx, deps(src), deps(dst), "shop", o)
		if !inputerr.Is(err) || !strings.Contains(err.Error(), "staged") {
			t.Errorf("dry run %v: Move = %v; want a usage error about staged config", dry, err)
		}
		if cms, _ := dst.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); len(cms.Items) != 0 {
			t.Errorf("dry run %v: the target got %d ConfigMaps", dry, len(cms.Items))
		}
	}
	if a := getApp(t, from, "shop"); a.Move != nil || a.Release != 2 || a.LastRelease != 3 {
		t.Errorf("source after a refused move: %+v move %+v", a, a.Move)
	}
}

// Units of the old copy stuck terminating end a move as moved (its records
// are gone; a rerun would roll a pointless release), with the error to
// report; any other failure to finish is an unfinished move.
func TestFinishedMove(t *testing.T) {
	stuck := &lifecycle.StuckUnitsError{App: "shop", Namespace: ns, Units: []string{"shop-web-1"}, Waited: time.Second}
	st, err := finishedMove("shop", moveOpts(), stuck)
	var un *UnfinishedError
	var s *lifecycle.StuckUnitsError
	if st != "moved" || errors.As(err, &un) || !errors.As(err, &s) {
		t.Errorf("stuck units: %q, %v; want moved with the stuck units reported", st, err)
	}
	if st, err := finishedMove("shop", moveOpts(), errors.New("boom")); st != "unfinished" || !errors.As(err, &un) {
		t.Errorf("other error: %q, %v; want unfinished", st, err)
	}
	if st, err := finishedMove("shop", moveOpts(), nil); st != "moved" || err != nil {
		t.Errorf("no error: %q, %v", st, err)
	}
}

// The new copy of a move whose source is gone: it becomes the app only when
// its rollout had completed, and only through Adopt.
func TestAdoptMove(t *testing.T) {
	ctx := context.Background()
	_, from := deployedSource(t)
	mark := &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa"}
	// cut short after the copy: the copied release is on the old pool
	dst, to := newFake()
	if _, err := from.CopyTo(ctx, to, "shop", mark); err != nil {
		t.Fatal(err)
	}
	if ok, err := RolledOut(ctx, deps(dst), "shop"); ok || err != nil {
		t.Errorf("a copy never rolled out: %v, %v", ok, err)
	}
	if err := Adopt(ctx, deps(dst), "shop"); err == nil || getApp(t, to, "shop").Move == nil {
		t.Errorf("adopting a copy never rolled out: %v", err)
	}
	if err := Finish(ctx, deps(dst), deploy.Deps{}, "shop"); err == nil || getApp(t, to, "shop").Move == nil {
		t.Errorf("Finish with no old copy took the copy for the app: %v", err)
	}
	// rolled out there (the move's rollout completed), then cut short
	dst2 := runningTarget(t)
	to2 := &app.Store{Client: dst2, Namespace: ns}
	if _, err := from.CopyTo(ctx, to2, "shop", mark); err != nil {
		t.Fatal(err)
	}
	change := deploy.SettingsChange(app.KindPool, "pool pa", func(_ *app.App, r *app.Release) error { r.Pool = "pa"; return nil })
	if _, err := deploy.Roll(ctx, deps(dst2), "shop", change, deploy.Options{Timeout: 5 * time.Second, NoRollback: true, SkipReleasePhase: true}); err != nil {
		t.Fatal(err)
	}
	if ok, err := RolledOut(ctx, deps(dst2), "shop"); !ok || err != nil {
		t.Fatalf("a copy rolled out: %v, %v", ok, err)
	}
	if err := Adopt(ctx, deps(dst2), "shop"); err != nil || getApp(t, to2, "shop").Move != nil {
		t.Errorf("Adopt: %v, mark %+v", err, getApp(t, to2, "shop").Move)
	}
}

// A remove of the new copy while the move switches over (what tug suggests
// for a leftover copy, --move-copy included) waits for the move: the move
// holds the target's lock from the copy until its mark is dropped. Before,
// it removed the copy between the target's rollout and the switch, and the
// move then superseded the only copy that served.
func TestMoveHoldsTheTargetsLock(t *testing.T) {
	src, from := deployedSource(t)
	dst := runningTarget(t)
	to := &app.Store{Client: dst, Namespace: ns}
	var removeErr error
	removed := false
	src.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm, ok := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		if ok && !removed && strings.Contains(fmt.Sprint(cm.Data), `"superseded":true`) {
			removed = true
			removeErr = lifecycle.Remove(context.Background(), deps(dst), "shop", lifecycle.RemoveOptions{MoveCopy: true})
		}
		return false, nil, nil
	})
	res, err := App(context.Background(), deps(src), deps(dst), "shop", moveOpts())
	if err != nil || res.Status != "moved" {
		t.Fatalf("Move = %+v, %v", res, err)
	}
	var held *lock.HeldError
	if !removed || !errors.As(removeErr, &held) {
		t.Fatalf("remove of the new copy during the switch: %v (tried %v); want a LockedError", removeErr, removed)
	}
	if a := getApp(t, to, "shop"); a.Move != nil || a.Release != 3 {
		t.Errorf("target record %+v, move %+v", a, a.Move)
	}
	if _, err := from.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("source copy: %v", err)
	}
	assertNoLease(t, dst)
}

// A move's new copy is refused by a plain remove, which says how to give
// the move up instead.
func TestRemoveRefusesAMovesNewCopy(t *testing.T) {
	src, _ := deployedSource(t)
	dst, to := newFake()
	mark := &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa", StartedAt: time.Now().UTC()}
	if _, err := (&app.Store{Client: src, Namespace: ns}).CopyTo(context.Background(), to, "shop", mark); err != nil {
		t.Fatal(err)
	}
	err := lifecycle.Remove(context.Background(), deps(dst), "shop", lifecycle.RemoveOptions{})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "'tug app pool set shop POOL' to a pool of cluster \"beta\" gives it up") {
		t.Fatalf("Remove = %v", err)
	}
	getApp(t, to, "shop")
	// of another move: not that copy
	if err := lifecycle.Remove(context.Background(), deps(dst), "shop", lifecycle.RemoveOptions{OfMove: &app.Move{From: "beta", To: "alpha", StartedAt: mark.StartedAt.Add(time.Second)}}); !errors.Is(err, lifecycle.ErrNotThatCopy) {
		t.Fatalf("Remove of another move's copy = %v", err)
	}
	getApp(t, to, "shop")
	if err := lifecycle.Remove(context.Background(), deps(dst), "shop", lifecycle.RemoveOptions{OfMove: mark}); err != nil {
		t.Fatal(err)
	}
	if _, err := to.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("copy left: %v", err)
	}
}

// A move's errors are failed changes of the move kinds; their exit code is
// that of what stopped the move (a failed rollout's), or none of their own.
func TestMoveErrorsAreChangeErrors(t *testing.T) {
	rolled := &deploy.Error{Result: &deploy.Result{App: "shop", Failure: &rollout.Failure{Class: rollout.ClassCrash, Message: "web crashed"}}}
	for _, c := range []struct {
		err  error
		kind deploy.Kind
		diag bool
		code int
	}{
		{&Error{App: "shop", Err: rolled}, deploy.KindMove, true, 11},
		{&Error{App: "shop", Err: errors.New("boom")}, deploy.KindMove, false, 0},
		{&UnfinishedError{App: "shop", Err: errors.New("boom")}, deploy.KindUnfinishedMove, false, 0},
	} {
		var failed deploy.ChangeError
		if !errors.As(c.err, &failed) || failed.Kind() != c.kind || (failed.Diagnosis() != nil) != c.diag {
			t.Errorf("%v: kind %v, diagnosis %v; want %s, diagnosis %v", c.err, failed.Kind(), failed.Diagnosis(), c.kind, c.diag)
		}
		code := 0
		var coded interface{ ExitCode() int }
		if errors.As(c.err, &coded) {
			code = coded.ExitCode()
		}
		if code != c.code || failed.Kind().ExitCode(nil) != 0 {
			t.Errorf("%v: exit code %d, want %d", c.err, code, c.code)
		}
	}
}
