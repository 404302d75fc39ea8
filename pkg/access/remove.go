package access

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// Removal is what 'tug access remove' takes away, found before anyone is
// asked; the JSON shape of docs/output.md.
type Removal struct {
	Subject string `json:"subject"`
	// Bindings are tug's RoleBindings of the subject, removed.
	Bindings []string `json:"bindings"`
	// ServiceAccount is a CI token's identity, removed with every token
	// it was issued.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// LeftAlone are bindings of the subject that tug did not make: listed,
	// never changed.
	LeftAlone []string `json:"leftAlone"`
}

// PlanRemove finds what removing s's access in namespace takes away. A
// subject with nothing of tug's to remove is an error that changes
// nothing (a plain failure, exit 1): it has no access at all, or only
// through bindings tug did not make.
func PlanRemove(ctx context.Context, client kubernetes.Interface, namespace string, s Subject) (*Removal, error) {
	rbs, err := client.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	r := &Removal{Subject: s.Text(namespace), Bindings: []string{}, LeftAlone: []string{}}
	for _, rb := range rbs.Items {
		switch {
		case tugBindingFor(rb, s, namespace):
			r.Bindings = append(r.Bindings, rb.Name)
		case hasSubject(rb.Subjects, s, namespace):
			r.LeftAlone = append(r.LeftAlone, rb.Name)
		}
	}
	if _, ok := s.CI(namespace); ok {
		sa, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, s.Name, metav1.GetOptions{})
		switch {
		case err == nil && sa.Labels[kube.LabelManagedBy] == kube.ManagedBy:
			r.ServiceAccount = s.Name
		case err == nil:
			r.LeftAlone = append(r.LeftAlone, "serviceaccount/"+s.Name)
		case !apierrors.IsNotFound(err):
			return nil, kube.TranslateError(err)
		}
	}
	if len(r.Bindings) == 0 && r.ServiceAccount == "" {
		if len(r.LeftAlone) > 0 {
			return nil, fmt.Errorf("%s has access in namespace %q only through %s, which tug did not make; nothing was changed (remove it with kubectl if you mean to)",
				s.Text(namespace), namespace, strings.Join(r.LeftAlone, ", "))
		}
		// Not bad input: nothing of that subject's was found (exit 1, as a
		// missing app; docs/exit-codes.md).
		return nil, fmt.Errorf("%s has no access in namespace %q; see 'tug access list -n %s'", s.Text(namespace), namespace, namespace)
	}
	return r, nil
}

func hasSubject(subjects []rbacv1.Subject, s Subject, namespace string) bool {
	for _, r := range subjects {
		if s.matches(r, namespace) {
			return true
		}
	}
	return false
}

// Remove deletes what r found: the ServiceAccount first, so a CI token is
// refused from the moment the command returns, then the bindings.
func Remove(ctx context.Context, client kubernetes.Interface, namespace string, r *Removal) error {
	if r.ServiceAccount != "" {
		err := client.CoreV1().ServiceAccounts(namespace).Delete(ctx, r.ServiceAccount, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	for _, name := range r.Bindings {
		err := client.RbacV1().RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	return nil
}
