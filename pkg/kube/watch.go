package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Object is an API object as the typed clients return it: *corev1.Pod,
// *appsv1.Deployment, ...
type Object interface {
	runtime.Object
	metav1.Object
}

// ListWatch is one kind of object for Until: a typed client's List (its
// items and the list's resourceVersion) and Watch, and the options (label
// and field selectors) both are called with.
type ListWatch[T Object] struct {
	List    func(ctx context.Context, opts metav1.ListOptions) (items []T, resourceVersion string, err error)
	Watch   func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Options metav1.ListOptions
	// Resync, when > 0, also calls the condition this often when nothing
	// changed, for rules about how long a state has lasted.
	Resync time.Duration

	sleep func(context.Context, time.Duration) error // tests: instead of waiting
}

// Pods lists and watches the pods opts select in ns.
func Pods(client kubernetes.Interface, ns string, opts metav1.ListOptions) ListWatch[*corev1.Pod] {
	c := client.CoreV1().Pods(ns)
	return ListWatch[*corev1.Pod]{Options: opts, Watch: c.Watch,
		List: func(ctx context.Context, opts metav1.ListOptions) ([]*corev1.Pod, string, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.ResourceVersion, nil
		}}
}

// Deployments lists and watches the Deployments opts select in ns.
func Deployments(client kubernetes.Interface, ns string, opts metav1.ListOptions) ListWatch[*appsv1.Deployment] {
	c := client.AppsV1().Deployments(ns)
	return ListWatch[*appsv1.Deployment]{Options: opts, Watch: c.Watch,
		List: func(ctx context.Context, opts metav1.ListOptions) ([]*appsv1.Deployment, string, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.ResourceVersion, nil
		}}
}

// DaemonSets lists and watches the DaemonSets opts select in ns.
func DaemonSets(client kubernetes.Interface, ns string, opts metav1.ListOptions) ListWatch[*appsv1.DaemonSet] {
	c := client.AppsV1().DaemonSets(ns)
	return ListWatch[*appsv1.DaemonSet]{Options: opts, Watch: c.Watch,
		List: func(ctx context.Context, opts metav1.ListOptions) ([]*appsv1.DaemonSet, string, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.ResourceVersion, nil
		}}
}

// EndpointSlices lists and watches the EndpointSlices opts select in ns.
func EndpointSlices(client kubernetes.Interface, ns string, opts metav1.ListOptions) ListWatch[*discoveryv1.EndpointSlice] {
	c := client.DiscoveryV1().EndpointSlices(ns)
	return ListWatch[*discoveryv1.EndpointSlice]{Options: opts, Watch: c.Watch,
		List: func(ctx context.Context, opts metav1.ListOptions) ([]*discoveryv1.EndpointSlice, string, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.ResourceVersion, nil
		}}
}

func pointers[E any](items []E) []*E {
	out := make([]*E, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// Key is how Until keys the objects it passes to the condition:
// "namespace/name".
func Key(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// Until lists lw's objects, then watches them from the list's
// resourceVersion, calling cond with the current set (keyed by Key) after
// the list and after each change, until cond is done or fails (its error is
// returned as is), ctx ends (ctx.Err()), or the API server answers with an
// error that waiting will not fix (returned untranslated).
//
// It keeps going through what servers routinely do: a watch they close is
// resumed from the last resourceVersion seen; a version too old (410 Gone)
// is listed again; a busy or failing server (429, honouring Retry-After;
// 5xx; timeouts; refused or reset connections) is retried after a short,
// growing pause, as client-go's reflector does.
//
// cond runs on Until's goroutine; the map is Until's own, to read, not to
// keep: copy what must outlive the call.
func Until[T Object](ctx context.Context, lw ListWatch[T], cond func(map[string]T) (bool, error)) error {
	return UntilChange(ctx, lw, func(c Change[T]) (bool, error) { return cond(c.Objects) })
}

// Change is one step of the set UntilChange follows.
type Change[T Object] struct {
	// Listed: the set was listed (again); every object may have changed,
	// and Object is zero.
	Listed bool
	// Type is Added, Modified or Deleted for one object's change, Object
	// its new state (its last one when Deleted); "" for a Resync tick.
	Type   watch.EventType
	Object T
	// Objects is the whole current set, keyed by Key: UntilChange's own,
	// to read, not to keep.
	Objects map[string]T
}

// UntilChange is Until for a condition that looks at what changed rather
// than at the whole set: one that keeps its own account of the objects
// costs the same for each event whether the set holds ten or ten
// thousand.
func UntilChange[T Object](ctx context.Context, lw ListWatch[T], cond func(Change[T]) (bool, error)) error {
	objs := map[string]T{}
	pause := backoff{sleep: lw.sleep}
	relist, rv := true, ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if relist {
			items, listRV, err := lw.List(ctx, lw.Options)
			if err != nil {
				if err := pause.after(ctx, err); err != nil {
					return err
				}
				continue
			}
			clear(objs)
			for _, o := range items {
				objs[Key(o)] = o
			}
			relist, rv = false, listRV
			if done, err := cond(Change[T]{Listed: true, Objects: objs}); done || err != nil {
				return err
			}
		}
		opts := lw.Options
		opts.ResourceVersion = rv
		opts.AllowWatchBookmarks = true
		w, err := lw.Watch(ctx, opts)
		if err != nil {
			if gone(err) {
				relist = true
				continue
			}
			// Resume from rv: a server whose watch cache is behind it
			// (too large resource version) catches up meanwhile.
			if err := pause.after(ctx, err); err != nil {
				return err
			}
			continue
		}
		r := follow(ctx, w, objs, &rv, lw.Resync, cond)
		w.Stop()
		if r.done || r.err != nil {
			return r.err
		}
		if relist, err = pause.afterWatch(ctx, r); err != nil {
			return err
		}
	}
}

// afterWatch says, for a watch that ended without an answer (r), whether
// to list again, pausing first when the server needs a rest.
func (b *backoff) afterWatch(ctx context.Context, r followed) (relist bool, err error) {
	switch {
	case r.relist != nil:
		// An error event: too old a version, listed again at once;
		// else the server is in trouble, so pause first.
		if !gone(r.relist) {
			return true, b.wait(ctx, r.relist)
		}
		return true, nil
	case r.events == 0:
		// Closed before saying anything: do not hammer a server
		// that does that.
		return false, b.wait(ctx, nil)
	}
	b.reset()
	return false, nil
}

type followed struct {
	done   bool
	err    error
	relist error // an error event says list again
	events int
}

// follow applies one watch's events to objs until cond is done or fails,
// the watch ends, or ctx does.
func follow[T Object](ctx context.Context, w watch.Interface, objs map[string]T, rv *string, resync time.Duration, cond func(Change[T]) (bool, error)) followed {
	var r followed
	var tick <-chan time.Time
	if resync > 0 {
		t := time.NewTicker(resync)
		defer t.Stop()
		tick = t.C
	}
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			r.err = ctx.Err()
			return r
		case <-tick:
			r.done, r.err = cond(Change[T]{Objects: objs})
			if r.done || r.err != nil {
				return r
			}
			continue
		case e, ok := <-w.ResultChan():
			if !ok {
				return r
			}
			ev = e
		}
		r.events++
		if ev.Type == watch.Error {
			r.relist, r.err = eventError(ev.Object)
			return r
		}
		if m, ok := ev.Object.(metav1.Object); ok && m.GetResourceVersion() != "" {
			*rv = m.GetResourceVersion()
		}
		o, ok := ev.Object.(T)
		if !ok {
			continue // a bookmark, or something else
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			objs[Key(o)] = o
		case watch.Deleted:
			delete(objs, Key(o))
		default:
			continue
		}
		r.done, r.err = cond(Change[T]{Type: ev.Type, Object: o, Objects: objs})
		if r.done || r.err != nil {
			return r
		}
	}
}

