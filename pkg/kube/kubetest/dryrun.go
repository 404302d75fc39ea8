// Package kubetest holds helpers for tests that use client-go's fake
// clientset.
package kubetest

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// HonorDryRun makes a fake clientset do what an API server does with a
// dry-run create, update or patch (dryRun=All): answer without storing
// anything. The fake's tracker ignores dry-run and would store the object,
// so a test could not tell a dry run from a write. The action is still
// recorded. A create or update answers with the object sent; a patch with
// the object as stored (an empty one when there is none).
func HonorDryRun(c *fake.Clientset) {
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			if dryRun(a.CreateOptions.DryRun) {
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
