package access

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

func TestParseLevel(t *testing.T) {
	for _, s := range []string{"viewer", "Developer", " operator ", "admin"} {
		if _, err := ParseLevel(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "root", "owner", "view"} {
		if _, err := ParseLevel(s); !inputerr.Is(err) {
			t.Errorf("%q: %v; want an input error", s, err)
		}
	}
	if Operator.Below() != Developer || Viewer.Below() != "" || !Admin.Holds(Viewer) || Viewer.Holds(Developer) || Level("").Holds(Viewer) {
		t.Error("level order is wrong")
	}
}

func TestParseSubject(t *testing.T) {
	for in, want := range map[string]Subject{
		"alice":                                {Kind: "User", Name: "alice"},
		"user:bob@example.com":                 {Kind: "User", Name: "bob@example.com"},
		"oidc:carol":                           {Kind: "User", Name: "oidc:carol"},
		"group:devs":                           {Kind: "Group", Name: "devs"},
		"ci:deploy":                            {Kind: "ServiceAccount", Name: "tug-ci-deploy", Namespace: "shop"},
		"sa:builder":                           {Kind: "ServiceAccount", Name: "builder", Namespace: "shop"},
		"serviceaccount:other:builder":         {Kind: "ServiceAccount", Name: "builder", Namespace: "other"},
		"system:serviceaccount:other:deployer": {Kind: "ServiceAccount", Name: "deployer", Namespace: "other"},
	} {
		got, err := ParseSubject(in, "shop")
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a b", "group:", "ci:", "ci:Bad_Name", "sa:", "sa:UPPER", "system:anonymous", "group:system:authenticated", "user:", "x\x1b[31m"} {
		if _, err := ParseSubject(in, "shop"); !inputerr.Is(err) {
			t.Errorf("%q: %v; want an input error", in, err)
		}
	}
	if s, _ := ParseSubject("ci:deploy", "shop"); s.Text("shop") != "ci:deploy" {
		t.Errorf("ci subject reads %q", s.Text("shop"))
	}
}

// Each level holds the one below it, the viewer reads no Secret and
// streams into no container, only the admin writes RBAC, and every Role
// carries the markers of its level and those below.
func TestRulesPerLevel(t *testing.T) {
	allows := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) && len(r.ResourceNames) == 0 {
				return true
			}
		}
		return false
	}
	for _, l := range Levels {
		rules := Rules(l)
		if below := l.Below(); below != "" {
			for _, r := range Rules(below) {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						if len(r.ResourceNames) == 0 && !allows(rules, r.APIGroups[0], res, v) {
							t.Errorf("%s lacks %s %s.%s that %s holds", l, v, res, r.APIGroups[0], below)
						}
					}
				}
			}
		}
		marker := rules[len(rules)-1]
		if marker.APIGroups[0] != markerGroup || len(marker.ResourceNames) != l.Rank() {
			t.Errorf("%s marker: %+v", l, marker)
		}
		if got := allows(rules, "rbac.authorization.k8s.io", "rolebindings", "create"); got != (l == Admin) {
			t.Errorf("%s may create rolebindings: %v", l, got)
		}
	}
	v := Rules(Viewer)
	for _, bad := range [][3]string{{"", "secrets", "get"}, {"", "secrets", "list"}, {"", "pods/exec", "get"}, {"", "pods/attach", "get"}, {"apps", "deployments", "patch"}, {"", "pods", "delete"}} {
		if allows(v, bad[0], bad[1], bad[2]) {
			t.Errorf("viewer may %s %s", bad[2], bad[1])
		}
	}
	for _, good := range [][3]string{{"", "pods/log", "get"}, {"", "pods", "list"}, {"", "configmaps", "get"}, {"rbac.authorization.k8s.io", "rolebindings", "list"}} {
		if !allows(v, good[0], good[1], good[2]) {
			t.Errorf("viewer may not %s %s", good[2], good[1])
		}
	}
	if !allows(Rules(Developer), "", "secrets", "create") || !allows(Rules(Developer), "", "pods/exec", "create") {
		t.Error("developer may not write secrets or exec")
	}
}

