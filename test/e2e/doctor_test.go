package e2e

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

func TestVersionShowsTheServer(t *testing.T) {
	h := New(t)
	var v struct {
		Client struct{ Version string }  `json:"client"`
		Server *struct{ Version string } `json:"server"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("version", "-o", "json").Stdout), &v); err != nil {
		t.Fatal(err)
	}
	// The cluster's own answer, whichever Kubernetes version it runs (K8S_VERSION).
	want, err := h.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.Server == nil || v.Server.Version != want.GitVersion || v.Client.Version == "" {
		t.Fatalf("version: %+v, want server %s", v, want.GitVersion)
	}
}

type doctorReport struct {
	OK     bool `json:"ok"`
	Checks []struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"checks"`
	Groups []struct {
		Name    string            `json:"name"`
		Status  string            `json:"status"`
		Missing []json.RawMessage `json:"missing"`
	} `json:"groups"`
}

func TestDoctorAsAdminPasses(t *testing.T) {
	h := New(t)
	r := h.Tug("doctor", "-o", "json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, r)
	}
	if r.Code != 0 || !rep.OK {
		t.Fatalf("doctor as admin: %s", r)
	}
}

// doctor checks the Gateway that the cluster settings give the namespace's
// apps: the local cluster's own passes; a pool's setting that names a
// Gateway that does not exist, or one that no controller accepted, fails
// with a line that says so and what to do. The pools are this test's own,
// so no other test's apps see their settings, and the settings are put
// back however the test ends.
func TestDoctorChecksTheGateway(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	gatewayCheck := func(rep doctorReport, has string) (status, message string) {
		t.Helper()
		for _, c := range rep.Checks {
			if c.Name == "gateway" && strings.Contains(c.Message, has) {
				return c.Status, c.Message
			}
		}
		t.Fatalf("no gateway check says %q: %+v", has, rep.Checks)
		return "", ""
	}
	doctor := func() (Result, doctorReport) {
		t.Helper()
		res := h.Tug("doctor", "-o", "json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
			t.Fatalf("doctor -o json: %v\n%s", err, res)
		}
		return res, rep
	}

	res, rep := doctor()
	local := "Gateway " + r.gatewayNS + "/" + r.gateway + " is accepted and programmed and admits HTTPRoutes from namespace " + h.NS
	if st, msg := gatewayCheck(rep, "Gateway "); res.Code != 0 || !rep.OK || st != "ok" || !strings.Contains(msg, local) || !strings.Contains(msg, "app URLs under "+r.appsDomain) {
		t.Fatalf("doctor with the local cluster's Gateway: %s %q\n%s", st, msg, res)
	}

	// A Gateway of a class no controller serves, in the test's namespace.
	unclaimed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "unclaimed"},
		"spec": map[string]any{"gatewayClassName": "tug-e2e-no-controller",
			"listeners": []any{map[string]any{"name": "http", "protocol": "HTTP", "port": int64(80)}}},
	}}
	if _, err := dynamic.NewForConfigOrDie(h.Config).Resource(gateways).Namespace(h.NS).Create(context.Background(), unclaimed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	missingPool, unclaimedPool := "gone-"+h.NS[len(h.NS)-6:], "unclaimed-"+h.NS[len(h.NS)-6:]
	t.Cleanup(func() {
		for _, p := range []string{missingPool, unclaimedPool} {
			if res := h.Tug("cluster", "settings", "unset", "--pool", p, "gateway"); res.Code != 0 {
				t.Errorf("putting the cluster settings back: %s", res)
			}
		}
	})
	h.mustTug("cluster", "settings", "set", "--pool", missingPool, "gateway="+r.gatewayNS+"/no-such-gateway")
	h.mustTug("cluster", "settings", "set", "--pool", unclaimedPool, "gateway="+h.NS+"/unclaimed")
	h.mustTug("app", "create", "lost", "--pool", missingPool)
	h.mustTug("app", "create", "waiting", "--pool", unclaimedPool)

	res, rep = doctor()
	if res.Code != 1 || rep.OK {
		t.Fatalf("doctor with a pool's Gateway missing: want exit 1\n%s", res)
	}
	if st, msg := gatewayCheck(rep, "Gateway "+r.gatewayNS+"/"+r.gateway); st != "ok" {
		t.Errorf("the cluster's Gateway, for apps without a pool: %s %q", st, msg)
	}
	st, msg := gatewayCheck(rep, "no-such-gateway")
	if want := "Gateway " + r.gatewayNS + "/no-such-gateway (for pool " + missingPool + "), which the cluster settings name, does not exist"; st != "failed" || !strings.Contains(msg, want) ||
		!strings.Contains(msg, "tug cluster settings set --pool "+missingPool+" gateway=NAMESPACE/NAME") {
		t.Errorf("the missing Gateway: %s %q, want %q and the command that fixes it", st, msg, want)
	}
	// the first failed check is the command's error line
	if !strings.Contains(res.Stderr, "error: "+msg) {
		t.Errorf("stderr does not end with the failed check's line %q:\n%s", msg, res.Stderr)
	}
	if st, msg := gatewayCheck(rep, "/unclaimed"); st != "failed" || !strings.Contains(msg, "no controller has accepted Gateway "+h.NS+"/unclaimed (for pool "+unclaimedPool+")") ||
		!strings.Contains(msg, `GatewayClass "tug-e2e-no-controller"`) {
		t.Errorf("the Gateway no controller accepted: %s %q", st, msg)
	}
}

