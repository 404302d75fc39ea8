package access

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// Grant is one subject's access through one RoleBinding; `tug access list`
// rows, and the JSON shape of docs/output.md.
type Grant struct {
	Subject string `json:"subject"` // as 'tug access' reads it: alice, group:devs, ci:deploy
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	// Namespace is a ServiceAccount's.
	Namespace string `json:"namespace,omitempty"`
	// Level is tug's level the binding grants, "" for a role of another.
	Level   Level  `json:"level,omitempty"`
	Binding string `json:"binding"`
	Role    string `json:"role"` // Role/tug-developer, ClusterRole/edit
	// Managed: tug made the binding ('tug access add' or 'tug access
	// token'); tug never changes or removes one it did not make.
	Managed bool `json:"managed"`
	// Warning is what the grant could not do but went on without: an
	// older tug Role the caller may not bring up to date.
	Warning string `json:"warning,omitempty"`
}

// Add grants level l to s in namespace: tug's Role for l (made when
// missing) and a RoleBinding labelled as tug's. A grant at another level
// replaces tug's earlier one; the new binding exists before the old one
// goes. The API server refuses a grant of more than the caller holds,
// which comes back as a RefusedError with Escalation set.
func Add(ctx context.Context, client kubernetes.Interface, namespace string, s Subject, l Level) (Grant, bool, error) {
	if s.Kind == rbacv1.ServiceAccountKind {
		// any service account, of any namespace: whoever may run pods
		// there (a developer of that namespace) can act as it
		if err := refuseAdminCI(l); err != nil {
			return Grant{}, false, err
		}
	}
	warning, err := ensureRole(ctx, client, namespace, l)
	if err != nil {
		return Grant{}, false, err
	}
	rbs, err := client.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		return Grant{}, false, kube.TranslateError(err)
	}
	name := bindingName(s, l)
	changed := false
	if !slices.ContainsFunc(rbs.Items, func(rb rbacv1.RoleBinding) bool { return rb.Name == name }) {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
				Labels:      map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelLevel: string(l)},
				Annotations: map[string]string{annotationSubject: s.Text(namespace)}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: l.RoleName()},
			Subjects: []rbacv1.Subject{s.rbac()},
		}
		if _, err := client.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return Grant{}, false, explainEscalation(err, l, namespace)
		}
		changed = true
	}
	for _, rb := range rbs.Items {
		if rb.Name != name && tugBindingFor(rb, s, namespace) {
			if err := client.RbacV1().RoleBindings(namespace).Delete(ctx, rb.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return Grant{}, changed, kube.TranslateError(err)
			}
			changed = true
		}
	}
	g := Grant{Subject: s.Text(namespace), Kind: s.Kind, Name: s.Name, Namespace: s.Namespace, Level: l, Binding: name, Role: "Role/" + l.RoleName(), Managed: true, Warning: warning}
	return g, changed, nil
}

const annotationSubject = "tug.dev/subject"

// bindingName is tug's RoleBinding granting l to s.
func bindingName(s Subject, l Level) string {
	return strings.Replace(s.bindingName(), "tug-", "tug-"+string(l)+"-", 1)
}

// tugBindingFor: rb is one tug made for s (labelled, s its one subject,
// bound to a Role of tug's levels); one edited by hand since is not
// changed or removed as tug's.
func tugBindingFor(rb rbacv1.RoleBinding, s Subject, namespace string) bool {
	return rb.Labels[kube.LabelManagedBy] == kube.ManagedBy && rb.Labels[LabelLevel] != "" &&
		rb.RoleRef.Kind == "Role" && LevelOfRole(rb.RoleRef.Name) != "" &&
		len(rb.Subjects) == 1 && s.matches(rb.Subjects[0], namespace)
}

