package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/metrics/metricstest"
)

type fakeEnv struct {
	client    kubernetes.Interface
	configErr error
}

func (e fakeEnv) ContextName() (string, error) { return "dev-ctx", e.configErr }
func (e fakeEnv) Namespace() (string, error)   { return "dev", e.configErr }
func (e fakeEnv) RESTConfig() (*rest.Config, error) {
	return &rest.Config{Host: "https://127.0.0.1:6443"}, e.configErr
}
func (e fakeEnv) KubeClient() (kubernetes.Interface, error) { return e.client, e.configErr }

// fakeCluster answers access reviews with allow, records what was asked,
// and says the user is bob.
type fakeCluster struct {
	*fake.Clientset
	mu    sync.Mutex
	asked []authorizationv1.ResourceAttributes
}

func newFakeCluster(serverMinor string, allow func(authorizationv1.ResourceAttributes) (bool, error)) *fakeCluster {
	c := &fakeCluster{Clientset: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}})}
	c.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &apimachineryversion.Info{
		Major: "1", Minor: serverMinor, GitVersion: "v1." + serverMinor + ".4",
	}
	c.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ssar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		attrs := *ssar.Spec.ResourceAttributes
		c.mu.Lock()
		c.asked = append(c.asked, attrs)
		c.mu.Unlock()
		ok, err := allow(attrs)
		if err != nil {
			return true, nil, err
		}
		out := ssar.DeepCopy()
		out.Status.Allowed = ok
		return true, out, nil
	})
	c.PrependReactor("create", "selfsubjectreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}},
		}}, nil
	})
	return c
}

func allowAll(authorizationv1.ResourceAttributes) (bool, error) { return true, nil }

// namespaceOnly is a user bound to a Role in "dev" and nothing else.
func namespaceOnly(a authorizationv1.ResourceAttributes) (bool, error) {
	return a.Namespace == "dev", nil
}

func uniquePermissions() int {
	seen := map[Permission]bool{}
	for _, g := range CommandGroups() {
		for _, p := range g.Permissions {
			seen[p] = true
		}
	}
	return len(seen)
}

func TestAllAllowed(t *testing.T) {
	c := newFakeCluster("37", allowAll)
	r, err := Run(context.Background(), fakeEnv{client: metricstest.New(c, servedMetrics)}, Options{ClientMinor: 37})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Problems() != 0 {
		t.Fatalf("report not OK: %+v", r)
	}
	if r.User != "bob" || r.ServerVersion != "v1.37.4" || r.Context != "dev-ctx" || r.Namespace != "dev" || r.Server != "https://127.0.0.1:6443" {
		t.Errorf("report header wrong: %+v", r)
	}
	if len(r.Groups) != len(CommandGroups()) {
		t.Errorf("%d groups reported, want %d", len(r.Groups), len(CommandGroups()))
	}
	if got, want := len(c.asked), uniquePermissions(); got != want {
		t.Errorf("%d access reviews, want one per distinct permission (%d)", got, want)
	}
	var names []string
	for _, ch := range r.Checks {
		names = append(names, ch.Name)
		if ch.Status != StatusOK {
			t.Errorf("check %s: %s %s", ch.Name, ch.Status, ch.Message)
		}
	}
	if want := []string{"kubeconfig", "cluster", "version skew", "identity", "dockerfile builds", "metrics API", "gateway"}; !reflect.DeepEqual(names, want) {
		t.Errorf("checks %q, want %q", names, want)
	}
}