// Grants are tug's bindings; another level replaces tug's earlier one;
// list shows bindings tug did not make; remove takes only tug's.
func TestAddListRemove(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hand-made", Namespace: "shop"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice"}},
	})
	alice, _ := ParseSubject("alice", "shop")
	if _, changed, err := Add(ctx, cs, "shop", alice, Developer); err != nil || !changed {
		t.Fatalf("add: %v, changed %v", err, changed)
	}
	if _, changed, err := Add(ctx, cs, "shop", alice, Developer); err != nil || changed {
		t.Fatalf("add again: %v, changed %v", err, changed)
	}
	if _, _, err := Add(ctx, cs, "shop", alice, Operator); err != nil {
		t.Fatal(err)
	}
	for _, l := range []Level{Developer, Operator} {
		if _, err := cs.RbacV1().Roles("shop").Get(ctx, l.RoleName(), metav1.GetOptions{}); err != nil {
			t.Errorf("role %s: %v", l, err)
		}
	}
	grants, err := List(ctx, cs, "shop")
	if err != nil || len(grants) != 2 || grants[0].Level != Operator || !grants[0].Managed || grants[1].Managed || grants[1].Role != "ClusterRole/edit" {
		t.Fatalf("list: %+v, %v", grants, err)
	}
	plan, err := PlanRemove(ctx, cs, "shop", alice)
	if err != nil || len(plan.Bindings) != 1 || !slices.Equal(plan.LeftAlone, []string{"hand-made"}) {
		t.Fatalf("plan: %+v, %v", plan, err)
	}
	if err := Remove(ctx, cs, "shop", plan); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("shop").Get(ctx, "hand-made", metav1.GetOptions{}); err != nil {
		t.Errorf("the binding tug did not make is gone: %v", err)
	}
	// Now alice's only access is the hand-made binding: nothing to remove.
	if _, err := PlanRemove(ctx, cs, "shop", alice); err == nil || inputerr.Is(err) {
		t.Errorf("plan with only a hand-made binding: %v; want a failure that is not bad input", err)
	}
	bob, _ := ParseSubject("bob", "shop")
	if _, err := PlanRemove(ctx, cs, "shop", bob); err == nil || inputerr.Is(err) || !strings.Contains(err.Error(), "has no access") {
		t.Errorf("plan for a subject without access: %v; want a failure (exit 1), not bad input", err)
	}
}

func TestTokenOptionsValidate(t *testing.T) {
	ok := TokenOptions{Name: "deploy", Level: Developer, TTL: 10 * time.Minute}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, o := range []TokenOptions{
		{Name: "Deploy", Level: Developer, TTL: time.Hour},
		{Name: "deploy", Level: Developer, TTL: 5 * time.Minute},
		{Name: "deploy", TTL: time.Hour},
	} {
		if err := o.Validate(); !inputerr.Is(err) {
			t.Errorf("%+v: %v; want an input error", o, err)
		}
	}
	cs := fake.NewClientset()
	if _, err := IssueToken(context.Background(), cs, "shop", TokenOptions{Name: "deploy", TTL: time.Hour, Rotate: true}); !inputerr.Is(err) {
		t.Errorf("rotating a token never made: %v", err)
	}
}

// Any developer can act as a CI identity (a pod naming its service account,
// or a service-account-token Secret naming it), so a CI identity at admin
// would hand admin to every developer: refused, nothing made.
func TestCITokenAtAdminIsRefused(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	if err := (TokenOptions{Name: "deploy", Level: Admin, TTL: time.Hour}).Validate(); !inputerr.Is(err) {
		t.Errorf("validate admin: %v; want an input error", err)
	}
	if _, err := IssueToken(ctx, cs, "shop", TokenOptions{Name: "deploy", Level: Admin, TTL: time.Hour}); !inputerr.Is(err) || !strings.Contains(err.Error(), "operator") {
		t.Errorf("token at admin: %v; want an input error naming operator", err)
	}
	ci, _ := ParseSubject("ci:deploy", "shop")
	if _, _, err := Add(ctx, cs, "shop", ci, Admin); !inputerr.Is(err) {
		t.Errorf("add ci at admin: %v; want an input error", err)
	}
	// any service account: developers of its namespace can act as it
	for _, sub := range []string{"serviceaccount:builder", "serviceaccount:other:tug-ci-x"} {
		sa, err := ParseSubject(sub, "shop")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Add(ctx, cs, "shop", sa, Admin); !inputerr.Is(err) {
			t.Errorf("add %s at admin: %v; want an input error", sub, err)
		}
	}
	if n := len(cs.Actions()); n != 0 {
		t.Errorf("%d API actions; want none", n)
	}
}

