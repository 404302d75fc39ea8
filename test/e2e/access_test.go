package e2e

// Access levels on the local cluster's real RBAC (issue 38): people are
// impersonated from the admin kubeconfig (--as), the CI identity uses a
// real token from the TokenRequest API.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// as runs tug as user, impersonated with the admin kubeconfig.
func (h *H) as(user string, args ...string) Result {
	h.t.Helper()
	return h.Tug(append(args, "--as", user)...)
}

// refused checks that r is tug's refusal naming the level needed.
func refused(t *testing.T, r Result, what, level string) {
	t.Helper()
	if r.Code != 1 || !strings.Contains(r.Stderr, "needs the "+level+" level") || !strings.Contains(r.Stderr, "tug access add") ||
		strings.Contains(r.Stderr, "cannot ") && strings.Contains(r.Stderr, "resource") {
		t.Errorf("%s: want a refusal naming the %s level; %s", what, level, r)
	}
}

type grantRow struct {
	Subject string `json:"subject"`
	Level   string `json:"level"`
	Binding string `json:"binding"`
	Role    string `json:"role"`
	Managed bool   `json:"managed"`
}

func (h *H) grants(user string) []grantRow {
	h.t.Helper()
	r := h.as(user, "access", "list", "-o", "json")
	if r.Code != 0 {
		h.t.Fatalf("access list as %s: %s", user, r)
	}
	var rows []grantRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		h.t.Fatalf("access list -o json: %v\n%s", err, r.Stdout)
	}
	return rows
}

// The "Done when", people first: the cluster admin makes an admin
// of the namespace, who grants the other levels; each level does what it
// may and is refused one level up with the level named.
func TestAccessLevelsOnRealRBAC(t *testing.T) {
	h := New(t)
	h.deployShop("web", 1)
	h.mustTug("access", "add", "ada", "--role", "admin")

	// Only an admin grants access.
	for _, who := range []struct{ user, level string }{{"vic", "viewer"}, {"dev", "developer"}, {"ops", "operator"}} {
		if r := h.as("ada", "access", "add", who.user, "--role", who.level); r.Code != 0 {
			t.Fatalf("ada grants %s %s: %s", who.user, who.level, r)
		}
	}
	refused(t, h.as("ops", "access", "add", "eve", "--role", "viewer"), "an operator granting", "admin")
	refused(t, h.as("dev", "access", "add", "eve", "--role", "viewer"), "a developer granting", "admin")

	// A viewer lists and reads logs, never config values, deploys or shells.
	if r := h.as("vic", "app", "list"); r.Code != 0 || !strings.Contains(r.Stdout, "web") {
		t.Errorf("viewer app list: %s", r)
	}
	if r := h.as("vic", "unit", "list", "web"); r.Code != 0 {
		t.Errorf("viewer unit list: %s", r)
	}
	if r := h.as("vic", "logs", "web"); r.Code != 0 {
		t.Errorf("viewer logs: %s", r)
	}
	if r := h.as("vic", "app", "info", "web"); r.Code != 0 {
		t.Errorf("viewer app info: %s", r)
	}
	// release records are ConfigMaps a viewer reads (the values are Secrets)
	if r := h.as("vic", "app", "events", "web"); r.Code != 0 || strings.Contains(r.Stderr, "release records are not shown") {
		t.Errorf("viewer app events: %s", r)
	}
	refused(t, h.as("vic", "env", "get", "web", "--show-values"), "viewer env get --show-values", "developer")
	refused(t, h.as("vic", "app", "deploy", "web", "--image", sampleV2), "viewer deploy", "developer")
	refused(t, h.as("vic", "shell", "web"), "viewer shell", "developer")
	if r := h.as("vic", "env", "get", "web"); !strings.Contains(r.Stderr, `you (vic) are a viewer`) {
		t.Errorf("the refusal does not say who the caller is: %s", r)
	}

	// A developer deploys and rolls back, but adds no domain.
	if r := h.as("dev", "app", "deploy", "web", "--image", sampleV2); r.Code != 0 {
		t.Fatalf("developer deploy: %s", r)
	}
	if r := h.as("dev", "release", "rollback", "web"); r.Code != 0 {
		t.Fatalf("developer rollback: %s", r)
	}
	rels := h.releases("web")
	if rels[0].Author != "dev" || rels[1].Author != "dev" {
		t.Errorf("the releases name %q and %q, want dev (the actor the API server authenticated)", rels[0].Author, rels[1].Author)
	}
	refused(t, h.as("dev", "domain", "add", "web", "web-dev.example.test"), "developer domain add", "operator")
	refused(t, h.as("dev", "app", "create", "other"), "developer app create", "admin")

	// An operator adds a domain.
	if r := h.as("ops", "domain", "add", "web", "web-ops.example.test"); r.Code != 0 {
		t.Fatalf("operator domain add: %s", r)
	}
	refused(t, h.as("ops", "app", "remove", "web", "--yes"), "operator app remove", "admin")

	// doctor says the caller's level and what it cannot run.
	var report struct {
		Level     string   `json:"level"`
		CannotRun []string `json:"cannotRun"`
	}
	r := h.as("dev", "doctor", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &report); err != nil {
		t.Fatalf("doctor -o json as dev: %v; %s", err, r)
	}
	if report.Level != "developer" || !contains(report.CannotRun, "tug domain add") || !contains(report.CannotRun, "tug access add") || contains(report.CannotRun, "tug app deploy") {
		t.Errorf("doctor as a developer: level %q, cannot run %q", report.Level, report.CannotRun)
	}
	if r := h.as("vic", "doctor"); !strings.Contains(r.Stdout, `you are a viewer in namespace "`+h.NS+`"`) || !strings.Contains(r.Stdout, "app deploy") {
		t.Errorf("doctor as a viewer: %s", r)
	}

	// Who has what: the four grants, the admin among them.
	levels := map[string]string{}
	for _, g := range h.grants("vic") {
		levels[g.Subject] = g.Level
	}
	for user, level := range map[string]string{"ada": "admin", "vic": "viewer", "dev": "developer", "ops": "operator"} {
		if levels[user] != level {
			t.Errorf("access list: %s is %q, want %s (%v)", user, levels[user], level, levels)
		}
	}
}

