package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/lifecycle"
)

// Routing against several clusters, each an API server that holds app
// records (GET one, LIST them) and answers nothing else (or no server at
// all): what routing asks is one GET of an app's record per cluster.

// appServer is an API server holding the app records of one namespace. It
// records every request it gets, as "METHOD PATH".
type appServer struct {
	url  string
	mu   sync.Mutex
	reqs []string
}

// newAppServer serves apps (name -> change to its record, or nil) in ns.
func newAppServer(t *testing.T, ns string, apps map[string]func(*app.App)) *appServer {
	t.Helper()
	ctx := context.Background()
	cs := fake.NewClientset()
	s := &app.Store{Client: cs, Namespace: ns}
	for name, change := range apps {
		if _, err := lifecycle.Create(ctx, s, lifecycle.CreateOptions{Name: name, Pool: "web"}); err != nil {
			t.Fatal(err)
		}
		if change != nil {
			if _, err := s.UpdateApp(ctx, name, func(a *app.App) error { change(a); return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	as := &appServer{}
	prefix := "/api/v1/namespaces/" + ns + "/configmaps/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		as.reqs = append(as.reqs, r.Method+" "+r.URL.Path)
		as.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path+"/" == prefix {
			list, err := cs.CoreV1().ConfigMaps(ns).List(r.Context(), metav1.ListOptions{LabelSelector: r.URL.Query().Get("labelSelector")})
			if err == nil {
				list.APIVersion, list.Kind = "v1", "ConfigMapList"
				_ = json.NewEncoder(w).Encode(list)
				return
			}
		}
		name, ok := strings.CutPrefix(r.URL.Path, prefix)
		if r.Method == http.MethodGet && ok && !strings.Contains(name, "/") {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(r.Context(), name, metav1.GetOptions{})
			if err == nil {
				cm.APIVersion, cm.Kind = "v1", "ConfigMap"
				_ = json.NewEncoder(w).Encode(cm)
				return
			}
		}
		st := apierrors.NewNotFound(corev1.Resource("configmaps"), r.URL.Path).ErrStatus
		st.APIVersion, st.Kind = "v1", "Status"
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	as.url = srv.URL
	return as
}

// requests returns and forgets the requests so far.
func (s *appServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs
	s.reqs = nil
	return r
}

// deadServer is an address nobody answers on.
const deadServer = "https://127.0.0.1:1"

// kubeconfigServers writes a kubeconfig whose contexts (name, server;
// namespace ns-NAME) are given in pairs; the first is the current one.
func kubeconfigServers(t *testing.T, pairs ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + pairs[0] + "\nusers: [{name: u, user: {token: x}}]\nclusters:\n")
	for i := 0; i < len(pairs); i += 2 {
		fmt.Fprintf(&b, "- {name: %s, cluster: {server: %q}}\n", pairs[i], pairs[i+1])
	}
	b.WriteString("contexts:\n")
	for i := 0; i < len(pairs); i += 2 {
		fmt.Fprintf(&b, "- {name: %s, context: {cluster: %s, user: u, namespace: ns-%s}}\n", pairs[i], pairs[i], pairs[i])
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clusterRunner runs tug with a kubeconfig and tug's own config, after
// adding the clusters (each "NAME CONTEXT POOL").
func clusterRunner(t *testing.T, kubeconfig string, clusters ...string) func(args ...string) result {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "tug.yaml")
	run := func(args ...string) result {
		t.Helper()
		t.Setenv("TUG_CONFIG", cfg)
		return execute(t, nil, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	for _, c := range clusters {
		f := strings.Fields(c)
		if r := run("cluster", "add", f[0], "--context", f[1], "--pool", f[2]); r.code != 0 {
			t.Fatalf("cluster add %v: %+v", f, r)
		}
	}
	return run
}

func onlyGets(reqs []string) bool {
	return !slices.ContainsFunc(reqs, func(r string) bool { return !strings.HasPrefix(r, "GET ") })
}

// Two tug names on one context are one cluster: its copy of an app is one
// copy, not "in several clusters".
func TestRouteTwoNamesOnOneContext(t *testing.T) {
	k := newAppServer(t, "ns-k", map[string]func(*app.App){"shop": nil})
	run := clusterRunner(t, kubeconfigServers(t, "k", k.url), "cpu k web", "gpu k gpu")
	r := run("app", "info", "shop")
	if strings.Contains(r.stderr, "several clusters") {
		t.Errorf("one copy taken for two: %+v", r)
	}
	if n := len(slices.DeleteFunc(k.requests(), func(r string) bool { return r != "GET /api/v1/namespaces/ns-k/configmaps/"+app.AppRecordName("shop") })); n != 2 {
		// one lookup, then the command's own read of the record
		t.Errorf("%d reads of the record; want the lookup's and the command's", n)
	}
}

// --insecure-skip-tls-verify (or --proxy-url) for one command is for the
// connection the command line selects: the command is not routed, so no
// other cluster is asked, over a connection the user weakened, with that
// cluster's credentials.
func TestRouteWeakenedConnectionStaysHome(t *testing.T) {
	// Fresh servers for each command: a request the command before
	// cancelled (app info's usage LISTs once it has its answer) may reach
	// its server after that command returned.
	servers := func() (dev, prod *appServer, run func(args ...string) result) {
		dev = newAppServer(t, "ns-dev", nil)
		prod = newAppServer(t, "ns-prod", map[string]func(*app.App){"shop": nil})
		return dev, prod, clusterRunner(t, kubeconfigServers(t, "dev", dev.url, "prod", prod.url), "dev dev dev", "prod prod web")
	}
	_, prod, run := servers()
	run("app", "info", "shop")
	if len(prod.requests()) == 0 {
		t.Fatal("without the flag, prod was not asked: the test proves nothing")
	}
	for _, flag := range []string{"--insecure-skip-tls-verify", "--proxy-url"} {
		dev, prod, run := servers()
		args := []string{"app", "info", "shop", flag}
		if flag == "--proxy-url" {
			args = append(args, dev.url)
		}
		r := run(args...)
		if reqs := prod.requests(); len(reqs) != 0 {
			t.Errorf("%v: prod was asked %v (%+v)", flag, reqs, r)
		}
	}
}

// A configured cluster that does not answer: a command that deletes is
// refused (the silent cluster may hold the app meant, and the copy found
// another team's), unless --context says where; any other command goes on
// with one warning on stderr naming it.
func TestRouteSilentCluster(t *testing.T) {
	prod := newAppServer(t, "ns-prod", map[string]func(*app.App){"shop": nil})
	run := clusterRunner(t, kubeconfigServers(t, "prod", prod.url, "gpu", deadServer), "prod prod web", "gpu gpu gpu")
	for _, args := range [][]string{
		{"app", "remove", "shop", "--yes"},
		{"env", "unset", "shop", "KEY"},
		{"cert", "remove", "shop", "shop.example.com"},
		{"domain", "remove", "shop", "shop.example.com"},
		{"registry", "unset", "shop"},
		{"volume", "unbind", "shop", "data"},
		{"unit", "kill", "shop", "shop-web-1"},
	} {
		r := run(args...)
		if r.code != 1 || !strings.Contains(r.stderr, `not done: app "shop" was not looked for in cluster "gpu", which did not answer (`) || !strings.Contains(r.stderr, "--context") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming gpu", args, r.code, r.stderr)
		}
		if reqs := prod.requests(); !onlyGets(reqs) {
			t.Errorf("%v: changed something: %v", args, reqs)
		}
	}
	r := run("app", "info", "shop", "-o", "json")
	want := `warning: app "shop" was not looked for in cluster "gpu", which did not answer (`
	if strings.Count(r.stderr, want) != 1 || !strings.Contains(r.stderr, `going on with its copy in cluster "prod"`) || strings.Contains(r.stdout, "warning") {
		t.Errorf("app info: stdout %q, stderr %q; want one warning on stderr naming gpu", r.stdout, r.stderr)
	}
	// --context: as given, nothing refused.
	r = run("app", "remove", "shop", "--yes", "--context", "prod")
	if strings.Contains(r.stderr, "did not answer") {
		t.Errorf("--context: %+v", r)
	}
	if reqs := prod.requests(); onlyGets(reqs) {
		t.Errorf("--context prod: app remove did not try to remove: %v (%+v)", reqs, r)
	}
}

// Text of a record (a move's pool) reaches the terminal sanitized.
func TestRouteSanitizesMoveText(t *testing.T) {
	evil := "gpu\x1b]0;pwned\x07"
	prod := newAppServer(t, "ns-prod", map[string]func(*app.App){"shop": func(a *app.App) {
		a.Move = &app.Move{Role: app.MoveSource, From: "prod", To: "gpu", Pool: evil}
	}})
	gpu := newAppServer(t, "ns-gpu", map[string]func(*app.App){"shop": func(a *app.App) {
		a.Move = &app.Move{Role: app.MoveTarget, From: "prod", To: "gpu", Pool: evil}
	}})
	run := clusterRunner(t, kubeconfigServers(t, "prod", prod.url, "gpu", gpu.url), "prod prod web", "gpu gpu gpu")
	r := run("app", "info", "shop")
	if !strings.Contains(r.stderr, "also has a copy") || strings.ContainsAny(r.stderr, "\x1b\x07") {
		t.Errorf("stderr %q: want the warning, without control characters", r.stderr)
	}
}

// With a connection given on the command line (not routed), app pool set
// decides against that connection's server: a pool of another cluster is
// refused before anything is asked; a pool of that server's cluster is a
// rollout where it is, never a move.
func TestPoolSetPinnedConnection(t *testing.T) {
	const prodServer, gpuServer = "https://127.0.0.1:1", "https://127.0.0.2:1"
	run := clusterRunner(t, kubeconfigServers(t, "prod", prodServer, "gpu", gpuServer), "prod prod web", "gpu gpu gpu")
	for _, args := range [][]string{
		{"--server", prodServer, "app", "pool", "set", "shop", "gpu"},
		{"--server", prodServer, "--token", "t", "app", "pool", "set", "shop", "gpu", "--dry-run"},
		{"--token", "t", "app", "pool", "set", "shop", "gpu"}, // the current context's server, another identity
		{"--server", gpuServer, "app", "pool", "set", "shop", "web"},
		{"--insecure-skip-tls-verify", "app", "pool", "set", "shop", "gpu"},
		{"--token", "t", "app", "create", "shop", "--pool", "gpu"},
	} {
		r := run(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "belongs to cluster") || !strings.Contains(r.stderr, "nothing changed") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, r.code, r.stderr)
		}
	}
	// The pinned server's own cluster: in place (its server answers nobody).
	for _, args := range [][]string{
		{"--server", gpuServer, "app", "pool", "set", "shop", "gpu"},
		{"--server", prodServer + "/", "--token", "t", "app", "pool", "set", "shop", "web"},
		{"--token", "t", "app", "create", "shop", "--pool", "web"},
	} {
		r := run(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "cannot reach the cluster at "+strings.TrimSuffix(args[1], "/")) && !strings.Contains(r.stderr, "cannot reach the cluster at "+prodServer) || strings.Contains(r.stderr, "move") {
			t.Errorf("%v: exit %d, stderr %q; want the pinned server asked, no move", args, r.code, r.stderr)
		}
	}
}
