package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// kubeconfigFor writes a kubeconfig whose cluster is server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: dev
clusters: [{name: c, cluster: {server: %q}}]
contexts: [{name: dev, context: {cluster: c, user: u, namespace: dev}}]
users: [{name: u, user: {token: abc}}]
`, server)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadFailsWhenServerNeverAnswers: a server that accepts connections
// and never answers makes `tug app list` fail within --request-timeout with
// a message that says so, instead of hanging (issue 12 #5, issue 17).
func TestReadFailsWhenServerNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	server := "http://" + ln.Addr().String()
	r := execute(t, nil, "--kubeconfig", kubeconfigFor(t, server), "--request-timeout", "300ms", "app", "list")
	want := "error: the cluster at " + server + " did not answer within 300ms; check your network and --context, or allow longer with --request-timeout\n"
	if r.code != 1 || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", r.code, r.stdout, r.stderr, want)
	}
}

// TestReadRetriesUnavailable: a read answered 503 (without Retry-After)
// twice, then 200, succeeds.
func TestReadRetriesUnavailable(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 2 {
			http.Error(w, "the server is shutting down", http.StatusServiceUnavailable)
			return
		}
		// an empty list of whatever is asked for
		kinds := map[string]string{"/api/v1/namespaces/dev/configmaps": "v1 ConfigMapList", "/apis/apps/v1/namespaces/dev/deployments": "apps/v1 DeploymentList", "/api/v1/namespaces/dev/pods": "v1 PodList",
			"/api/v1/namespaces/dev": "v1 Namespace"} // app list asks whether an empty namespace exists
		kind, ok := kinds[r.URL.Path]
		if r.Method != "GET" || !ok {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		version, kind, _ := strings.Cut(kind, " ")
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{},"items":[]}`, kind, version)
	}))
	defer srv.Close()
	r := execute(t, nil, "--kubeconfig", kubeconfigFor(t, srv.URL), "app", "list", "-o", "json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" || hits.Load() < 3 {
		t.Errorf("exit %d after %d requests, stdout %q, stderr %q; want 0 after 2 failures", r.code, hits.Load(), r.stdout, r.stderr)
	}
}
