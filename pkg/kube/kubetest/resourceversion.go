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
	v := &versions{tracker: c.Tracker()}
	v.perform = k8stesting.ObjectReaction(v.tracker)
	c.PrependReactor("*", "*", v.react)
}

// versions is the one resourceVersion counter of a clientset, as an API
// server has (etcd's revision), and the store it checks writes against.
type versions struct {
	mu      sync.Mutex // a check and its write are one step, as on a server
	last    int64
	tracker k8stesting.ObjectTracker
	perform k8stesting.ReactionFunc // the fake's own handling
}

// react handles writes to objects; reads and subresources go on to the
// fake's own reactors.
func (v *versions) react(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "" {
		return false, nil, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	switch a := action.(type) {
	case k8stesting.CreateActionImpl:
		return v.create(a)
	case k8stesting.UpdateActionImpl:
		return v.update(a)
	case k8stesting.PatchActionImpl:
		return v.patch(a)
	case k8stesting.DeleteActionImpl:
		return v.delete(a)
	}
	return false, nil, nil
}

func (v *versions) create(a k8stesting.CreateActionImpl) (bool, runtime.Object, error) {
	obj, ok := v.stamped(a.GetObject())
	if !ok {
		return false, nil, nil
	}
	return v.perform(k8stesting.NewCreateAction(a.GetResource(), a.GetNamespace(), obj))
}

// update conflicts when it names a version that is not the stored one; one
// that names none replaces whatever is there.
func (v *versions) update(a k8stesting.UpdateActionImpl) (bool, runtime.Object, error) {
	m, err := meta.Accessor(a.GetObject())
	if err != nil {
		return false, nil, nil
	}
	if cur, ok := v.current(a, m.GetName()); ok && m.GetResourceVersion() != "" && m.GetResourceVersion() != cur {
		return true, nil, conflict(a, m.GetName())
	}
	obj, _ := v.stamped(a.GetObject())
	return v.perform(k8stesting.NewUpdateAction(a.GetResource(), a.GetNamespace(), obj))
}

// patch conflicts as update does when the patch names a version; the
// fake applies it, then the result is stored again with the next version.
func (v *versions) patch(a k8stesting.PatchActionImpl) (bool, runtime.Object, error) {
	if rv := patchResourceVersion(a.GetPatch()); rv != "" {
		if cur, ok := v.current(a, a.GetName()); ok && rv != cur {
			return true, nil, conflict(a, a.GetName())
		}
	}
	handled, got, err := v.perform(a)
	if err != nil || got == nil {
		return handled, got, err
	}
	obj, ok := v.stamped(got)
	if !ok {
		return handled, got, err
	}
	if err := v.tracker.Update(a.GetResource(), obj, a.GetNamespace()); err != nil {
		return true, nil, err
	}
	return true, obj, nil
}

// delete conflicts when its precondition names a version that is not
// the stored one; otherwise the fake deletes.
func (v *versions) delete(a k8stesting.DeleteActionImpl) (bool, runtime.Object, error) {
	if p := a.DeleteOptions.Preconditions; p != nil && p.ResourceVersion != nil {
		if cur, ok := v.current(a, a.GetName()); ok && *p.ResourceVersion != cur {
			return true, nil, conflict(a, a.GetName())
		}
	}
	return false, nil, nil
}

// current is the stored object's resourceVersion, false when there is none.
func (v *versions) current(a k8stesting.Action, name string) (string, bool) {
	obj, err := v.tracker.Get(a.GetResource(), a.GetNamespace(), name)
	if err != nil {
		return "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false
	}
	return m.GetResourceVersion(), true
}

// stamped is obj (a copy) with the next resourceVersion.
func (v *versions) stamped(obj runtime.Object) (runtime.Object, bool) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	v.last++
	m.SetResourceVersion(strconv.FormatInt(v.last, 10))
	return obj, true
}

// conflict is the API server's answer to a write on a stale read.
func conflict(a k8stesting.Action, name string) error {
	return apierrors.NewConflict(a.GetResource().GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
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
