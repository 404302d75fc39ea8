package access

import (
	"context"
	"fmt"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// MayUse asks the API server whether the caller holds level l in
// namespace (a SelfSubjectAccessReview of l's marker; see Rules).
func MayUse(ctx context.Context, client kubernetes.Interface, namespace string, l Level) (bool, error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: markerVerb, Group: markerGroup, Resource: markerResource, Name: string(l),
		},
	}}
	out, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}

// added is one permission each level's Role holds and the level below's
// does not, for HoldsBeyond. The operator's Role is the developer's (their
// line is tug's marker alone), so it has none.
var added = map[Level]authorizationv1.ResourceAttributes{
	Developer: {Verb: "update", Resource: "secrets"},
	Admin:     {Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
}

// HoldsBeyond says whether a caller who holds a level below l may still do
// what l adds in namespace through access that is not tug's (a ClusterRole
// edit or admin bound there, a hand-made Role): then RBAC, not tug's
// check, decides. One review; false for a level that adds nothing RBAC
// can see.
func HoldsBeyond(ctx context.Context, client kubernetes.Interface, namespace string, l Level) (bool, error) {
	a, ok := added[l]
	if !ok {
		return false, nil
	}
	a.Namespace = namespace
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}
	out, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return out.Status.Allowed, nil
}

// CallerLevel is the highest level the caller holds in namespace, or ""
// when it holds none of tug's levels (its access, if any, is not through
// them).
func CallerLevel(ctx context.Context, client kubernetes.Interface, namespace string) (Level, error) {
	// One review per level, asked at once: one round trip, not four (a
	// caller on no level would otherwise wait for every one in turn).
	held := make([]bool, len(Levels))
	errs := make([]error, len(Levels))
	var wg sync.WaitGroup
	for i, l := range Levels {
		wg.Go(func() { held[i], errs[i] = MayUse(ctx, client, namespace, l) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", err
		}
	}
	for i := len(Levels) - 1; i >= 0; i-- {
		if held[i] {
			return Levels[i], nil
		}
	}
	return "", nil
}

// RefusedError is a command refused because the caller's level is below
// the one it needs. It says which level, who holds what, and how to get it.
type RefusedError struct {
	Command   string // "tug domain add"
	Need      Level
	Have      Level // "" when the caller holds no level of tug's
	User      string
	Namespace string
	// Escalation: the API server refused a grant of more than the caller
	// holds.
	Escalation bool
	// Err is the API server's refusal, when there was one. Not unwrapped:
	// main would print the API server's words instead of these.
	Err error
}

func (e *RefusedError) Error() string {
	user := e.User
	if user == "unknown" { // kube.WhoAmI's answer when the cluster cannot say
		user = ""
	}
	you := "you"
	if user != "" {
		you = fmt.Sprintf("you (%s)", user)
	}
	have := you + " hold no tug access level here"
	if e.Have != "" {
		have = fmt.Sprintf("%s are %s", you, Article(e.Have))
	}
	grant := fmt.Sprintf("an admin of the namespace grants it with 'tug access add %s --role %s -n %s' (see 'tug access list' for the admins; a cluster-admin, bound by a ClusterRoleBinding, can too)", subjectWord(user, e.Namespace), e.Need, e.Namespace)
	if e.Escalation {
		return fmt.Sprintf("%s refused: the API server lets no one grant more than they hold, and granting %s needs the %s level in namespace %q; %s; nothing was changed",
			e.Command, e.Need, e.Need, e.Namespace, have)
	}
	msg := fmt.Sprintf("%s needs the %s level in namespace %q; %s; %s", e.Command, e.Need, e.Namespace, have, grant)
	if e.Err != nil {
		// What the API server refused, for whoever writes a Role by hand.
		msg += " (the API server said: " + kube.TranslateError(e.Err).Error() + ")"
	}
	return msg
}

// Article is "a viewer", "an operator".
func Article(l Level) string {
	if l == Operator || l == Admin {
		return "an " + string(l)
	}
	return "a " + string(l)
}

// subjectWord is how 'tug access add' names the caller: a CI token's
// service account as ci:NAME, another service account as
// serviceaccount:NAMESPACE:NAME, a user by name.
func subjectWord(user, namespace string) string {
	if user == "" {
		return "USER"
	}
	if s, err := SubjectOfUser(user); err == nil {
		return s.Text(namespace)
	}
	return user
}
