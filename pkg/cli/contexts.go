package cli

import (
	"sync"

	"k8s.io/client-go/kubernetes"
)

// Several clusters: tug maps pools to kubeconfig contexts (pkg/cluster), so
// node commands talk to every configured cluster and app commands may be
// sent to a pool's cluster. These two hooks do that without changing how
// the Factory loads the kubeconfig: the same files and loading rules, only
// another context.

// ForContext returns a Factory like f whose clients use the kubeconfig
// context name instead of the one selected on the command line. It keeps
// the settings that hold for any cluster (--kubeconfig, -n,
// --request-timeout, impersonation, --disable-compression) and drops the
// ones that pick a particular cluster or identity (--cluster, --user,
// --server, --token, client certificates, --certificate-authority,
// --tls-server-name): those belong to the context. --insecure-skip-tls-verify
// and --proxy-url weaken or divert the connection the user named, as with
// kubectl: they are kept only when name is the command line's own context
// (--context, else the kubeconfig's current one), never carried to another,
// whose credentials would then cross an unverified or unknown link.
func (f *Factory) ForContext(name string) *Factory {
	flags := f.ConfigFlags.forContext(name)
	g := &Factory{
		IOStreams:    f.IOStreams,
		ConfigFlags:  flags,
		CommandName:  f.CommandName,
		Verbosity:    f.Verbosity,
		PrompterFunc: f.PrompterFunc,
	}
	g.bindClients()
	return g
}

// bindClients builds the lazy constructors from the Factory's own flags.
func (f *Factory) bindClients() {
	f.RESTConfigFunc = sync.OnceValues(f.loadRESTConfig)
	f.KubeClientFunc = sync.OnceValues(func() (kubernetes.Interface, error) {
		cfg, err := f.RESTConfig()
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(cfg)
	})
}

// UseContext rebinds f to the kubeconfig context name, as if the user had
// passed --context name. Call it before anything asks f for a client, the
// namespace or the raw kubeconfig: what was built before keeps the old
// context. App commands use it to reach the cluster of an app's pool.
func (f *Factory) UseContext(name string) {
	// The flags object stays the one bound to the root command; only its
	// values change, as ForContext's do.
	*f.ConfigFlags = *f.ConfigFlags.forContext(name)
	f.ConfigFlags.loader = sync.OnceValue(f.ConfigFlags.newLoader)
	f.bindClients()
}

// Adopt makes f act as g, a Factory from f.ForContext: the context g was
// made for, and the clients g has built already. A command that asked
// several contexts which one it needs then goes on with that one's
// connection instead of opening another.
func (f *Factory) Adopt(g *Factory) {
	*f.ConfigFlags = *g.ConfigFlags
	f.RESTConfigFunc, f.KubeClientFunc = g.RESTConfigFunc, g.KubeClientFunc
}

// PinsCluster reports whether the command line names a cluster or an
// identity by hand (--cluster, --server, --user, --token, client
// certificates, --certificate-authority, --tls-server-name) rather than
// through a context, or changes how its connection is made
// (--insecure-skip-tls-verify, --proxy-url): ForContext and UseContext drop
// those for other contexts, so tug never moves such a command to another
// context, where it would lose the identity, send it to a server it was not
// meant for, or not make the connection the user asked for. Like kubectl,
// such a command acts on the connection the command line selects.
func (c *ConfigFlags) PinsCluster() bool { return len(c.Pins()) > 0 }

// Pins names the flags given that make PinsCluster true, for messages.
func (c *ConfigFlags) Pins() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"--cluster", c.Cluster != ""}, {"--server", c.Server != ""}, {"--user", c.User != ""}, {"--token", c.Token != ""},
		{"--client-certificate", c.CertFile != ""}, {"--client-key", c.KeyFile != ""},
		{"--certificate-authority", c.CAFile != ""}, {"--tls-server-name", c.TLSServerName != ""},
		{"--insecure-skip-tls-verify", c.Insecure}, {"--proxy-url", c.ProxyURL != ""},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

func (c *ConfigFlags) forContext(name string) *ConfigFlags {
	cp := *c
	cp.Context = name
	cp.Cluster, cp.User, cp.Server, cp.Token = "", "", "", ""
	cp.CertFile, cp.KeyFile, cp.CAFile, cp.TLSServerName = "", "", "", ""
	if (c.Insecure || c.ProxyURL != "") && name != c.ownContext() {
		cp.Insecure, cp.ProxyURL = false, ""
	}
	cp.ImpersonateGroups = append([]string(nil), c.ImpersonateGroups...)
	cp.ImpersonateUserExtra = append([]string(nil), c.ImpersonateUserExtra...)
	cp.loader = sync.OnceValue(cp.newLoader)
	return &cp
}

// ownContext is the context the command line selects: --context, else the
// kubeconfig's current context ("" when it cannot be read).
func (c *ConfigFlags) ownContext() string {
	if c.Context != "" || c.loader == nil {
		return c.Context
	}
	raw, err := c.loader().RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}
