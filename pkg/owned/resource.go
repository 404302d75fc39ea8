package owned

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Resource is the four requests the loops make of one kind in one
// namespace, whether through the typed clientset or the dynamic client.
type Resource interface {
	// Apply server-side-applies data (the object as JSON) and returns what
	// the server stored.
	Apply(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error)
	Get(ctx context.Context, name string) (metav1.Object, error)
	List(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// TypedClient is what every typed client of client-go (DeploymentInterface,
// ServiceInterface, ...) has, for objects T and lists L.
type TypedClient[T runtime.Object, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Typed makes a Kind's Typed from the typed client of its resource:
//
//	Typed: owned.Typed(func(c kubernetes.Interface, ns string) owned.TypedClient[*appsv1.Deployment, *appsv1.DeploymentList] {
//		return c.AppsV1().Deployments(ns)
//	}),
func Typed[T runtime.Object, L runtime.Object](client func(c kubernetes.Interface, namespace string) TypedClient[T, L]) func(kubernetes.Interface, string) Resource {
	return func(c kubernetes.Interface, ns string) Resource { return typedResource[T, L]{client(c, ns)} }
}

type typedResource[T runtime.Object, L runtime.Object] struct{ c TypedClient[T, L] }

func (r typedResource[T, L]) Apply(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
	got, err := r.c.Patch(ctx, name, types.ApplyPatchType, data, opts)
	if err != nil {
		return nil, err
	}
	return got, nil
}

func (r typedResource[T, L]) Get(ctx context.Context, name string) (metav1.Object, error) {
	got, err := r.c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return meta.Accessor(got)
}

func (r typedResource[T, L]) List(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, error) {
	list, err := r.c.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return accessors(list)
}

func (r typedResource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.c.Delete(ctx, name, opts)
}

// accessors are the items of list.
func accessors(list runtime.Object) ([]metav1.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(items))
	for _, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

type dynamicResource struct{ r dynamic.ResourceInterface }

func (d dynamicResource) Apply(ctx context.Context, name string, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
	got, err := d.r.Patch(ctx, name, types.ApplyPatchType, data, opts)
	if err != nil {
		return nil, err
	}
	return got, nil
}

func (d dynamicResource) Get(ctx context.Context, name string) (metav1.Object, error) {
	got, err := d.r.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return got, nil
}

func (d dynamicResource) List(ctx context.Context, opts metav1.ListOptions) ([]metav1.Object, error) {
	list, err := d.r.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

func (d dynamicResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return d.r.Delete(ctx, name, opts)
}
