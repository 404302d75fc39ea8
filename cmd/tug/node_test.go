package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
