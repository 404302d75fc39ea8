package owned

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tug.dev/tug/pkg/kube"
)

// Apply server-side-applies objs in the table's order, one write each;
// applied, if not nil, hears each object as the server stored it before
// the next is written (to keep what it returned, or to wait for one
// before what depends on it). Callers Guard the objects first, before they
// store anything. With opts.DryRun the server validates and defaults them
// (admission included) but stores nothing.
func Apply(ctx context.Context, c Clients, t Table, objs []Object, opts metav1.PatchOptions, applied func(k *Kind, got runtime.Object) error) error {
	entries, err := t.Sorted(objs)
	if err != nil {
		return err
	}
	for _, e := range entries {
		got, err := applyOne(ctx, c, e, opts)
		if err != nil {
			return err
		}
		if applied != nil {
			if err := applied(e.Kind, got); err != nil {
				return err
			}
		}
	}
	return nil
}

func applyOne(ctx context.Context, c Clients, e Entry, opts metav1.PatchOptions) (runtime.Object, error) {
	k, name := e.Kind, e.Obj.GetName()
	res := k.Resource(c)
	if res == nil {
		return nil, fmt.Errorf("applying %s %s: %s", k.Noun, name, k.noClient())
	}
	data, err := json.Marshal(e.Obj)
	if err != nil {
		return nil, err
	}
	got, err := res.Apply(ctx, name, data, opts)
	switch {
	case err == nil:
		return got, nil
	case apierrors.IsNotFound(err) && k.Unserved != "":
		return nil, fmt.Errorf("applying %s %s: %s", k.Noun, name, k.Unserved)
	}
	return nil, fmt.Errorf("applying %s %s: %w", k.Noun, name, kube.TranslateError(err))
}

func (k *Kind) noClient() string {
	if k.NoClient != "" {
		return k.NoClient
	}
	return "no client for " + k.GVR.Group
}

