package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/inputerr"
)

const testKubeconfig = `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: dev
  context: {cluster: local, user: bob, namespace: team-a}
- name: other
  context: {cluster: local, user: bob}
users:
- name: bob
  user: {token: abc}
`

// newTestFactory returns a Factory as main builds it, with flags parsed
// from args and the kubeconfig isolated from the developer's own.
func newTestFactory(t *testing.T, kubeconfig string, args ...string) *Factory {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	path := filepath.Join(dir, "kubeconfig")
	if kubeconfig != "" {
		if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECONFIG", path)
	ios, _, _, _ := TestIOStreams()
	f := NewFactory(ios, "tug")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.ConfigFlags.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFactoryRESTConfig(t *testing.T) {
	f := newTestFactory(t, testKubeconfig)
	cfg, err := f.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "abc" {
		t.Errorf("host %q token %q: kubeconfig not used", cfg.Host, cfg.BearerToken)
	}
	if cfg.QPS != clientQPS || cfg.Burst != clientBurst {
		t.Errorf("QPS %v burst %v; client-side throttling would slow commands", cfg.QPS, cfg.Burst)
	}
	if !strings.HasPrefix(cfg.UserAgent, "tug/") {
		t.Errorf("user agent %q", cfg.UserAgent)
	}
	again, _ := f.RESTConfig()
	if again != cfg {
		t.Error("RESTConfig is rebuilt on every call")
	}
	if _, err := f.KubeClient(); err != nil {
		t.Errorf("KubeClient: %v", err)
	}
}

func TestFactoryNamespaceAndContext(t *testing.T) {
	cases := []struct {
		args          []string
		wantNamespace string
		wantContext   string
	}{
		{nil, "team-a", "dev"},
		{[]string{"-n", "other-ns"}, "other-ns", "dev"},
		{[]string{"--context", "other"}, "default", "other"},
	}
	for _, c := range cases {
		f := newTestFactory(t, testKubeconfig, c.args...)
		ns, err := f.Namespace()
		if err != nil || ns != c.wantNamespace {
			t.Errorf("%q: namespace %q, %v; want %q", c.args, ns, err, c.wantNamespace)
		}
		ctx, err := f.ContextName()
		if err != nil || ctx != c.wantContext {
			t.Errorf("%q: context %q, %v; want %q", c.args, ctx, err, c.wantContext)
		}
	}
}

func TestFactoryWithoutKubeconfig(t *testing.T) {
	f := newTestFactory(t, "")
	_, err := f.RESTConfig()
	if err == nil || !strings.HasPrefix(err.Error(), "no kubeconfig found;") {
		t.Errorf("got %v, want the no-kubeconfig message instead of a localhost:8080 fallback", err)
	}
	// --server alone is a valid way to reach a cluster.
	f = newTestFactory(t, "", "--server", "https://10.0.0.1:6443")
	cfg, err := f.RESTConfig()
	if err != nil || cfg.Host != "https://10.0.0.1:6443" {
		t.Errorf("--server without kubeconfig: %v, %v", cfg, err)
	}
}

func TestFactoryExplicitKubeconfigMissing(t *testing.T) {
	f := newTestFactory(t, testKubeconfig, "--kubeconfig", "/nonexistent/config")
	_, err := f.RESTConfig()
	if want := `kubeconfig "/nonexistent/config" not found; check --kubeconfig or KUBECONFIG`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestFactoryFlagOverrides(t *testing.T) {
	f := newTestFactory(t, testKubeconfig, "--server", "https://10.1.1.1:443", "--token", "xyz",
		"--as", "alice", "--as-group", "g1", "--as-group", "g2", "--as-user-extra", "scopes=a", "--as-user-extra", "scopes=b",
		"--request-timeout", "7s", "--insecure-skip-tls-verify", "--tls-server-name", "api.local")
	cfg, err := f.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	// --request-timeout is not rest.Config.Timeout, which client-go would
	// apply to watches and streams too; the request guard applies it.
	var guard *requestGuard
	if cfg.WrapTransport != nil {
		guard, _ = cfg.WrapTransport(http.DefaultTransport).(*requestGuard)
	}
	if guard == nil || guard.timeout != 7*time.Second {
		t.Errorf("--request-timeout 7s: guard %+v", guard)
	}
	if cfg.Host != "https://10.1.1.1:443" || cfg.BearerToken != "xyz" || cfg.Timeout != 0 ||
		!cfg.Insecure || cfg.ServerName != "api.local" {
		t.Errorf("overrides lost: host %q token %q timeout %v insecure %v server name %q",
			cfg.Host, cfg.BearerToken, cfg.Timeout, cfg.Insecure, cfg.ServerName)
	}
	imp := cfg.Impersonate
	if imp.UserName != "alice" || len(imp.Groups) != 2 || len(imp.Extra["scopes"]) != 2 {
		t.Errorf("impersonation %+v", imp)
	}
}

func TestFactoryBadUserExtraIsUsageError(t *testing.T) {
	f := newTestFactory(t, testKubeconfig, "--as-user-extra", "novalue")
	if _, err := f.RESTConfig(); !inputerr.Is(err) {
		t.Errorf("got %v, want a usage error", err)
	}
}

func TestFactoryUnknownContext(t *testing.T) {
	f := newTestFactory(t, testKubeconfig, "--context", "nope")
	_, err := f.RESTConfig()
	if want := `context "nope" not found in the kubeconfig; see 'kubectl config get-contexts'`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