// Granting more than one holds: the API server's escalation check,
// explained. The granter is on no level of tug's (a hand-made Role that
// may write Roles and RoleBindings and read pods), so tug's own check
// lets it through and the API server refuses.
func TestAccessGrantAboveOwnIsRefused(t *testing.T) {
	h := New(t)
	ctx := context.Background()
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	}
	if _, err := h.Client.RbacV1().Roles(h.NS).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "grant-only"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.RbacV1().RoleBindings(h.NS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "grant-only"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "grant-only"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "gus"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once with the level's Role missing (gus may not make it), once with
	// it there (gus may not bind it).
	for _, first := range []bool{true, false} {
		r := h.as("gus", "access", "add", "eve", "--role", "developer")
		if r.Code != 1 || !strings.Contains(r.Stderr, "lets no one grant more than they hold") || !strings.Contains(r.Stderr, "nothing was changed") ||
			!strings.Contains(r.Stderr, "gus") {
			t.Errorf("escalation (role missing %v): %s", first, r)
		}
		if first {
			h.mustTug("access", "add", "someone", "--role", "developer")
		}
	}
	rbs, err := h.Client.RbacV1().RoleBindings(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range rbs.Items {
		for _, s := range rb.Subjects {
			if s.Name == "eve" {
				t.Errorf("eve was bound by %s", rb.Name)
			}
		}
	}
}

// A CI token with --ttl 10m deploys, its actor is on the release and in
// app events, and after 'access remove ci:NAME' the same token is refused.
func TestAccessCITokenDeploysAndIsRevoked(t *testing.T) {
	h := New(t)
	h.deployShop("web", 1)
	file := filepath.Join(t.TempDir(), "ci.kubeconfig")
	r := h.mustTug("access", "token", "deployer", "--role", "developer", "--ttl", "10m", "-f", file)
	if r.Stdout != "" {
		t.Errorf("with -f the kubeconfig went to stdout too: %q", r.Stdout)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig file: %v, %v", st, err)
	}
	ci := *h
	ci.Kubeconfig = file
	if r := ci.Tug("app", "deploy", "web", "--image", sampleV2); r.Code != 0 {
		t.Fatalf("deploy with the CI token: %s", r)
	}
	actor := "system:serviceaccount:" + h.NS + ":tug-ci-deployer"
	if rels := h.releases("web"); rels[0].Author != actor {
		t.Errorf("the CI deploy's release names %q, want %q", rels[0].Author, actor)
	}
	if r := h.mustTug("release", "list", "web"); !strings.Contains(r.Stdout, actor) {
		t.Errorf("release list does not show the actor:\n%s", r.Stdout)
	}
	if r := h.mustTug("app", "events", "web"); !strings.Contains(r.Stdout, "by "+actor) {
		t.Errorf("app events does not name the actor:\n%s", r.Stdout)
	}
	// The token's level holds: a developer's token adds no domain.
	refused(t, ci.Tug("domain", "add", "web", "ci.example.test"), "the CI token's domain add", "operator")

	// Printed to stdout without -f, and --rotate refuses the old token.
	r = h.mustTug("access", "token", "deployer", "--rotate", "--ttl", "10m")
	if !strings.Contains(r.Stdout, "token: ") || !strings.Contains(r.Stdout, "namespace: "+h.NS) {
		t.Errorf("the rotated kubeconfig is not on stdout:\n%s", r.Stdout)
	}
	// The API server caches a token's authentication for a few seconds
	// (10 s by default): the old token is refused within that.
	h.tokenRefused(&ci, "the token from before --rotate")
	rotated := filepath.Join(t.TempDir(), "rotated.kubeconfig")
	if err := os.WriteFile(rotated, []byte(h.mustTug("access", "token", "deployer", "--rotate", "--ttl", "10m").Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	ci.Kubeconfig = rotated
	if r := ci.Tug("app", "list"); r.Code != 0 {
		t.Fatalf("the rotated token: %s", r)
	}
	if r := h.mustTug("access", "remove", "ci:deployer", "--yes"); !strings.Contains(r.Stderr, "tug-ci-deployer") {
		t.Errorf("remove ci: %s", r)
	}
	// Refused at once (its bindings are gone), and soon not even
	// authenticated (its service account is gone).
	if r := ci.Tug("app", "list"); r.Code != 1 {
		t.Errorf("the token right after access remove ci:deployer: %s", r)
	}
	h.tokenRefused(&ci, "the token after access remove ci:deployer")
	if _, err := h.Client.CoreV1().ServiceAccounts(h.NS).Get(context.Background(), "tug-ci-deployer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CI service account is still there: %v", err)
	}
}

// A binding tug did not make is listed as such and left alone by access
// remove; bad input exits 2 with nothing changed.
func TestAccessLeavesOthersBindingsAlone(t *testing.T) {
	h := New(t)
	ctx := context.Background()
	if _, err := h.Client.RbacV1().RoleBindings(h.NS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hand-made"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "vic"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.mustTug("access", "add", "vic", "--role", "viewer")
	var mine, theirs bool
	for _, g := range h.grants("vic") {
		switch {
		case g.Subject == "vic" && g.Managed && g.Level == "viewer":
			mine = true
		case g.Subject == "vic" && !g.Managed && g.Binding == "hand-made" && g.Role == "ClusterRole/view":
			theirs = true
		}
	}
	if !mine || !theirs {
		t.Fatalf("access list: tug's grant %v, the hand-made binding %v; %+v", mine, theirs, h.grants("vic"))
	}
	if r := h.Tug("access", "remove", "vic"); r.Code == 0 {
		t.Errorf("remove without --yes and without a terminal: %s", r)
	}
	r := h.mustTug("access", "remove", "vic", "--yes")
	if !strings.Contains(r.Stderr, "left alone") || !strings.Contains(r.Stderr, "hand-made") {
		t.Errorf("remove does not say what it left: %s", r)
	}
	if _, err := h.Client.RbacV1().RoleBindings(h.NS).Get(ctx, "hand-made", metav1.GetOptions{}); err != nil {
		t.Errorf("the hand-made binding: %v", err)
	}
	// Only the hand-made binding is left: nothing of tug's to remove.
	if r := h.Tug("access", "remove", "vic", "--yes"); r.Code != 1 || !strings.Contains(r.Stderr, "which tug did not make") {
		t.Errorf("remove with only a hand-made binding: %s", r)
	}

	before := h.rbacState()
	for _, args := range [][]string{
		{"access", "add", "alice", "--role", "root"},
		{"access", "add", "group:", "--role", "viewer"},
		{"access", "add", "system:anonymous", "--role", "viewer"},
		{"access", "add", "sa:Not_A_Name", "--role", "viewer"},
		{"access", "add", "alice"},
		{"access", "token", "Bad_Name", "--role", "viewer"},
		{"access", "token", "ci1", "--role", "admin"},
		{"access", "add", "ci:ci1", "--role", "admin"},
		{"access", "token", "ci1", "--role", "viewer", "--ttl", "1m"},
		{"access", "token", "ci1", "--rotate"},
	} {
		if r := h.Tug(args...); r.Code != 2 {
			t.Errorf("%q: want exit 2; %s", args, r)
		}
	}
	// Not bad input, but nothing to remove: a failure, as a missing app.
	if r := h.Tug("access", "remove", "nobody", "--yes"); r.Code != 1 || !strings.Contains(r.Stderr, "has no access") {
		t.Errorf("remove of a subject with no access: want exit 1; %s", r)
	}
	if after := h.rbacState(); after != before {
		t.Errorf("bad input changed the namespace's access:\nbefore %s\nafter  %s", before, after)
	}
}

// rbacState is the namespace's Roles, RoleBindings and ServiceAccounts
// by name and version.
func (h *H) rbacState() string {
	h.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	roles, err := h.Client.RbacV1().Roles(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range roles.Items {
		b.WriteString("role/" + r.Name + "@" + r.ResourceVersion + " ")
	}
	rbs, err := h.Client.RbacV1().RoleBindings(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range rbs.Items {
		b.WriteString("rolebinding/" + r.Name + "@" + r.ResourceVersion + " ")
	}
	sas, err := h.Client.CoreV1().ServiceAccounts(h.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range sas.Items {
		b.WriteString("serviceaccount/" + s.Name + "@" + s.ResourceVersion + " ")
	}
	return b.String()
}

// tokenRefused waits until the API server rejects the credentials of
// as's kubeconfig.
func (h *H) tokenRefused(as *H, what string) {
	h.t.Helper()
	var last Result
	h.Eventually(30*time.Second, what+" is rejected", func() (bool, error) {
		last = as.Tug("app", "list")
		return last.Code == 1 && strings.Contains(last.Stderr, "rejected your credentials"), errors.New(last.String())
	})
}
