package kube

import (
	"cmp"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Owned reports whether labels mark an object as tug's, for app: tug changes
// or deletes only such objects.
func Owned(labels map[string]string, app string) bool {
	return labels[LabelManagedBy] == ManagedBy && labels[LabelApp] == app
}

// NotOwnedError refuses to change or delete an object that tug did not make
// for the app (helm's, kubectl's, another app's), naming it.
type NotOwnedError struct {
	Kind      string // as kubectl names it: "Ingress", "Service"
	Name      string
	Namespace string
	App       string
	// Label is the owner's label (pkg/owned.Owner); empty: tug.dev/app.
	Label string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %q exists in namespace %q and is not tug's (it lacks the labels %s=%s and %s=%s); tug changed nothing: remove or rename it, or give the app another name",
		e.Kind, e.Name, e.Namespace, LabelManagedBy, ManagedBy, cmp.Or(e.Label, LabelApp), e.App)
}

// CheckOwned is the one ownership guard: given the result of a GET of the
// object tug is about to write or delete, it answers whether the object
// exists, and a *NotOwnedError when it exists and is not the app's.
func CheckOwned(kind, namespace, name, app string, obj metav1.Object, getErr error) (exists bool, err error) {
	switch {
	case apierrors.IsNotFound(getErr):
		return false, nil
	case getErr != nil:
		return false, TranslateError(getErr)
	case !Owned(obj.GetLabels(), app):
		return true, &NotOwnedError{Kind: kind, Name: name, Namespace: namespace, App: app}
	}
	return true, nil
}