// A rotate of a CI identity whose binding is gone is refused before its
// service account is deleted: bad input changes nothing.
func TestRotateWithoutALevelKeepsTheIdentity(t *testing.T) {
	ctx := context.Background()
	cs := tokenClientset()
	if _, err := IssueToken(ctx, cs, "shop", TokenOptions{Name: "deploy", Level: Developer, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rbs, _ := cs.RbacV1().RoleBindings("shop").List(ctx, metav1.ListOptions{})
	for _, rb := range rbs.Items {
		_ = cs.RbacV1().RoleBindings("shop").Delete(ctx, rb.Name, metav1.DeleteOptions{})
	}
	before, err := cs.CoreV1().ServiceAccounts("shop").Get(ctx, "tug-ci-deploy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := IssueToken(ctx, cs, "shop", TokenOptions{Name: "deploy", TTL: time.Hour, Rotate: true}); !inputerr.Is(err) || !strings.Contains(err.Error(), "--role") {
		t.Fatalf("rotate with no level held: %v; want an input error asking for --role", err)
	}
	after, err := cs.CoreV1().ServiceAccounts("shop").Get(ctx, "tug-ci-deploy", metav1.GetOptions{})
	if err != nil || after.UID != before.UID {
		t.Errorf("the service account was deleted or remade: %v", err)
	}
}

// --rotate keeps the level the CI identity holds now, not the one it was
// made with: a level lowered since with 'access add ci:NAME' stays lowered.
func TestRotateKeepsTheCurrentLevel(t *testing.T) {
	ctx := context.Background()
	cs := tokenClientset()
	if _, err := IssueToken(ctx, cs, "shop", TokenOptions{Name: "deploy", Level: Operator, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ci, _ := ParseSubject("ci:deploy", "shop")
	if _, _, err := Add(ctx, cs, "shop", ci, Viewer); err != nil {
		t.Fatal(err)
	}
	tok, err := IssueToken(ctx, cs, "shop", TokenOptions{Name: "deploy", TTL: time.Hour, Rotate: true})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Level != Viewer {
		t.Errorf("rotated at %s; want viewer", tok.Level)
	}
	gs, _ := List(ctx, cs, "shop")
	for _, g := range gs {
		if g.Subject == "ci:deploy" && g.Level != Viewer {
			t.Errorf("after rotate ci:deploy holds %s", g.Level)
		}
	}
}

// A service account named tug-ci-X is a CI identity only in the command's
// namespace: serviceaccount:other:tug-ci-d run with -n shop is other's
// service account, and removing its access leaves shop's tug-ci-d alone.
func TestCIOnlyInTheCommandsNamespace(t *testing.T) {
	ctx := context.Background()
	other, err := ParseSubject("serviceaccount:other:tug-ci-d", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.CI("shop"); ok {
		t.Error("other's tug-ci-d reads as a CI identity of shop")
	}
	if got := other.Text("shop"); got != "serviceaccount:other:tug-ci-d" {
		t.Errorf("other's tug-ci-d reads %q", got)
	}
	cs := fake.NewClientset(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tug-ci-d", Namespace: "shop",
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelLevel: "developer"}}})
	if _, _, err := Add(ctx, cs, "shop", other, Developer); err != nil {
		t.Fatal(err)
	}
	r, err := PlanRemove(ctx, cs, "shop", other)
	if err != nil {
		t.Fatal(err)
	}
	if r.ServiceAccount != "" || r.Subject != "serviceaccount:other:tug-ci-d" {
		t.Errorf("removal plan %+v; want other's binding only, no service account", r)
	}
}

// A Role named like tug's but not made by tug (main's old hand-written
// docs/rbac tug-developer, without the level marker) is not bound: tug's
// check would find no level. List gives a level only to Roles tug made.
func TestHandMadeRoleOfTugsNameIsNotBound(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tug-developer", Namespace: "shop"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "by-hand", Namespace: "shop"},
			RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "tug-developer"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}})
	alice, _ := ParseSubject("alice", "shop")
	_, _, err := Add(ctx, cs, "shop", alice, Developer)
	if err == nil || !strings.Contains(err.Error(), "docs/rbac") {
		t.Errorf("add onto a hand-made tug-developer: %v; want a refusal naming docs/rbac", err)
	}
	gs, err := List(ctx, cs, "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.Subject == "alice" {
			t.Errorf("alice was bound: %+v", g)
		}
		if g.Subject == "bob" && g.Level != "" {
			t.Errorf("bob's hand-made tug-developer reads as level %q", g.Level)
		}
	}
}

