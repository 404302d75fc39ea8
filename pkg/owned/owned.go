// Package owned is the one table of the kinds of objects tug owns, and the
// loops every change makes over it: apply (server-side, in the table's
// order), the ownership guard (nothing of another tool's is taken over),
// pruning what a change no longer renders, and removal of everything an
// owner has. A kind is declared once, as a Kind; pkg/deploy's Kinds is
// the table of an app's, and its rendering returns the objects as one
// list. Adding a kind is one entry there plus its rendering; deploy,
// removal, export and the developer Role (pkg/doctor) follow.
//
// The models are Helm's kube.Client.Update(original, target) (apply the
// targets, then delete what the originals have and the targets do not)
// and kubectl's prune table (each kind listed by the owner's labels). As
// in kubectl, a kind is found by label, never by remembering names: a tug
// killed between apply and prune leaves nothing the next change misses.
package owned

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// Kind declares one kind of object tug owns.
type Kind struct {
	// Kind is the object's kind ("Deployment"), as ownership errors
	// name it; with GVR's group it says which kind an object is.
	Kind string
	// Noun is how apply errors name one object: "applying NOUN NAME: ...".
	Noun string
	// Plural is how removal names what is left of the kind.
	Plural string
	GVR    schema.GroupVersionResource
	// Namespaced kinds live in the owner's namespace. The loops handle
	// namespaced kinds only; the field is what the Role is made from.
	Namespaced bool
	// Typed is the kind's client in the typed clientset (Typed makes
	// one); nil: through the dynamic client, for other projects' APIs.
	Typed func(c kubernetes.Interface, namespace string) Resource
	// Optional kinds may be absent from a cluster (a CRD not installed)
	// or from an older Role (a kind tug started writing later): a LIST
	// that is not found, or forbidden while nothing of the kind is to be
	// kept, means the owner has none (what one cannot list one cannot
	// have made).
	Optional bool
	// Unserved says, after "applying NOUN NAME: ", why a cluster that does
	// not serve the kind cannot take it and what to do; NoClient, the same
	// for a client built without the dynamic API.
	Unserved, NoClient string
	// Selector narrows the owner's label selector for this kind
	// ("tug.dev/kind=job"); empty: every object with the owner's labels.
	Selector string
	// Background deletes the object's dependents (a Deployment's
	// ReplicaSets and pods, a CronJob's Jobs) in the background.
	Background bool
	// Precheck, if set, runs once before the guard when objects of the
	// kind are to be applied (is the API served, may the user list it),
	// so the error says what to ask for before anything is written.
	Precheck func(ctx context.Context, c Clients, objs []Object) error
	// PodSpec is where an object of the kind keeps its pods' spec (nil:
	// it has none): export makes their config optional there.
	PodSpec func(obj Object) *corev1.PodSpec
}

// Object is one object tug renders: a typed object or an unstructured one,
// with TypeMeta set (server-side apply needs it). An alias, as
// render.Object is, so a rendered list is a list of these.
type Object = interface {
	runtime.Object
	metav1.Object
}

// Table is the kinds an owner has, in the order they are applied: an
// object is applied after those it names (a Service before the route that
// sends to it); pruning and removal go in the reverse order.
type Table []*Kind

// Clients reach the owner's namespace: the typed clientset for the typed
// kinds, the dynamic client (nil when not built) for the others.
type Clients struct {
	Typed     kubernetes.Interface
	Dynamic   dynamic.Interface
	Namespace string
}

// Owner says whose objects the loops touch: those carrying tug's
// managed-by label and Label set to the owner's name. Apps are one owner
// (App); a second kind of owner (a backing service) is another Label with
// its own Table, through the same loops.
type Owner struct {
	// Label carries the owner's name ("tug.dev/app").
	Label string
}

// App owns the objects of an app.
var App = Owner{Label: kube.LabelApp}

// Selector selects every object of the owner called name.
func (o Owner) Selector(name string) string {
	return fmt.Sprintf("%s=%s,%s=%s", kube.LabelManagedBy, kube.ManagedBy, o.Label, name)
}

// Owns says whether labels mark an object as tug's, for the owner called
// name: the only objects tug changes or deletes.
func (o Owner) Owns(labels map[string]string, name string) bool {
	return labels[kube.LabelManagedBy] == kube.ManagedBy && labels[o.Label] == name
}

// Of is the kind of obj in t, by its group and kind; nil when t has none.
func (t Table) Of(obj Object) *Kind {
	gvk := obj.GetObjectKind().GroupVersionKind()
	for _, k := range t {
		if k.Kind == gvk.Kind && k.GVR.Group == gvk.Group {
			return k
		}
	}
	return nil
}

// index is k's place in t (len(t) when absent).
func (t Table) index(k *Kind) int {
	if i := slices.Index(t, k); i >= 0 {
		return i
	}
	return len(t)
}

// Sorted is objs in t's order (stable: the rendering's order within a
// kind), each with its kind. An object of no kind of t is an error: a
// rendering that forgot to declare its kind would otherwise be applied
// but never pruned.
func (t Table) Sorted(objs []Object) ([]Entry, error) {
	out := make([]Entry, 0, len(objs))
	for _, o := range objs {
		k := t.Of(o)
		if k == nil {
			gvk := o.GetObjectKind().GroupVersionKind()
			return nil, fmt.Errorf("%s %s: not a kind tug declares (pkg/deploy Kinds)", gvk.Kind, o.GetName())
		}
		out = append(out, Entry{Kind: k, Obj: o})
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return t.index(a.Kind) - t.index(b.Kind) })
	return out, nil
}

// Entry is an object with its kind.
type Entry struct {
	Kind *Kind
	Obj  Object
}

// Ref names one object of a kind, by its group and resource.
type Ref struct {
	Resource schema.GroupResource
	Name     string
}

// refOf is the Ref of an object of kind k.
func refOf(k *Kind, name string) Ref { return Ref{Resource: k.GVR.GroupResource(), Name: name} }

// Resource returns the kind's client in c's namespace (nil: c has no
// client for it, such as a dynamic kind without a dynamic client).
func (k *Kind) Resource(c Clients) Resource {
	if k.Typed != nil {
		if c.Typed == nil {
			return nil
		}
		return k.Typed(c.Typed, c.Namespace)
	}
	if c.Dynamic == nil {
		return nil
	}
	return dynamicResource{c.Dynamic.Resource(k.GVR).Namespace(c.Namespace)}
}

// ResourceName is the kind as an RBAC rule names it: "deployments.apps",
// "services".
func (k *Kind) ResourceName() string {
	if k.GVR.Group == "" {
		return k.GVR.Resource
	}
	return k.GVR.Resource + "." + k.GVR.Group
}

// Only is t restricted to the kinds named (a change of one kind alone:
// the jobs of a release changed in place).
func (t Table) Only(kinds ...string) Table {
	var out Table
	for _, k := range t {
		if slices.Contains(kinds, k.Kind) {
			out = append(out, k)
		}
	}
	return out
}
