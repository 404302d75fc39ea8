package access

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"tug.dev/tug/pkg/inputerr"
)

// ciPrefix names a CI identity's ServiceAccount: tug-ci-NAME.
const ciPrefix = "tug-ci-"

// Subject is who a grant is for, as a RoleBinding names it.
type Subject struct {
	Kind      string `json:"kind"` // User, Group or ServiceAccount
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"` // a ServiceAccount's
}

// Text is the subject as 'tug access' reads it in namespace: NAME,
// group:NAME, ci:NAME (a CI identity of namespace),
// serviceaccount:NAMESPACE:NAME.
func (s Subject) Text(namespace string) string {
	switch s.Kind {
	case rbacv1.GroupKind:
		return "group:" + s.Name
	case rbacv1.ServiceAccountKind:
		if ci, ok := s.CI(namespace); ok {
			return "ci:" + ci
		}
		return "serviceaccount:" + s.Namespace + ":" + s.Name
	}
	return s.Name
}

// CI is the CI identity's name when s is one of namespace: a tug-ci-NAME
// service account of another namespace is not (removing its access must
// not delete namespace's own tug-ci-NAME).
func (s Subject) CI(namespace string) (string, bool) {
	if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != namespace {
		return "", false
	}
	return strings.CutPrefix(s.Name, ciPrefix)
}

func (s Subject) rbac() rbacv1.Subject {
	out := rbacv1.Subject{Kind: s.Kind, Name: s.Name, Namespace: s.Namespace}
	if s.Kind != rbacv1.ServiceAccountKind {
		out.APIGroup = rbacv1.GroupName
	}
	return out
}

func (s Subject) matches(r rbacv1.Subject, namespace string) bool {
	ns := r.Namespace
	if r.Kind == rbacv1.ServiceAccountKind && ns == "" {
		ns = namespace
	}
	return r.Kind == s.Kind && r.Name == s.Name && ns == s.Namespace
}

// bindingName is the RoleBinding tug makes for s: readable, and unique per
// subject (a hash of who it is, as names lose characters).
func (s Subject) bindingName() string {
	sum := sha256.Sum256([]byte(s.Kind + "/" + s.Namespace + "/" + s.Name))
	word := map[string]string{rbacv1.UserKind: "user", rbacv1.GroupKind: "group", rbacv1.ServiceAccountKind: "sa"}[s.Kind]
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s.Name))
	if len(clean) > 30 {
		clean = clean[:30]
	}
	return "tug-" + word + "-" + strings.Trim(clean, "-") + "-" + hex.EncodeToString(sum[:4])
}

// ParseSubject reads a subject a user typed, in namespace: NAME or
// user:NAME (a user), group:NAME, ci:NAME (a CI token's identity),
// serviceaccount:[NAMESPACE:]NAME (also sa:), or a service account's user
// name system:serviceaccount:NAMESPACE:NAME.
func ParseSubject(text, namespace string) (Subject, error) {
	bad := func(why string) (Subject, error) {
		return Subject{}, inputerr.Errorf("invalid subject %q: %s; use NAME (a user), group:NAME, ci:NAME or serviceaccount:NAME", text, why)
	}
	if text == "" || strings.IndexFunc(text, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return bad("it is empty or holds spaces")
	}
	prefix, rest, found := strings.Cut(text, ":")
	if !found {
		prefix, rest = "user", text
	}
	switch prefix {
	case "user", "group":
		if rest == "" || strings.HasPrefix(rest, "system:") {
			return bad("no name, or a system: identity of Kubernetes itself")
		}
		kind := map[string]string{"user": rbacv1.UserKind, "group": rbacv1.GroupKind}[prefix]
		return Subject{Kind: kind, Name: rest}, nil
	case "ci":
		if err := ValidateCIName(rest); err != nil {
			return Subject{}, err
		}
		return Subject{Kind: rbacv1.ServiceAccountKind, Name: ciPrefix + rest, Namespace: namespace}, nil
	case "serviceaccount", "sa":
		return serviceAccount(text, rest, namespace, bad)
	case "system":
		if sa, ok := strings.CutPrefix(rest, "serviceaccount:"); ok && strings.Count(sa, ":") == 1 {
			return serviceAccount(text, sa, namespace, bad)
		}
		return bad("a system: identity of Kubernetes itself")
	}
	// An OIDC user name such as oidc:alice.
	return Subject{Kind: rbacv1.UserKind, Name: text}, nil
}

func serviceAccount(text, rest, namespace string, bad func(string) (Subject, error)) (Subject, error) {
	ns, name, found := strings.Cut(rest, ":")
	if !found {
		ns, name = namespace, rest
	}
	if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return bad("a service account is [NAMESPACE:]NAME, lower-case letters, digits and '-'")
	}
	return Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}, nil
}

// ValidateCIName checks a CI token's name: its ServiceAccount is
// tug-ci-NAME.
func ValidateCIName(name string) error {
	if len(validation.IsDNS1123Label(ciPrefix+name)) > 0 || name == "" {
		return inputerr.Errorf("invalid CI name %q: use at most %d lower-case letters, digits and '-', starting and ending with a letter or digit", name, validation.DNS1123LabelMaxLength-len(ciPrefix))
	}
	return nil
}

// SubjectOfUser is the subject of a user name the API server reported
// (SelfSubjectReview): a service account's, or a user's.
func SubjectOfUser(user string) (Subject, error) {
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if ns, name, found := strings.Cut(rest, ":"); found {
			return Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}, nil
		}
	}
	if user == "" {
		return Subject{}, inputerr.Errorf("no user name")
	}
	return Subject{Kind: rbacv1.UserKind, Name: user}, nil
}
