package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/progress"
)

// writeKubeconfig writes a kubeconfig with the given contexts, all pointing
// at a server nobody answers on (these tests never reach it).
func writeKubeconfig(t *testing.T, contexts ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:1}\nusers:\n- name: u\n  user: {token: x}\ncontexts:\n")
	for _, c := range contexts {
		b.WriteString("- name: " + c + "\n  context: {cluster: c, user: u, namespace: ns-" + c + "}\n")
	}
	if len(contexts) > 0 {
		b.WriteString("current-context: " + contexts[0] + "\n")
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNodeCommandsRefuseBadInputBeforeContactingTheCluster(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "tug.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "update", "n1", "--enable", "--disable"}, "--enable and --disable contradict each other"},
		{[]string{"node", "update", "n1"}, "nothing to update"},
		{[]string{"node", "update", "n1", "--metadata", "=v"}, "invalid metadata"},
		{[]string{"node", "add", "n1"}, "missing --pool"},
		{[]string{"node", "add", "n1", "--pool", "a b"}, `invalid pool "a b"`},
		{[]string{"node", "add", "bad_host", "--pool", "p"}, "invalid node address"},
		{[]string{"node", "add", "n1", "--pool", "p", "--metadata", "k="}, "has no value"},
		{[]string{"node", "list", "--pool", "a/b"}, "invalid pool"},
		{[]string{"node", "list", "--cluster", "nope"}, `cluster "nope" not found`},
		{[]string{"node", "remove", "n1", "--no-rebalance", "--force"}, "--no-rebalance moves nothing"},
		{[]string{"node", "remove", "n1", "--timeout", "-1s"}, "must not be negative"},
		{[]string{"node-container", "add", "agent"}, "missing --image"},
		{[]string{"node-container", "add", "Agent", "--image", "x"}, "invalid node container name"},
		{[]string{"node-container", "add", "agent", "--image", "x", "--env", "1A=b"}, "invalid variable name"},
		{[]string{"cluster", "add", "c1"}, "missing --context"},
		{[]string{"cluster", "add", "C_1", "--context", "x"}, "invalid cluster name"},
		{[]string{"cluster", "remove", "c1"}, `cluster "c1" not found`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Setenv("TUG_CONFIG", cfg)
			r := execute(t, nil, c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, c.want)
			}
		})
	}
	if _, err := os.Stat(cfg); !os.IsNotExist(err) {
		t.Errorf("refused commands wrote tug's config (%v)", err)
	}
}

func TestClusterAddListRemove(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "tug", "config.yaml")
	t.Setenv("TUG_CONFIG", cfg)
	kc := writeKubeconfig(t, "prod", "gpu")
	run := func(args ...string) result {
		t.Helper()
		t.Setenv("TUG_CONFIG", cfg)
		return execute(t, nil, append([]string{"--kubeconfig", kc}, args...)...)
	}

	if r := run("cluster", "add", "x", "--context", "nope"); r.code != 2 || !strings.Contains(r.stderr, `context "nope" not found in the kubeconfig`) {
		t.Fatalf("unknown context: %+v", r)
	}
	if r := run("cluster", "add", "prod", "--context", "prod", "--pool", "web,api", "--default"); r.code != 0 || !strings.Contains(r.stdout, `cluster "prod" added`) {
		t.Fatalf("add: %+v", r)
	}
	if r := run("cluster", "add", "gpu", "--context", "gpu", "--pool", "web"); r.code != 2 || !strings.Contains(r.stderr, `pool "web" already belongs to cluster "prod"`) {
		t.Fatalf("a pool in two clusters: %+v", r)
	}
	if r := run("cluster", "add", "gpu", "--context", "gpu", "--pool", "gpu"); r.code != 0 {
		t.Fatalf("add gpu: %+v", r)
	}
	if r := run("cluster", "add", "gpu", "--context", "gpu", "--pool", "gpu,ml"); r.code != 0 || !strings.Contains(r.stdout, "updated") {
		t.Fatalf("re-add updates: %+v", r)
	}
	r := run("cluster", "list", "-o", "json")
	var list []struct {
		Name, Context string
		Pools         []string
		Default       bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("%v: %+v", err, r)
	}
	if len(list) != 2 || list[0].Name != "gpu" || strings.Join(list[0].Pools, ",") != "gpu,ml" || !list[1].Default || strings.Join(list[1].Pools, ",") != "api,web" {
		t.Fatalf("cluster list: %+v", list)
	}
	if r := run("cluster", "list"); !strings.Contains(r.stdout, "NAME\tCONTEXT\tPOOLS\tDEFAULT\ngpu\tgpu\tgpu,ml\t\nprod\tprod\tapi,web\tyes\n") {
		t.Fatalf("cluster list table: %q", r.stdout)
	}
	if r := run("cluster", "remove", "gpu"); r.code != 0 || !strings.Contains(r.stdout, `now go to the default cluster "prod"`) {
		t.Fatalf("remove: %+v", r)
	}
	if r := run("cluster", "remove", "gpu"); r.code != 2 {
		t.Fatalf("remove twice: %+v", r)
	}
	b, _ := os.ReadFile(cfg)
	if strings.Contains(string(b), "gpu") || !strings.Contains(string(b), "prod") {
		t.Fatalf("config file:\n%s", b)
	}
}