// ensureRole makes tug's Role for l in namespace when it is missing, and
// brings one tug made up to date; a Role of that name that tug did not
// make is refused. An update RBAC refuses (the new rules hold more than
// the caller) is a warning: the Role is bound as it is.
func ensureRole(ctx context.Context, client kubernetes.Interface, namespace string, l Level) (string, error) {
	want := Role(l, namespace)
	have, err := client.RbacV1().Roles(namespace).Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = client.RbacV1().Roles(namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return "", nil
		}
		return "", explainEscalation(err, l, namespace)
	case err != nil:
		return "", kube.TranslateError(err)
	case have.Labels[kube.LabelManagedBy] != kube.ManagedBy:
		// Written by hand (an older docs/rbac), it may lack the level
		// marker: bound, it would give access but no level tug knows.
		return "", fmt.Errorf("the Role %s in namespace %q was not made by tug (it has no %s=%s label), so it may not hold the %s level; nothing was changed: re-apply it with 'kubectl apply -n %s -f docs/rbac/%s-role.yaml', or delete it and tug makes it",
			want.Name, namespace, kube.LabelManagedBy, kube.ManagedBy, l, namespace, want.Name)
	case equality.Semantic.DeepEqual(have.Rules, want.Rules):
		return "", nil
	}
	have.Rules = want.Rules
	_, err = client.RbacV1().Roles(namespace).Update(ctx, have, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	var refused *RefusedError
	if err = explainEscalation(err, l, namespace); errors.As(err, &refused) {
		return fmt.Sprintf("the Role %s in namespace %q is older than this tug and you may not bring it up to date (it would grant more than you hold); it was bound as it is: a cluster-admin must re-apply it with 'kubectl apply -n %s -f docs/rbac/%s-role.yaml'",
			want.Name, namespace, namespace, want.Name), nil
	}
	return "", err
}

// explainEscalation turns the API server's refusal of a Role or binding
// that grants more than the caller holds (RBAC's escalation check) into a
// RefusedError; other errors are translated as usual.
func explainEscalation(err error, l Level, namespace string) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && apierrors.IsForbidden(err) && strings.Contains(status.Status().Message, "not currently held") {
		return &RefusedError{Command: fmt.Sprintf("granting %s", l), Need: l, Namespace: namespace, Escalation: true, Err: err}
	}
	return kube.TranslateError(err)
}

// List is who has access in namespace through its RoleBindings: tug's and
// everyone else's (shown, never changed), highest level first.
func List(ctx context.Context, client kubernetes.Interface, namespace string) ([]Grant, error) {
	rbs, err := client.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	levelOf, err := tugRoles(ctx, client, namespace)
	if err != nil {
		return nil, err
	}
	out := []Grant{}
	for _, rb := range rbs.Items {
		managed := rb.Labels[kube.LabelManagedBy] == kube.ManagedBy && rb.Labels[LabelLevel] != ""
		level := Level("")
		if rb.RoleRef.Kind == "Role" {
			level = levelOf(rb.RoleRef.Name)
		}
		for _, r := range rb.Subjects {
			s := Subject{Kind: r.Kind, Name: r.Name, Namespace: r.Namespace}
			if r.Kind == rbacv1.ServiceAccountKind && s.Namespace == "" {
				s.Namespace = namespace
			}
			out = append(out, Grant{Subject: s.Text(namespace), Kind: s.Kind, Name: s.Name, Namespace: s.Namespace, Level: level,
				Binding: rb.Name, Role: rb.RoleRef.Kind + "/" + rb.RoleRef.Name, Managed: managed})
		}
	}
	slices.SortFunc(out, func(a, b Grant) int {
		if d := b.Level.Rank() - a.Level.Rank(); d != 0 {
			return d
		}
		return strings.Compare(a.Subject+a.Binding, b.Subject+b.Binding)
	})
	return out, nil
}

// tugRoles says which level a Role of namespace grants: only a Role tug
// made (labelled) has one; a hand-made Role of the same name may lack the
// level marker. A caller who may not list Roles (a viewer) gets the
// level by name.
func tugRoles(ctx context.Context, client kubernetes.Interface, namespace string) (func(string) Level, error) {
	roles, err := client.RbacV1().Roles(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if apierrors.IsForbidden(err) {
		return LevelOfRole, nil
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	tugs := map[string]bool{}
	for _, r := range roles.Items {
		tugs[r.Name] = true
	}
	return func(name string) Level {
		if !tugs[name] {
			return ""
		}
		return LevelOfRole(name)
	}, nil
}
