package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cli/clitest"
)

// withCluster writes a kubeconfig and swaps the client for a fake whose
// access reviews allow exactly what the user may do in namespace "dev".
func withCluster(t *testing.T, allowClusterWide bool) (func(*cli.Factory), string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
current-context: dev
clusters: [{name: local, cluster: {server: "https://127.0.0.1:6443"}}]
contexts: [{name: dev, context: {cluster: local, user: bob, namespace: dev}}]
users: [{name: bob, user: {token: abc}}]
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}})
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &apimachineryversion.Info{
		Major: "1", Minor: "37", GitVersion: "v1.37.1", Platform: "linux/amd64", GoVersion: "go1.26.8",
	}
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ssar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ssar.Status.Allowed = ssar.Spec.ResourceAttributes.Namespace == "dev" || allowClusterWide
		return true, ssar, nil
	})
	cs.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: "bob", Groups: []string{"devs", "system:authenticated"}},
		}}, nil
	})
	return func(f *cli.Factory) {
		f.KubeClientFunc = func() (kubernetes.Interface, error) { return cs, nil }
	}, path
}

func TestDoctorNamespaceUser(t *testing.T) {
	setup, kubeconfig := withCluster(t, false)
	isolate(t)
	ios, _, out, errOut := cli.TestIOStreams()
	ios.SetStdoutTTY(true)
	ios.SetColorDisabled(true)
	f := cli.NewFactory(ios, "tug")
	setup(f)
	// A developer: every app command works, the admin ones are not
	// theirs, and that is no failure.
	r := executeWith(f, out, errOut, "--kubeconfig", kubeconfig, "doctor")
	if r.code != 0 {
		t.Errorf("exit %d, want 0 for a developer with a namespace Role; stderr %q", r.code, r.stderr)
	}
	clitest.Golden(t, "doctor-namespace-user", []byte(r.stdout))

	// --all: the admin commands count.
	out.Reset()
	errOut.Reset()
	r = executeWith(f, out, errOut, "--kubeconfig", kubeconfig, "doctor", "--all")
	if r.code != 1 {
		t.Errorf("doctor --all: exit %d, want 1 when permissions are missing", r.code)
	}
	if !strings.HasSuffix(r.stderr, "error: missing permissions for node, pool, node-container; ask a cluster admin (docs/rbac has the roles to grant)\n") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestDoctorAdminPiped(t *testing.T) {
	setup, kubeconfig := withCluster(t, true)
	r := execute(t, setup, "--kubeconfig", kubeconfig, "doctor", "-n", "dev")
	if r.code != 0 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	clitest.Golden(t, "doctor-admin-piped", []byte(r.stdout))
	// Progress goes to stderr as plain lines when stderr is not a terminal.
	if !strings.Contains(r.stderr, " reviewing permissions\n") || !strings.Contains(r.stderr, " all checks passed\n") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestDoctorJSON(t *testing.T) {
	setup, kubeconfig := withCluster(t, false)
	r := execute(t, setup, "--kubeconfig", kubeconfig, "doctor", "--all", "-o", "json")
	if r.code != 1 {
		t.Errorf("exit %d", r.code)
	}
	var report struct {
		Context, Server, Namespace, User string
		OK                               bool
		Groups                           []struct {
			Name    string
			Status  string
			Missing []struct{ Verb, Group, Resource, Subresource, Scope string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if report.OK || report.User != "bob" || report.Namespace != "dev" || report.Context != "dev" {
		t.Errorf("report %+v", report)
	}
	for _, g := range report.Groups {
		if g.Name == "node" {
			if g.Status != "failed" || len(g.Missing) != 10 || g.Missing[0].Scope != "cluster" {
				t.Errorf("node group %+v", g)
			}
		}
	}
}