func TestNewNodeCmds(t *testing.T) {
	l, err := parseCmd(t, newNodeListCmd, "--pool", "web", "--cluster", "edge", "-o", "json")
	if err != nil || l == nil || l.Pool != "web" || l.Cluster != "edge" || l.Output.Format != cli.OutputJSON {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
	i, err := parseCmd(t, newNodeInfoCmd, "10.0.0.7", "--cluster", "edge")
	if err != nil || i == nil || i.Node != "10.0.0.7" || i.Cluster != "edge" {
		t.Fatalf("info: error %v, options %+v", err, i)
	}
	i, err = parseCmd(t, newNodeInfoCmd, "bad_node")
	wantParseError(t, i, err, "bad_node")
	a, err := parseCmd(t, newNodeAddCmd, "node7", "--pool", "web", "--iaas-id", "i-1", "--metadata", "rack=r12")
	if err != nil || a == nil || a.Address != "node7" || a.Pool != "web" || a.IaaSID != "i-1" || a.AddOptions.Metadata["rack"] != "r12" {
		t.Fatalf("add: error %v, options %+v", err, a)
	}
	u, err := parseCmd(t, newNodeUpdateCmd, "node7", "--disable", "--metadata", "old=")
	if err != nil || u == nil || u.Node != "node7" || !u.Disable {
		t.Fatalf("update: error %v, options %+v", err, u)
	}
	u, err = parseCmd(t, newNodeUpdateCmd, "bad_node", "--enable")
	wantParseError(t, u, err, "bad_node")
	r, err := parseCmd(t, newNodeRemoveCmd, "node7", "--dry-run", "--timeout", "10m")
	if err != nil || r == nil || r.Node != "node7" || !r.DryRun || r.Timeout != 10*time.Minute {
		t.Fatalf("remove: error %v, options %+v", err, r)
	}
	r, err = parseCmd(t, newNodeRemoveCmd, "bad_node")
	wantParseError(t, r, err, "bad_node")
	p, err := parseCmd(t, newPoolListCmd, "--cluster", "edge")
	if err != nil || p == nil || p.Cluster != "edge" {
		t.Fatalf("pool list: error %v, options %+v", err, p)
	}
}

// node add registers a node in a pool, list and pool list show it, update
// disables it, remove --dry-run says what would happen and changes nothing.
func TestRunNodeCommands(t *testing.T) {
	cs := fake.NewClientset()
	target := cluster.Target{Cluster: cluster.Cluster{Name: "local", Context: "dev"}, Implicit: true, Client: cs, Namespace: "dev"}
	targets := func(string) ([]cluster.Target, error) { return []cluster.Target{target}, nil }
	ctx := context.Background()
	ios, _, out, _ := cli.TestIOStreams()
	add := &nodeAddOptions{IO: ios, PoolTarget: func(string, string) (cluster.Target, error) { return target, nil }, Output: cli.OutputTable}
	add.Address, add.Pool = "node7", "web"
	if err := runNodeAdd(ctx, add); err != nil || !strings.Contains(out.String(), `node "node7" registered in pool "web"`) {
		t.Fatalf("add: %v, stdout %q", err, out)
	}
	out.Reset()
	list := &nodeListOptions{IO: ios, Targets: targets, Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runNodeList(ctx, list); err != nil || !strings.Contains(out.String(), "node7\t") || !strings.Contains(out.String(), "\tweb\t") {
		t.Errorf("list: %v\n%s", err, out)
	}
	out.Reset()
	pools := &poolListOptions{IO: ios, Targets: targets, CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runPoolList(ctx, pools); err != nil || !strings.Contains(out.String(), "web\tlocal\tnode7\t") {
		t.Errorf("pool list: %v\n%s", err, out)
	}
	out.Reset()
	upd := &nodeUpdateOptions{IO: ios, Targets: targets, Clusters: func() (*cluster.Config, error) { return &cluster.Config{}, nil },
		Node: "node7", Output: cli.OutputTable}
	upd.Disable = true
	if err := runNodeUpdate(ctx, upd); err != nil || !strings.Contains(out.String(), `node "node7" updated: `) {
		t.Errorf("update: %v, stdout %q", err, out)
	}
	out.Reset()
	info := &nodeInfoOptions{IO: ios, Targets: targets, Node: "node7", Format: cli.OutputTable}
	if err := runNodeInfo(ctx, info); err != nil || !strings.Contains(out.String(), "Pool:        web\n") {
		t.Errorf("info: %v\n%s", err, out)
	}
	out.Reset()
	rm := &nodeRemoveOptions{IO: ios, Targets: targets, Prompter: func() cli.Prompter { return nil },
		Reporter: func() progress.Reporter { return cli.NewProgress(ios) }, Node: "node7", Output: cli.OutputTable}
	rm.DryRun = true
	if err := runNodeRemove(ctx, rm); err != nil || !strings.Contains(out.String(), "would move 0 pods") {
		t.Errorf("remove --dry-run: %v\n%s", err, out)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "node7", metav1.GetOptions{}); err != nil {
		t.Errorf("a dry run removed the node: %v", err)
	}
}
