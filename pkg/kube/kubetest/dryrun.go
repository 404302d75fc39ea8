// Package kubetest holds helpers for tests that use client-go's fake
// clientset.
package kubetest

import (
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// HonorDryRun makes a fake clientset do what an API server does with a
// dry-run create, update or patch (dryRun=All): answer without storing
// anything. The fake's tracker ignores dry-run and would store the object,
// so a test could not tell a dry run from a write. The action is still
// recorded. A create of a name in use fails with AlreadyExists; a create
// or update answers with the object sent; a patch with
// the object as stored (an empty one when there is none).
func HonorDryRun(c *fake.Clientset) {
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			if dryRun(a.CreateOptions.DryRun) {
				// as a real create would, refuse a name in use
				if m, ok := a.GetObject().(metav1.Object); ok {
					if _, err := c.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName()); err == nil {
						return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), m.GetName())
					}
				}
				return true, a.GetObject(), nil
			}
		case k8stesting.UpdateActionImpl:
			if dryRun(a.UpdateOptions.DryRun) {
				return true, a.GetObject(), nil
			}
		case k8stesting.PatchActionImpl:
			if dryRun(a.PatchOptions.DryRun) {
				obj, err := c.Tracker().Get(a.GetResource(), a.GetNamespace(), a.GetName())
				if err != nil {
					return true, nil, nil
				}
				return true, obj, nil
			}
		}
		return false, nil, nil
	})
}

func dryRun(opts []string) bool { return slices.Contains(opts, metav1.DryRunAll) }