// Guard checks, before anything is written, that no object of objs exists
// without being the owner's: server-side apply with force would take over
// (and relabel) a Service, Ingress or route that helm or kubectl made,
// and a later removal would delete it. Each kind's Precheck first, then
// one GET per object; the owner's name is the one each object carries.
func Guard(ctx context.Context, c Clients, t Table, o Owner, objs []Object) error {
	entries, err := t.Sorted(objs)
	if err != nil {
		return err
	}
	for _, k := range t {
		if k.Precheck == nil {
			continue
		}
		var of []Object
		for _, e := range entries {
			if e.Kind == k {
				of = append(of, e.Obj)
			}
		}
		if len(of) > 0 {
			if err := k.Precheck(ctx, c, of); err != nil {
				return err
			}
		}
	}
	// the GETs go side by side (they are on every deploy's way to its
	// rollout); the first error in the table's order is the one said
	errs := make([]error, len(entries))
	each(len(entries), func(i int) { errs[i] = guardOne(ctx, c, o, entries[i]) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// each runs f(0) to f(n-1) side by side and returns when all have.
func each(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// guardOne GETs one object; a kind the cluster does not serve, or one
// without a client, has none (NotFound).
func guardOne(ctx context.Context, c Clients, o Owner, e Entry) error {
	name := e.Obj.GetName()
	var cur metav1.Object
	err := error(apierrors.NewNotFound(e.Kind.GVR.GroupResource(), name))
	if res := e.Kind.Resource(c); res != nil {
		cur, err = res.Get(ctx, name)
	}
	_, err = o.Check(e.Kind.Kind, c.Namespace, name, e.Obj.GetLabels()[o.Label], cur, err)
	return err
}

// Check is the ownership guard of one object, given the result of its GET:
// whether it exists, and a *kube.NotOwnedError when it exists and is not
// the owner's (called name).
func (o Owner) Check(kind, namespace, name, owner string, obj metav1.Object, getErr error) (bool, error) {
	switch {
	case apierrors.IsNotFound(getErr):
		return false, nil
	case getErr != nil:
		return false, kube.TranslateError(getErr)
	case !o.Owns(obj.GetLabels(), owner):
		return true, &kube.NotOwnedError{Kind: kind, Name: name, Namespace: namespace, App: owner, Label: o.Label}
	}
	return true, nil
}

// Prune deletes what of the owner called name tug made and keep does not
// hold (nor also name): kind by kind in the reverse of the table's order,
// so what names an object (a route, its Middleware) goes before it. One
// LIST per kind by the owner's labels, and a DELETE only for what must go.
func Prune(ctx context.Context, c Clients, t Table, o Owner, name string, keep []Object, also ...Ref) error {
	kept := map[Ref]bool{}
	for _, obj := range keep {
		k := t.Of(obj)
		if k == nil {
			return fmt.Errorf("%s %s: not a kind tug declares (pkg/deploy Kinds)", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
		}
		kept[refOf(k, obj.GetName())] = true
	}
	for _, r := range also {
		kept[r] = true
	}
	// the LISTs go side by side (a deploy waits for them before it
	// watches its rollout); the DELETEs keep the reverse order
	listed := make([]listing, len(t))
	each(len(t), func(i int) { listed[i] = listKind(ctx, c, t[i], o, name, prunes(t[i], kept)) })
	for i := len(t) - 1; i >= 0; i-- {
		if err := deleteListed(ctx, c, t[i], o, name, listed[i], prunePick(t[i], name, kept), prunes(t[i], kept)); err != nil {
			return err
		}
	}
	return nil
}

// prunes is how a prune of kind k treats its refusals: an Optional kind's
// LIST refused while nothing of it is kept is none.
func prunes(k *Kind, kept map[Ref]bool) deleteMode {
	return deleteMode{forbiddenIsNone: !keepsAny(kept, k)}
}

// prunePick picks what a prune deletes: what kept does not name and tug
// made (k.Made; nil: every object with the owner's labels).
func prunePick(k *Kind, name string, kept map[Ref]bool) func(metav1.Object) bool {
	return func(obj metav1.Object) bool {
		return !kept[refOf(k, obj.GetName())] && (k.Made == nil || k.Made(obj.GetName(), name, obj.GetLabels()))
	}
}

// PruneKind deletes the owner's objects of kind k that kept does not name
// and that tug made (k.Made; nil: every object with the owner's labels):
// one LIST by the owner's labels. An object the owner does not own is
// never deleted, and one replaced since the LIST is not either (a UID
// precondition). What the cluster cannot serve, or an Optional kind's
// LIST that is refused while nothing is kept, is none.
func PruneKind(ctx context.Context, c Clients, k *Kind, o Owner, name string, kept map[Ref]bool) error {
	return deleteKind(ctx, c, k, o, name, prunePick(k, name, kept), prunes(k, kept))
}

// RemoveKind deletes every object of kind k with the owner's labels, as
// the owner's removal does (k.Made does not narrow it: a copy of the
// owner's labels goes with the owner). An object replaced since the LIST
// (the UID precondition fails) is an error: it is left, and removal says
// so.
func RemoveKind(ctx context.Context, c Clients, k *Kind, o Owner, name string) error {
	all := func(metav1.Object) bool { return true }
	return deleteKind(ctx, c, k, o, name, all, deleteMode{forbiddenIsNone: true, strict: true})
}

// deleteMode is how deleteKind treats an Optional kind's refused LIST
// (forbiddenIsNone: the owner has none) and a Conflict on a DELETE
// (strict: an error; else the object was replaced and is not the one
// listed).
type deleteMode struct{ forbiddenIsNone, strict bool }

// deleteKind deletes the owner's objects of kind k that del picks.
func deleteKind(ctx context.Context, c Clients, k *Kind, o Owner, name string, del func(metav1.Object) bool, m deleteMode) error {
	return deleteListed(ctx, c, k, o, name, listKind(ctx, c, k, o, name, m), del, m)
}

// listing is what listKind found: the owner's objects of a kind, or why
// they could not be listed.
type listing struct {
	objs []metav1.Object
	err  error
}

// listKind lists the owner's objects of kind k, by its labels; what the
// cluster cannot serve, or an Optional kind's LIST refused when m says
// that is none, lists nothing.
func listKind(ctx context.Context, c Clients, k *Kind, o Owner, name string, m deleteMode) listing {
	res := k.Resource(c)
	if res == nil {
		return listing{}
	}
	sel := o.Selector(name)
	if k.Selector != "" {
		sel += "," + k.Selector
	}
	list, err := res.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		if k.Optional && (apierrors.IsNotFound(err) || (apierrors.IsForbidden(err) && m.forbiddenIsNone)) {
			return listing{}
		}
		return listing{err: kube.TranslateError(err)}
	}
	return listing{objs: list}
}

// deleteListed deletes what of l the owner owns and del picks.
func deleteListed(ctx context.Context, c Clients, k *Kind, o Owner, name string, l listing, del func(metav1.Object) bool, m deleteMode) error {
	if l.err != nil {
		return l.err
	}
	res := k.Resource(c)
	for _, obj := range l.objs {
		if !o.Owns(obj.GetLabels(), name) || !del(obj) {
			continue
		}
		uid := obj.GetUID()
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
		if k.Background {
			opts.PropagationPolicy = new(metav1.DeletePropagationBackground)
		}
		err := res.Delete(ctx, obj.GetName(), opts)
		switch {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsConflict(err) && !m.strict:
		case apierrors.IsConflict(err):
			return fmt.Errorf("%s %s was replaced while it was being deleted: %w", k.Noun, obj.GetName(), kube.TranslateError(err))
		default:
			return kube.TranslateError(err)
		}
	}
	return nil
}

func keepsAny(kept map[Ref]bool, k *Kind) bool {
	for r := range kept {
		if r.Resource == k.GVR.GroupResource() {
			return true
		}
	}
	return false
}

// Reversed is t in removal order: what names an object before it.
func (t Table) Reversed() Table {
	out := make(Table, len(t))
	for i, k := range t {
		out[len(t)-1-i] = k
	}
	return out
}