// A user bound only to the generated developer Role in one namespace may use
// every app command there, and doctor names exactly the cluster-wide groups
// (nodes, pools, node containers) it cannot use.
func TestDoctorAsNamespaceUserNamesMissingNodePermissions(t *testing.T) {
	h := New(t)
	devConfig := adminRoleKubeconfig(t, h)
	// A developer gets exit 0: the admin groups are "unavailable", not
	// problems.
	r := h.TugRun(Run{Args: []string{"doctor", "-o", "json"}, Env: []string{"KUBECONFIG=" + devConfig}})
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, r)
	}
	if r.Code != 0 || !rep.OK {
		t.Fatalf("doctor for a developer with the documented Role should pass: %s", r)
	}
	var unavailable []string
	for _, g := range rep.Groups {
		if g.Status == "unavailable" {
			unavailable = append(unavailable, g.Name)
		}
	}
	sort.Strings(unavailable)
	if strings.Join(unavailable, ",") != "node,node-container,pool" {
		t.Fatalf("unavailable groups = %v, want exactly node, node-container and pool\n%s", unavailable, r.Stdout)
	}
	// --all asks about everything: the same groups are missing permissions.
	r = h.TugRun(Run{Args: []string{"doctor", "--all", "-o", "json"}, Env: []string{"KUBECONFIG=" + devConfig}})
	rep = doctorReport{}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("doctor --all -o json: %v\n%s", err, r)
	}
	if r.Code != 1 || rep.OK {
		t.Fatalf("doctor --all for a namespace user should fail: %s", r)
	}
	var missing []string
	for _, g := range rep.Groups {
		if len(g.Missing) > 0 {
			missing = append(missing, g.Name)
		}
	}
	sort.Strings(missing)
	if strings.Join(missing, ",") != "node,node-container,pool" {
		t.Fatalf("groups with missing permissions = %v, want exactly node, node-container and pool\n%s", missing, r.Stdout)
	}
	// and the app commands really work for that user
	run := func(args ...string) Result {
		return h.TugRun(Run{Args: args, Env: []string{"KUBECONFIG=" + devConfig}})
	}
	if r := run("app", "create", "mine"); r.Code != 0 {
		t.Fatalf("app create as the namespace user: %s", r)
	}
	if r := run("app", "deploy", "mine", "--image", sampleV1); r.Code != 0 {
		t.Fatalf("app deploy as the namespace user: %s", r)
	}
	// jobs too: a CronJob of the release, a run now, and their removal
	if r := run("job", "add", "mine", "hello", "--schedule", "@yearly", "--", "echo", "hello-from-job"); r.Code != 0 {
		t.Fatalf("job add as the namespace user: %s", r)
	}
	if r := run("job", "run", "mine", "hello"); r.Code != 0 || !strings.Contains(r.Stdout, "hello-from-job") {
		t.Fatalf("job run as the namespace user: %s", r)
	}
	if r := run("app", "remove", "mine", "--yes"); r.Code != 0 {
		t.Fatalf("app remove of an app with a job as the namespace user: %s", r)
	}
	// outside its namespace, a 403 says which permission is missing
	r = run("app", "list", "-n", "default")
	if r.Code != 1 || !strings.Contains(r.Stderr, "cannot list configmaps") || !strings.Contains(r.Stderr, `"default"`) {
		t.Fatalf("a forbidden list should name the verb, resource and namespace: %s", r)
	}
	_ = os.Remove(devConfig)
}
