package e2e

import (
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Several clusters, as the multi-cluster tests fake them: kubeconfig
// contexts that all reach the one local cluster, each in a namespace of its
// own (two teams' contexts, or two clusters), plus contexts whose server
// answers nobody. tug's cluster map lives in a config file of the test's own
// (TUG_CONFIG).

// clusterContexts is a kubeconfig of such contexts and tug's config file.
type clusterContexts struct {
	h          *H
	Raw        *clientcmdapi.Config
	Kubeconfig string // the written kubeconfig, current context as given
	TugConfig  string
}

// newClusterContexts writes a kubeconfig in a temporary folder whose
// contexts are namespaces' names → namespace on the local cluster, and
// dead ones on https://127.0.0.1:1; current is its current context.
func (h *H) newClusterContexts(current string, namespaces map[string]string, dead ...string) *clusterContexts {
	h.t.Helper()
	raw, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		h.t.Fatal(err)
	}
	cur := raw.Contexts[raw.CurrentContext]
	raw.Contexts = map[string]*clientcmdapi.Context{}
	for name, ns := range namespaces {
		raw.Contexts[name] = &clientcmdapi.Context{Cluster: cur.Cluster, AuthInfo: cur.AuthInfo, Namespace: ns}
	}
	if len(dead) > 0 {
		raw.Clusters["dead"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", CertificateAuthorityData: raw.Clusters[cur.Cluster].CertificateAuthorityData}
	}
	for _, name := range dead {
		raw.Contexts[name] = &clientcmdapi.Context{Cluster: "dead", AuthInfo: cur.AuthInfo, Namespace: h.NS}
	}
	dir := h.t.TempDir()
	c := &clusterContexts{h: h, Raw: raw, TugConfig: filepath.Join(dir, "tug", "config.yaml")}
	c.Kubeconfig = c.write(filepath.Join(dir, "kubeconfig"), current)
	return c
}

// write saves the contexts at path with current as the current context.
func (c *clusterContexts) write(path, current string) string {
	c.h.t.Helper()
	raw := *c.Raw
	raw.CurrentContext = current
	if err := clientcmd.WriteToFile(raw, path); err != nil {
		c.h.t.Fatal(err)
	}
	return path
}

// Env is the environment that makes tug use kubeconfig and the config file.
func (c *clusterContexts) Env(kubeconfig string) []string {
	return []string{"KUBECONFIG=" + kubeconfig, "TUG_CONFIG=" + c.TugConfig}
}

// Tug runs tug with the contexts' kubeconfig and config file.
func (c *clusterContexts) Tug(args ...string) Result {
	c.h.t.Helper()
	return c.h.TugRun(Run{Args: args, Env: c.Env(c.Kubeconfig)})
}

// Must is Tug that fails the test unless tug exits 0.
func (c *clusterContexts) Must(args ...string) Result {
	c.h.t.Helper()
	r := c.Tug(args...)
	if r.Code != 0 {
		c.h.t.Fatalf("tug %s: %s", strings.Join(args, " "), r)
	}
	return r
}
