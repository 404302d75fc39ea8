package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
)

// TestEveryCommandDeclaresALevel: each command says, with itself, the
// access level it needs (atLevel); the levels' Roles, the refusal of a
// command to a lower level, doctor's "cannot run" list and
// docs/rbac/levels.md follow it. A new command without one fails here,
// saying what to add.
func TestEveryCommandDeclaresALevel(t *testing.T) {
	valid := map[string]bool{levelNone: true, levelClusterAdmin: true}
	for _, l := range access.Levels {
		valid[string(l)] = true
	}
	n := 0
	for _, c := range commandTree(t) {
		if !isLeaf(c) {
			if declaredLevel(c) != "" {
				t.Errorf("%q groups commands but declares level %q; declare it on its subcommands", c.CommandPath(), declaredLevel(c))
			}
			continue
		}
		n++
		switch l := declaredLevel(c); {
		case l == "":
			t.Errorf("%q declares no access level: add Annotations: atLevel(access.Viewer|Developer|Operator|Admin, ...) (or levelNone, levelClusterAdmin) to its cobra.Command", c.CommandPath())
		case !valid[l]:
			t.Errorf("%q declares level %q; want viewer, developer, operator, admin, none or cluster-admin", c.CommandPath(), l)
		}
	}
	if n < 80 {
		t.Errorf("only %d commands walked", n)
	}
}

// The levels the issue names for the commands people know (issue 38).
func TestLevelsOfTheNamedCommands(t *testing.T) {
	want := map[string]string{
		"tug app list": "viewer", "tug app info": "viewer", "tug logs": "viewer", "tug unit list": "viewer",
		"tug app deploy": "developer", "tug app scale": "developer", "tug app restart": "developer", "tug run": "developer",
		"tug shell": "developer", "tug env set": "developer", "tug env get": "developer", "tug release rollback": "developer",
		"tug domain add": "operator", "tug cert add": "operator", "tug app allow add": "operator", "tug app maintenance": "operator",
		"tug job add": "operator", "tug app create": "admin", "tug app remove": "admin", "tug access add": "admin",
		"tug access token": "admin", "tug access list": "viewer", "tug node remove": "cluster-admin", "tug version": "none",
	}
	for _, c := range commandTree(t) {
		if w, ok := want[c.CommandPath()]; ok {
			if got := declaredLevel(c); got != w {
				t.Errorf("%s: level %q, want %q", c.CommandPath(), got, w)
			}
			delete(want, c.CommandPath())
		}
	}
	for path := range want {
		t.Errorf("%s: no such command", path)
	}
}