// eventError is the error an Error event carries: one that listing again
// may fix (too old a version, a server in trouble, an object that is not
// a Status) as relist, else one that ends the watch as fatal.
func eventError(obj runtime.Object) (relist, fatal error) {
	err := apierrors.FromObject(obj)
	if _, isStatus := obj.(*metav1.Status); !isStatus {
		err = fmt.Errorf("watch failed: %v", obj)
	}
	if gone(err) || retryable(err) || !isAPIStatus(err) {
		return err, nil
	}
	return nil, err
}

// backoff is the pause before trying a busy or failing server again:
// 250ms, doubling up to 5s, or what a 429's Retry-After asks (up to 30s).
type backoff struct {
	n     int
	sleep func(context.Context, time.Duration) error
}

const (
	retryFirst    = 250 * time.Millisecond
	retryMax      = 5 * time.Second
	retryAfterMax = 30 * time.Second
)

// after returns err when waiting will not fix it or ctx has ended, else
// pauses.
func (b *backoff) after(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !retryable(err) && !gone(err) {
		return err
	}
	return b.wait(ctx, err)
}

func (b *backoff) wait(ctx context.Context, err error) error {
	d := min(retryFirst<<min(b.n, 8), retryMax)
	b.n++
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		d = min(time.Duration(s)*time.Second, retryAfterMax)
	}
	if b.sleep != nil {
		return b.sleep(ctx, d)
	}
	return Pause(ctx, d)
}

// Pause waits for d or until ctx ends. It is for pauses the server asked
// for (429, 503, a disruption budget that says no), never for waiting on
// state: that is done with watches.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (b *backoff) reset() { b.n = 0 }

// gone is a resourceVersion the server no longer has: list again.
func gone(err error) bool {
	return apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
}

// Retryable reports whether trying again later may fix err (see
// retryable).
func Retryable(err error) bool { return retryable(err) }

// retryable is an error from a server that is busy, failing for now, or
// unreachable for a moment: trying again later may work.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		switch status.Status().Code {
		case 429, 500, 502, 503, 504:
			return true
		}
		return false
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isAPIStatus(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// Unstructured lists and watches objects of any resource through the
// dynamic client (the Gateway API's, which tug has no typed client for).
func Unstructured(client dynamic.Interface, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ListWatch[*unstructured.Unstructured] {
	c := client.Resource(gvr).Namespace(ns)
	return ListWatch[*unstructured.Unstructured]{Options: opts, Watch: c.Watch,
		List: func(ctx context.Context, opts metav1.ListOptions) ([]*unstructured.Unstructured, string, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return pointers(l.Items), l.GetResourceVersion(), nil
		}}
}

// Retry calls fn until it succeeds, fails with an error that waiting will
// not fix, or ctx ends, pausing between tries (200 ms, doubling, at most
// 2 s): for the few writes that must land through a short outage, such as
// recording how a rollout ended.
func Retry(ctx context.Context, fn func(context.Context) error) error {
	pause := 200 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !retryable(err) {
			return err
		}
		if perr := Pause(ctx, pause); perr != nil {
			return err
		}
		pause = min(2*pause, 2*time.Second)
	}
}
