package kubetest

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// HonorResourceVersion makes a fake clientset keep resourceVersions as an
// API server does: every create, update and patch stores the object with a
// new resourceVersion, and an update (or a patch or delete precondition)
// that names an older one fails with a Conflict. The fake's tracker keeps
// no resourceVersion in the objects it stores and takes any update, so
// without this a compare-and-swap (a lock's renewal, a record's update on
// a stale read) always wins in a test and never does on a cluster.
//
// Dry-run writes are left to HonorDryRun: call HonorResourceVersion first,
// so that HonorDryRun's reactor runs before this one.
func HonorResourceVersion(c *fake.Clientset) {
	var mu sync.Mutex
	var last int64
	next := func() string {
		last++
		return strconv.FormatInt(last, 10)
	}
	tracker := c.Tracker()
	perform := k8stesting.ObjectReaction(tracker)
	current := func(a k8stesting.Action, name string) (string, bool) {
		obj, err := tracker.Get(a.GetResource(), a.GetNamespace(), name)
		if err != nil {
			return "", false
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return "", false
		}
		return m.GetResourceVersion(), true
	}
	conflict := func(a k8stesting.Action, name string) error {
		return apierrors.NewConflict(a.GetResource().GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	// stamped is obj (a copy) with a new resourceVersion, and its name.
	stamped := func(obj runtime.Object) (runtime.Object, string, bool) {
		obj = obj.DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, "", false
		}
		m.SetResourceVersion(next())
		return obj, m.GetName(), true
	}
	c.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		switch a := action.(type) {
		case k8stesting.CreateActionImpl:
			obj, _, ok := stamped(a.GetObject())
			if !ok {
				return false, nil, nil
			}
			return perform(k8stesting.NewCreateAction(a.GetResource(), a.GetNamespace(), obj))
		case k8stesting.UpdateActionImpl:
			m, err := meta.Accessor(a.GetObject())
			if err != nil {
				return false, nil, nil
			}
			if cur, ok := current(a, m.GetName()); ok && m.GetResourceVersion() != "" && m.GetResourceVersion() != cur {
				return true, nil, conflict(a, m.GetName())
			}
			obj, _, _ := stamped(a.GetObject())
			return perform(k8stesting.NewUpdateAction(a.GetResource(), a.GetNamespace(), obj))
		case k8stesting.PatchActionImpl:
			if rv := patchResourceVersion(a.GetPatch()); rv != "" {
				if cur, ok := current(a, a.GetName()); ok && rv != cur {
					return true, nil, conflict(a, a.GetName())
				}
			}
			handled, got, err := perform(a)
			if err != nil || got == nil {
				return handled, got, err
			}
			obj, _, ok := stamped(got)
			if !ok {
				return handled, got, err
			}
			if err := tracker.Update(a.GetResource(), obj, a.GetNamespace()); err != nil {
				return true, nil, err
			}
			return true, obj, nil
		case k8stesting.DeleteActionImpl:
			if p := a.DeleteOptions.Preconditions; p != nil && p.ResourceVersion != nil {
				if cur, ok := current(a, a.GetName()); ok && *p.ResourceVersion != cur {
					return true, nil, conflict(a, a.GetName())
				}
			}
		}
		return false, nil, nil
	})
}

// patchResourceVersion is the metadata.resourceVersion a JSON merge,
// strategic merge or apply patch names ("" for none).
func patchResourceVersion(patch []byte) string {
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(patch, &p) != nil {
		return ""
	}
	return p.Metadata.ResourceVersion
}