// The guard wraps exactly the commands with a namespace level.
func TestGuardedCommandsRefuseWithTheLevel(t *testing.T) {
	e := &access.RefusedError{Command: "tug domain add", Need: access.Operator, Have: access.Developer, User: "alice", Namespace: "shop"}
	msg := e.Error()
	for _, w := range []string{"needs the operator level", `namespace "shop"`, "alice", "a developer", "tug access add alice --role operator -n shop", "tug access list"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
}

// Bad input to the access commands exits 2 before anything reaches the
// cluster.
func TestAccessBadInputAsksNothing(t *testing.T) {
	p := newPrinterFixture(t)
	for _, args := range [][]string{
		{"access", "add", "alice", "--role", "root"},
		{"access", "add", "alice"},
		{"access", "add", "group:", "--role", "viewer"},
		{"access", "remove", "a b", "--yes"},
		{"access", "token", "Bad_Name", "--role", "viewer"},
		{"access", "token", "ci", "--role", "viewer", "--ttl", "5m"},
		{"access", "token", "ci"},
	} {
		p.cs.ClearActions()
		r := p.run(t, false, args...)
		if r.code != 2 {
			t.Errorf("%q: exit %d, stderr %q; want 2", args, r.code, r.stderr)
		}
		if a := p.cs.Actions(); len(a) > 0 {
			t.Errorf("%q asked the cluster %d times", args, len(a))
		}
	}
}

// access add makes the level's Role and tug's binding; access list shows
// it (fake cluster: the logic, not RBAC).
func TestAccessAddThenList(t *testing.T) {
	p := newPrinterFixture(t)
	if r := p.run(t, false, "access", "add", "alice", "--role", "developer"); r.code != 0 || !strings.Contains(r.stderr, `alice is now developer in namespace "dev"`) {
		t.Fatalf("add: exit %d, stderr %q", r.code, r.stderr)
	}
	r := p.run(t, false, "access", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "alice\tdeveloper\tRole/tug-developer\t") || !strings.Contains(r.stdout, "\ttug\n") {
		t.Fatalf("list: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// asDeveloper is withCluster's fake, on which the caller holds tug's
// developer level (the markers of viewer and developer) and everything
// else in namespace "dev".
func asDeveloper(t *testing.T) (func(*cli.Factory), string) {
	t.Helper()
	setup, kubeconfig := withCluster(t, false)
	return func(f *cli.Factory) {
		setup(f)
		c, _ := f.KubeClientFunc()
		c.(*fake.Clientset).PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
			ssar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
			a := ssar.Spec.ResourceAttributes
			ssar.Status.Allowed = a.Namespace == "dev"
			if a.Group == "tug.dev" {
				ssar.Status.Allowed = a.Name == "viewer" || a.Name == "developer"
			}
			return true, ssar, nil
		})
	}, kubeconfig
}

// doctor says a developer's level and the operator and admin commands it
// cannot run; an operator command is refused before anything is written.
func TestDoctorSaysTheLevelAndTheGateRefuses(t *testing.T) {
	setup, kubeconfig := asDeveloper(t)
	r := execute(t, setup, "--kubeconfig", kubeconfig, "doctor", "-o", "json")
	var report struct {
		Level     string   `json:"level"`
		CannotRun []string `json:"cannotRun"`
		Checks    []struct{ Name, Message string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if report.Level != "developer" || !slices.Contains(report.CannotRun, "tug domain add") || !slices.Contains(report.CannotRun, "tug app create") ||
		slices.Contains(report.CannotRun, "tug app deploy") || slices.Contains(report.CannotRun, "tug node remove") {
		t.Errorf("level %q, cannot run %q", report.Level, report.CannotRun)
	}
	last := report.Checks[len(report.Checks)-1]
	if last.Name != "access level" || !strings.Contains(last.Message, `you are a developer in namespace "dev"; you cannot run the operator commands (`) {
		t.Errorf("check %+v", last)
	}

	var cs *fake.Clientset
	r = execute(t, func(f *cli.Factory) {
		setup(f)
		c, _ := f.KubeClientFunc()
		cs = c.(*fake.Clientset)
		cs.ClearActions()
	}, "--kubeconfig", kubeconfig, "domain", "add", "shop", "shop.example.com")
	if r.code != 1 || !strings.Contains(r.stderr, `tug domain add needs the operator level in namespace "dev"; you (bob) are a developer`) {
		t.Errorf("domain add as a developer: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "create" || a.GetResource().Resource != "selfsubjectaccessreviews" && a.GetResource().Resource != "selfsubjectreviews" {
			t.Errorf("the refused command asked %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// A viewer who also holds access of another kind (a ClusterRole edit bound
// in the namespace) is not refused a developer command by tug's check when
// RBAC lets them do what the developer level adds: RBAC decides. Without
// it, the viewer is refused before anything changes.
func TestGateLetsRBACDecideForOtherAccess(t *testing.T) {
	for _, edit := range []bool{true, false} {
		setup, kubeconfig := withCluster(t, false)
		var cs *fake.Clientset
		r := execute(t, func(f *cli.Factory) {
			setup(f)
			c, _ := f.KubeClientFunc()
			cs = c.(*fake.Clientset)
			cs.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
				ssar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
				a := ssar.Spec.ResourceAttributes
				ssar.Status.Allowed = a.Namespace == "dev" && a.Verb != "update" && a.Verb != "create" && a.Verb != "patch" && a.Verb != "delete"
				if a.Group == "tug.dev" {
					ssar.Status.Allowed = a.Name == "viewer"
				} else if edit {
					ssar.Status.Allowed = a.Namespace == "dev"
				}
				return true, ssar, nil
			})
		}, "--kubeconfig", kubeconfig, "app", "restart", "shop")
		refused := strings.Contains(r.stderr, "needs the developer level")
		if refused == edit {
			t.Errorf("viewer with edit %v: exit %d, stderr %q", edit, r.code, r.stderr)
		}
		asked := false
		for _, a := range cs.Actions() {
			if res := a.GetResource().Resource; res != "selfsubjectaccessreviews" && res != "selfsubjectreviews" {
				asked = true
			}
		}
		if asked != edit {
			t.Errorf("viewer with edit %v: the command went on to the cluster: %v", edit, asked)
		}
	}
}

// -f onto a file that exists (a CI kubeconfig left readable by all) leaves
// it mode 0600 holding the new token: written anew, not over the old one.
func TestAccessTokenFileIsPrivate(t *testing.T) {
	setup, kubeconfig := withCluster(t, false)
	file := filepath.Join(t.TempDir(), "ci.kubeconfig")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	r := execute(t, func(f *cli.Factory) {
		setup(f)
		c, _ := f.KubeClientFunc()
		c.(*fake.Clientset).PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "token" {
				return false, nil, nil
			}
			return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "secret-token", ExpirationTimestamp: metav1.Now()}}, nil
		})
	}, "--kubeconfig", kubeconfig, "access", "token", "deploy", "--role", "developer", "-f", file)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	if st.Mode().Perm() != 0o600 || !strings.Contains(string(data), "secret-token") {
		t.Errorf("mode %v, holds the token: %v", st.Mode().Perm(), strings.Contains(string(data), "secret-token"))
	}
}
