package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/text"
)

// RemoveOptions tune Remove.
type RemoveOptions struct {
	// StopTimeout bounds the wait for the app's units to stop. Default: the
	// longest grace period of its units plus stopSlack; a unit still there
	// after that is stuck (a finalizer, a node that does not answer).
	StopTimeout time.Duration
	// MoveCopy removes a move's new copy (its record marks it the target
	// of a move), which Remove otherwise refuses: its move may still be
	// running, or that copy may be the only one that serves. Only for a
	// copy known to be a leftover ('tug app remove --move-copy').
	MoveCopy bool
	// OfMove removes the copy only if it is the new copy of exactly this
	// move (app.Move.SameMove, role target), checked under its lock: how a
	// move removes what it made, and never another app of that name.
	OfMove *app.Move
}

// ErrNotThatCopy: the copy RemoveOptions.OfMove asked to remove is not
// that move's (gone, or another app of the name); nothing was removed.
var ErrNotThatCopy = errors.New("the copy is not the one that move made")

// stopSlack is how long past its grace period a unit may take to go.
const stopSlack = 30 * time.Second

// Remove deletes every object of an app (each kind of deploy.Kinds, in the
// reverse of their apply order; then its job runs, its units and one-off
// run pods, its release records and TLS Secrets) and waits, bounded, until
// its units are gone. The app's record goes last, so an interrupted or
// refused remove can be run again; the error then says what is left.
//
// It lists each kind by the app's labels and deletes what it found one by
// one: that needs only the list and delete verbs of the developer Role (not
// deletecollection), and deletes only objects that carry the app's labels.
//
// A move's new copy is refused (see RemoveOptions.MoveCopy): while its move
// runs, the mover holds this copy's lock; after a move cut short, its old
// copy may still serve (then giving the move up removes this one) or may be
// superseded (then this copy is the app).
func Remove(ctx context.Context, d deploy.Deps, appName string, o RemoveOptions) error {
	t, err := deploy.Begin(ctx, d, appName, func(a *app.App) error { return removable(a, o) })
	if err != nil {
		return err
	}
	defer t.End()
	return RemoveHeld(t.Ctx(), t.Deps(), appName, o)
}

// removable says whether Remove with o may remove copy a.
func removable(a *app.App, o RemoveOptions) error {
	m := a.Move
	target := m != nil && m.Role == app.MoveTarget
	switch {
	case o.OfMove != nil:
		if !target || !m.SameMove(o.OfMove) {
			return ErrNotThatCopy
		}
	case target && !o.MoveCopy:
		return inputerr.Errorf("app %q here is the new copy of an unfinished move from cluster %q (started %s), and its old copy may still serve, or be about to be removed: 'tug app pool set %s %s' (without --context) finishes the move, and 'tug app pool set %s POOL' to a pool of cluster %q gives it up, removing this copy; if no cluster holds the old copy any more, 'tug app remove %s --move-copy' removes this one",
			a.Name, m.From, m.StartedAt.Format(time.RFC3339), a.Name, m.Pool, a.Name, m.From, a.Name)
	}
	return nil
}

// RemoveHeld is Remove for a caller that holds the app's lock (a move,
// in a deploy.Txn of its own).
func RemoveHeld(ctx context.Context, d deploy.Deps, appName string, o RemoveOptions) error {
	if d.Progress == nil {
		d.Progress = progress.Nop{}
	}
	steps := removeSteps(ctx, d, appName, o)
	var stuck *StuckUnitsError
	for i, s := range steps {
		if s.progress != "" {
			d.Progress.Update(s.progress)
		}
		if err := s.run(&stuck); err != nil {
			left := make([]string, 0, len(steps)-i)
			for _, r := range steps[i:] {
				left = append(left, r.what)
			}
			return &RemoveError{App: appName, Err: err, Left: left}
		}
	}
	if stuck != nil {
		return stuck
	}
	return nil
}

// removeStep is one step of a removal: what it removes (as a partial
// removal names what is left), and what progress says as it starts.
type removeStep struct {
	what, progress string
	run            func(stuck **StuckUnitsError) error
}

