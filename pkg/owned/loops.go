package owned

import (
	"context"
	"encoding/json"
	"fmt"

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
	for _, e := range entries {
		if err := guardOne(ctx, c, o, e); err != nil {
			return err
		}
	}
	return nil
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
	for i := len(t) - 1; i >= 0; i-- {
		if err := PruneKind(ctx, c, t[i], o, name, kept); err != nil {
			return err
		}
	}
	return nil
}

// PruneKind deletes the owner's objects of kind k that kept does not name
// (nil: all of them): one LIST by the owner's labels. An object the owner
// does not own is never deleted, and one replaced since the LIST is not
// either (a UID precondition). What the cluster cannot serve, or an
// Optional kind's LIST that is refused while nothing is kept, is none.
func PruneKind(ctx context.Context, c Clients, k *Kind, o Owner, name string, kept map[Ref]bool) error {
	res := k.Resource(c)
	if res == nil {
		return nil
	}
	sel := o.Selector(name)
	if k.Selector != "" {
		sel += "," + k.Selector
	}
	list, err := res.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		if k.Optional && (apierrors.IsNotFound(err) || (apierrors.IsForbidden(err) && !keepsAny(kept, k))) {
			return nil
		}
		return kube.TranslateError(err)
	}
	for _, obj := range list {
		if kept[refOf(k, obj.GetName())] || !o.Owns(obj.GetLabels(), name) {
			continue
		}
		uid := obj.GetUID()
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
		if k.Background {
			opts.PropagationPolicy = new(metav1.DeletePropagationBackground)
		}
		err := res.Delete(ctx, obj.GetName(), opts)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
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