// CallerLevel's reviews go out at once, not one after another: a caller
// on no level pays one round trip, not four. The server (an httptest one:
// the fake clientset serializes calls) answers only when all four wait.
func TestCallerLevelAsksAtOnce(t *testing.T) {
	var mu sync.Mutex
	waiting := 0
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ssar authorizationv1.SelfSubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&ssar); err != nil || ssar.Spec.ResourceAttributes == nil {
			http.Error(w, "not a review", http.StatusBadRequest)
			return
		}
		mu.Lock()
		if waiting++; waiting == len(Levels) {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(2 * time.Second):
			http.Error(w, "the reviews were asked one after another", http.StatusInternalServerError)
			return
		}
		name := ssar.Spec.ResourceAttributes.Name
		ssar.Status.Allowed = name == "viewer" || name == "developer"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&ssar)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := CallerLevel(context.Background(), cs, "shop")
	if err != nil || l != Developer {
		t.Errorf("level %q, %v; want developer", l, err)
	}
}

// Bringing an older tug Role up to date may be refused by RBAC's
// escalation check (the new rules hold more than the caller): the grant
// binds the Role as it is and warns that a cluster-admin must re-apply it.
func TestOlderRoleNotUpdatableIsBoundWithAWarning(t *testing.T) {
	ctx := context.Background()
	old := Role(Admin, "shop")
	old.Rules = old.Rules[:1]
	cs := fake.NewClientset(old)
	cs.PrependReactor("update", "roles", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(rbacv1.Resource("roles"), "tug-admin", errors.New("user \"ann\" is attempting to grant RBAC permissions not currently held"))
	})
	alice, _ := ParseSubject("alice", "shop")
	g, changed, err := Add(ctx, cs, "shop", alice, Admin)
	if err != nil || !changed {
		t.Fatalf("add: %v, changed %v", err, changed)
	}
	if !strings.Contains(g.Warning, "docs/rbac/tug-admin-role.yaml") || !strings.Contains(g.Warning, "cluster-admin") {
		t.Errorf("warning %q", g.Warning)
	}
}

// On a cluster without SelfSubjectReview the caller's name is "unknown":
// the refusal does not tell anyone to grant a level to "unknown". The
// hint names cluster-admins too, who hold every level.
func TestRefusalOfAnUnknownCaller(t *testing.T) {
	for _, user := range []string{"unknown", ""} {
		msg := (&RefusedError{Command: "tug app deploy", Need: Developer, Have: Viewer, User: user, Namespace: "shop"}).Error()
		if strings.Contains(msg, "unknown") || strings.Contains(msg, "()") || !strings.Contains(msg, "you are a viewer") ||
			!strings.Contains(msg, "'tug access add USER --role developer -n shop'") || !strings.Contains(msg, "ClusterRoleBinding") {
			t.Errorf("user %q: %s", user, msg)
		}
	}
}

// tug's binding of a subject is one labelled by tug, naming that subject
// alone, bound to a Role of tug's level: a labelled binding edited by hand
// to name others, or to bind another role, is not removed by remove.
func TestTugBindingIsOneSubjectToATugRole(t *testing.T) {
	alice := Subject{Kind: "User", Name: "alice"}
	labels := map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelLevel: "developer"}
	mk := func(role string, names ...string) rbacv1.RoleBinding {
		rb := rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Labels: labels}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: role}}
		for _, n := range names {
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", Name: n})
		}
		return rb
	}
	if !tugBindingFor(mk("tug-developer", "alice"), alice, "shop") {
		t.Error("tug's own binding is not tug's")
	}
	if tugBindingFor(mk("tug-developer", "alice", "bob"), alice, "shop") || tugBindingFor(mk("edit", "alice"), alice, "shop") {
		t.Error("a binding of two subjects, or to another role, reads as tug's")
	}
}

// tokenClientset is a fake that answers the TokenRequest API, which the
// fake clientset does not serve.
func tokenClientset() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "t", ExpirationTimestamp: metav1.Now()}}, nil
	})
	return cs
}