// removeSteps are a removal's steps, in this order: the kinds tug renders
// (deploy.Kinds, in the reverse of their apply order: nothing routes or
// scales to what goes next), then what the app made at run time (job
// runs, units), then the records that let remove run again.
func removeSteps(ctx context.Context, d deploy.Deps, appName string, o RemoveOptions) []removeStep {
	c := owned.Clients{Typed: d.Client, Dynamic: d.Dynamic, Namespace: d.Namespace}
	var steps []removeStep
	for i, k := range d.OwnedKinds().Reversed() {
		st := removeStep{what: k.Plural, run: func(**StuckUnitsError) error {
			return owned.RemoveKind(ctx, c, k, owned.App, appName)
		}}
		if i == 0 {
			st.progress = "removing deployments"
		}
		steps = append(steps, st)
	}
	ns, sel := d.Namespace, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)}
	releases := metav1.ListOptions{LabelSelector: app.ReleaseRecordSelector(appName)}
	del := metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}
	cl := d.Client
	return append(steps,
		removeStep{what: "job runs", run: deleteListed(func() (runtime.Object, error) { return batchNoneIfForbidden(cl.BatchV1().Jobs(ns).List(ctx, sel)) },
			func(n string) error { return cl.BatchV1().Jobs(ns).Delete(ctx, n, del) })},
		removeStep{what: "units", run: func(stuck **StuckUnitsError) error { return removeUnits(ctx, d, appName, o, stuck) }},
		// Release records before the app record: one left behind a gone
		// app record would be taken for a release of the next app of the
		// name (whose v1 would then never be made). Their config after.
		removeStep{what: "release records", progress: "removing release records", run: deleteListed(func() (runtime.Object, error) { return cl.CoreV1().ConfigMaps(ns).List(ctx, releases) },
			func(n string) error { return cl.CoreV1().ConfigMaps(ns).Delete(ctx, n, del) })},
		// release config, releases of the old form, the app's other Secrets
		removeStep{what: "release config", run: deleteListed(func() (runtime.Object, error) { return cl.CoreV1().Secrets(ns).List(ctx, sel) },
			func(n string) error { return cl.CoreV1().Secrets(ns).Delete(ctx, n, del) })},
		// the record, and any other ConfigMap of the app
		removeStep{what: "app record", run: deleteListed(func() (runtime.Object, error) { return cl.CoreV1().ConfigMaps(ns).List(ctx, sel) },
			func(n string) error { return cl.CoreV1().ConfigMaps(ns).Delete(ctx, n, del) })},
	)
}

// deleteListed deletes, one by one, what list returns.
func deleteListed(list func() (runtime.Object, error), del func(name string) error) func(**StuckUnitsError) error {
	return func(**StuckUnitsError) error {
		l, err := list()
		if err != nil {
			return kube.TranslateError(err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return err
		}
		for _, it := range items {
			m, err := meta.Accessor(it)
			if err != nil {
				return err
			}
			if err := del(m.GetName()); err != nil && !apierrors.IsNotFound(err) {
				return kube.TranslateError(err)
			}
		}
		return nil
	}
}

// removeUnits deletes the app's pods (units, and one-off run pods that no
// Deployment owns) and waits until they are gone, at most o.StopTimeout. Pods
// still there then are left terminating: *stuck names them, and remove goes
// on, since Kubernetes is already deleting them and waiting longer would
// hold the app's lock for nothing.
func removeUnits(ctx context.Context, d deploy.Deps, appName string, o RemoveOptions, stuck **StuckUnitsError) error {
	pods := d.Client.CoreV1().Pods(d.Namespace)
	sel := metav1.ListOptions{LabelSelector: kube.AppSelector(appName)}
	list, err := pods.List(ctx, sel)
	if err != nil {
		return kube.TranslateError(err)
	}
	timeout := o.StopTimeout
	var grace int64
	for _, p := range list.Items {
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g > grace {
			grace = *g
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	if timeout <= 0 {
		timeout = time.Duration(grace)*time.Second + stopSlack
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := -1
	var left []string
	err = kube.WaitPods(wctx, d.Client, d.Namespace, sel, func(pods map[string]*corev1.Pod) bool {
		if n := len(pods); n > 0 && n != last {
			last = n
			d.Progress.Update(fmt.Sprintf("waiting for %d %s to stop", n, text.Plural(n, "unit", "units")))
		}
		left = left[:0]
		for _, p := range pods {
			left = append(left, p.Name)
		}
		return len(pods) == 0
	})
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		slices.Sort(left)
		*stuck = &StuckUnitsError{App: appName, Namespace: d.Namespace, Units: left, Waited: timeout}
		return nil
	}
	return kube.TranslateError(err)
}

// RemoveError is a remove that stopped part-way: what is left, and why.
// The app's record is among what is left, so remove can run again.
type RemoveError struct {
	App  string
	Left []string
	Err  error
}

func (e *RemoveError) Error() string {
	return fmt.Sprintf("app %q is only partly removed: %v; left: %s; fix that and run 'tug app remove %s' again",
		e.App, e.Err, strings.Join(e.Left, ", "), e.App)
}

func (e *RemoveError) Unwrap() error { return e.Err }

// StuckUnitsError: the app is removed, but units did not stop in time.
type StuckUnitsError struct {
	App, Namespace string
	Units          []string
	Waited         time.Duration
}

func (e *StuckUnitsError) Error() string {
	return fmt.Sprintf("app %q is removed, but %s %s %s still terminating after %s; tug leaves %s terminating: a finalizer or a node that does not answer holds %s (see 'kubectl get pod -n %s %s -o yaml')",
		e.App, text.Plural(len(e.Units), "unit", "units"), strings.Join(e.Units, ", "), text.Plural(len(e.Units), "is", "are"), e.Waited.Round(time.Second),
		text.Plural(len(e.Units), "it", "them"), text.Plural(len(e.Units), "it", "them"), e.Namespace, e.Units[0])
}

// batchNoneIfForbidden is a LIST of CronJobs or Jobs for removal; a user
// whose Role predates jobs may not list them, and so cannot have made any:
// the app has none to remove (removal goes on instead of stopping half-way).
func batchNoneIfForbidden[L runtime.Object](list L, err error) (runtime.Object, error) {
	if apierrors.IsForbidden(err) {
		return &metav1.List{}, nil
	}
	return list, err
}
