package kubetest

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// ApplyingDynamic is a fake dynamic client whose server-side apply makes
// or replaces the object sent: the fake's tracker applies only to an
// object that exists already, so a first apply would fail.
func ApplyingDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)
	dyn.PrependReactor("patch", "*", Applies(dyn, nil))
	return dyn
}

// Applies is the reaction of ApplyingDynamic, for a fake built otherwise
// (with custom list kinds) or for some resources only: a server-side apply
// creates or replaces the object, after mutate (nil: none) has changed it
// as the server or a controller would (a generation, a status).
func Applies(dyn *dynamicfake.FakeDynamicClient, mutate func(*unstructured.Unstructured)) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(p.GetPatch(), &u.Object); err != nil {
			return true, nil, err
		}
		if mutate != nil {
			mutate(u)
		}
		tr := dyn.Tracker()
		if _, err := tr.Get(p.GetResource(), p.GetNamespace(), p.GetName()); err == nil {
			return true, u, tr.Update(p.GetResource(), u, p.GetNamespace())
		}
		return true, u, tr.Create(p.GetResource(), u, p.GetNamespace())
	}
}