func TestNamespaceOnlyUserMissesExactlyTheClusterPermissions(t *testing.T) {
	c := newFakeCluster("37", namespaceOnly)
	// A developer: the admin groups are not available, and that is fine.
	dev, err := Run(context.Background(), fakeEnv{client: newFakeCluster("37", namespaceOnly)}, Options{ClientMinor: 37})
	if err != nil {
		t.Fatal(err)
	}
	if !dev.OK {
		t.Fatalf("a namespace user's report is not OK: %+v", dev.Groups)
	}
	for _, g := range dev.Groups {
		if want := map[bool]Status{true: StatusUnavailable, false: StatusOK}[g.Admin]; g.Status != want {
			t.Errorf("group %s: %s, want %s", g.Name, g.Status, want)
		}
	}
	// --all: the same missing permissions are problems.
	r, err := Run(context.Background(), fakeEnv{client: c}, Options{ClientMinor: 37, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK {
		t.Fatal("report OK with --all although node permissions are missing")
	}
	failed := map[string]GroupResult{}
	for _, g := range r.Groups {
		if g.Status != StatusOK {
			failed[g.Name] = g
		}
	}
	if len(failed) != 3 || failed["node"].Name == "" || failed["pool"].Name == "" || failed["node-container"].Name == "" {
		t.Fatalf("failed groups %v, want node, pool and node-container", failed)
	}
	if got, want := MissingSummary(failed["pool"].Missing), "get,list,update,patch nodes (cluster); list deployments.apps (all namespaces)"; got != want {
		t.Errorf("pool missing %q, want %q", got, want)
	}
	// The lock and the scale are app-namespace permissions: no app
	// namespace can be found here, so they are reviewed in the namespace,
	// where this user holds them.
	want := "get,list,create,update,patch,delete nodes (cluster); get,list,watch pods (all namespaces); " +
		"create pods/eviction (all namespaces)"
	if got := MissingSummary(failed["node"].Missing); got != want {
		t.Errorf("node missing\n %q\nwant\n %q", got, want)
	}
	// Namespaced permissions are reviewed in the namespace, the others
	// across the cluster.
	clusterScoped := map[string]bool{}
	for _, g := range []string{"node", "pool", "node-container"} {
		for _, p := range failed[g].Missing {
			clusterScoped[p.Resource+"/"+p.Subresource+"/"+p.Verb] = true
		}
	}
	for _, a := range c.asked {
		clusterWide := a.Resource == "nodes" || a.Resource == "daemonsets" || a.Subresource == "eviction" ||
			(a.Namespace == "" && clusterScoped[a.Resource+"/"+a.Subresource+"/"+a.Verb])
		if clusterWide != (a.Namespace == "") {
			t.Errorf("review %+v has the wrong scope", a)
		}
	}
}

func TestKubeconfigFailureStopsEarly(t *testing.T) {
	r, err := Run(context.Background(), fakeEnv{configErr: errors.New("no kubeconfig found; set KUBECONFIG")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || len(r.Groups) != 0 || len(r.Checks) != 1 || r.Checks[0].Status != StatusFailed {
		t.Errorf("got %+v", r)
	}
	if !strings.Contains(r.Checks[0].Message, "no kubeconfig") {
		t.Errorf("message %q", r.Checks[0].Message)
	}
}

func TestUnreachableCluster(t *testing.T) {
	c := newFakeCluster("37", allowAll)
	c.Discovery().(*fakediscovery.FakeDiscovery).PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	r, err := Run(context.Background(), fakeEnv{client: c}, Options{ClientMinor: 37})
	if err != nil {
		t.Fatal(err)
	}
	last := r.Checks[len(r.Checks)-1]
	if r.OK || last.Name != "cluster" || last.Status != StatusFailed || len(c.asked) != 0 {
		t.Errorf("got %+v after %d reviews", r, len(c.asked))
	}
}

func TestReviewErrorsAreReported(t *testing.T) {
	c := newFakeCluster("37", func(a authorizationv1.ResourceAttributes) (bool, error) {
		if a.Resource == "leases" {
			return false, errors.New("webhook timed out")
		}
		return true, nil
	})
	r, err := Run(context.Background(), fakeEnv{client: c}, Options{ClientMinor: 37})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range r.Groups {
		if g.Name == "deploy lock" || g.Name == "node" { // node removal takes apps' deploy locks
			if g.Status != StatusError || len(g.Errors) != 5 || !strings.Contains(g.Errors[0], "webhook timed out") {
				t.Errorf("%s: %+v", g.Name, g)
			}
		} else if g.Status != StatusOK {
			t.Errorf("%s: %+v", g.Name, g)
		}
	}
	if r.OK {
		t.Error("OK despite unanswered reviews")
	}
}

func TestSkewCheck(t *testing.T) {
	for _, c := range []struct {
		client int
		server string
		want   Status
	}{
		{37, "37", StatusOK}, {37, "36", StatusOK}, {37, "38+", StatusOK},
		{37, "34", StatusWarning}, {37, "39", StatusWarning}, {37, "x", StatusWarning}, {0, "34", StatusWarning},
	} {
		if got := skewCheck(c.client, c.server); got.Status != c.want {
			t.Errorf("client 1.%d server %q: %s (%s), want %s", c.client, c.server, got.Status, got.Message, c.want)
		}
	}
}

func TestSkewIsAWarningNotAProblem(t *testing.T) {
	r, err := Run(context.Background(), fakeEnv{client: newFakeCluster("34", allowAll)}, Options{ClientMinor: 37})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Checks[2].Status != StatusWarning {
		t.Errorf("skew: OK=%v check=%+v", r.OK, r.Checks[2])
	}
}

func TestClientGoMinorMatchesGoMod(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go v0\.(\d+)\.`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("k8s.io/client-go not found in go.mod")
	}
	if want, _ := strconv.Atoi(string(m[1])); clientGoMinor != want {
		t.Errorf("clientGoMinor = %d but go.mod has client-go v0.%d; update it", clientGoMinor, want)
	}
}

func TestPermissionTableIsWellFormed(t *testing.T) {
	names := map[string]bool{}
	verbs := map[string]bool{"get": true, "list": true, "watch": true, "create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}
	for _, g := range CommandGroups() {
		if names[g.Name] {
			t.Errorf("group %q twice", g.Name)
		}
		names[g.Name] = true
		if len(g.Permissions) == 0 || g.Description == "" {
			t.Errorf("group %q has no permissions or description", g.Name)
		}
		for _, p := range g.Permissions {
			if !verbs[p.Verb] || p.Resource == "" || strings.ContainsAny(p.Resource, "./") {
				t.Errorf("group %q: bad permission %+v", g.Name, p)
			}
		}
	}
}

func TestRolesCoverTheTable(t *testing.T) {
	granted := map[string]bool{}
	for _, rule := range Role("r", "").Rules {
		for _, v := range rule.Verbs {
			granted[fmt.Sprintf("%s %s %s ns", v, rule.APIGroups[0], rule.Resources[0])] = true
		}
	}
	for _, rule := range ClusterRole("c").Rules {
		for _, v := range rule.Verbs {
			granted[fmt.Sprintf("%s %s %s cluster", v, rule.APIGroups[0], rule.Resources[0])] = true
		}
	}
	for _, rule := range AppsClusterRole("a").Rules {
		for _, v := range rule.Verbs {
			granted[fmt.Sprintf("%s %s %s apps", v, rule.APIGroups[0], rule.Resources[0])] = true
		}
	}
	for _, g := range CommandGroups() {
		for _, p := range g.Permissions {
			res, where := p.Resource, "cluster"
			if p.Subresource != "" {
				res += "/" + p.Subresource
			}
			switch p.Scope {
			case ScopeNamespace:
				where = "ns"
			case ScopeAppNamespaces:
				where = "apps"
			}
			if key := fmt.Sprintf("%s %s %s %s", p.Verb, p.Group, res, where); !granted[key] {
				t.Errorf("%s: %s is in no generated role", g.Name, p)
			}
		}
	}
}

// The developer Role grants what tug's calls use and no more: remove lists
// and deletes one by one (no deletecollection), and watch is granted only
// on the kinds tug watches (grep .Watch( and kube.WaitPods; app events -f
// watches Events).
func TestRoleGrantsOnlyTheVerbsTugUses(t *testing.T) {
	watched := map[string]bool{"pods": true, "deployments": true, "leases": true, "httproutes": true, "events": true}
	listDelete := map[string]bool{}
	for _, r := range Role("tug-developer", "dev").Rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				switch {
				case v == "deletecollection":
					t.Errorf("the Role grants deletecollection on %s; tug never uses it", res)
				case v == "watch" && !watched[res]:
					t.Errorf("the Role grants watch on %s, which tug never watches", res)
				}
			}
			if slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "delete") {
				listDelete[res] = true
			}
		}
	}
	// what app remove lists by label and deletes
	for _, res := range []string{"horizontalpodautoscalers", "deployments", "ingresses", "networkpolicies", "services", "pods", "secrets", "configmaps"} {
		if !listDelete[res] {
			t.Errorf("the Role lacks list and delete on %s, which app remove needs", res)
		}
	}
}

func TestDockerfileBuildsCheck(t *testing.T) {
	for level, want := range map[string]Status{"": StatusOK, "privileged": StatusOK, "baseline": StatusWarning, "restricted": StatusWarning} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}
		if level != "" {
			ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": level}
		}
		c := dockerfileBuildsCheck(context.Background(), fake.NewClientset(ns), "dev")
		if c.Status != want || c.Message == "" {
			t.Errorf("level %q: %+v, want %s", level, c, want)
		}
	}
	if c := dockerfileBuildsCheck(context.Background(), fake.NewClientset(), "dev"); c.Status != StatusWarning || !strings.Contains(c.Message, "cannot read") {
		t.Errorf("unreadable namespace: %+v", c)
	}
}

// doctor's deploy group checks what deploy does to the kinds every app
// has; an Optional kind (a CRD a cluster may not serve: cert-manager's,
// Traefik's, the Gateway API's, and CronJobs for older Roles) is checked by
// its feature's group, so a cluster without one is not told deploy fails.
// The developer Role still grants every kind.
func TestDeployGroupChecksOnlyTheRequiredKinds(t *testing.T) {
	optional := map[string]bool{}
	for _, k := range deploy.Kinds() {
		if k.Optional {
			optional[k.ResourceName()] = true
		}
	}
	if len(optional) == 0 {
		t.Fatal("deploy.Kinds has no Optional kind: the test checks nothing")
	}
	for _, g := range CommandGroups() {
		if g.Name != "deploy" {
			continue
		}
		for _, p := range g.Permissions {
			if optional[p.Resource] || optional[p.Resource+"."+p.Group] {
				t.Errorf("the deploy group requires %s on %s (%s), an Optional kind", p.Verb, p.Resource, p.Group)
			}
		}
	}
	role := Role("tug-developer", "dev")
	for _, k := range deploy.Kinds() {
		granted := map[string]bool{}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, k.GVR.Group) && slices.Contains(r.Resources, k.GVR.Resource) {
				for _, v := range r.Verbs {
					granted[v] = true
				}
			}
		}
		for _, v := range []string{"get", "list", "create", "patch", "delete"} {
			if !granted[v] {
				t.Errorf("the developer Role does not grant %s on %s", v, k.GVR.Resource)
			}
		}
	}
}
