package cli

import (
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"tug.dev/tug/pkg/inputerr"
)

// ConfigFlags are kubectl's flags for choosing a cluster, user and
// namespace, with kubectl's names and meanings, turned into a client-go
// ClientConfig.
//
// cli-runtime's genericclioptions.ConfigFlags does the same, but its package
// also holds kubectl's resource builder, which links kustomize: measured on
// tug, it more than doubled the binary (28 -> 69 MB) and the memory of every
// run (22 -> 57 MiB peak RSS) for flags tug does not have. See
// bench/version.sh.
type ConfigFlags struct {
	KubeConfig     string
	Context        string
	Cluster        string
	User           string
	Namespace      string
	Server         string
	Token          string
	RequestTimeout string

	Impersonate          string
	ImpersonateUID       string
	ImpersonateGroups    []string
	ImpersonateUserExtra []string

	CAFile             string
	CertFile           string
	KeyFile            string
	TLSServerName      string
	Insecure           bool
	ProxyURL           string
	DisableCompression bool

	loader func() clientcmd.ClientConfig
}

// NewConfigFlags returns flags with kubectl's defaults.
func NewConfigFlags() *ConfigFlags {
	c := &ConfigFlags{RequestTimeout: DefaultRequestTimeout.String()}
	// One loader per process: the kubeconfig files are read once however
	// many times a command asks for the config or the namespace.
	c.loader = sync.OnceValue(c.newLoader)
	return c
}

// AddFlags registers the flags on fs.
func (c *ConfigFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.KubeConfig, "kubeconfig", c.KubeConfig, "Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&c.Context, "context", c.Context, "Kubeconfig context to use")
	fs.StringVar(&c.Cluster, "cluster", c.Cluster, "Kubeconfig cluster to use (node commands' --cluster is a tug cluster instead)")
	fs.StringVar(&c.User, "user", c.User, "Kubeconfig user to use")
	fs.StringVarP(&c.Namespace, "namespace", "n", c.Namespace, "Namespace to work in (default: the context's, else \"default\")")
	fs.StringVarP(&c.Server, "server", "s", c.Server, "Address and port of the Kubernetes API server")
	fs.StringVar(&c.Token, "token", c.Token, "Bearer token for authenticating to the API server")
	fs.StringVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "How long to wait for each answer from the API server (e.g. 10s, 1m; 0 waits forever); watches and streams such as logs -f and shell are never cut")

	fs.StringVar(&c.Impersonate, "as", c.Impersonate, "User to impersonate: a user name or system:serviceaccount:NAMESPACE:NAME")
	fs.StringVar(&c.ImpersonateUID, "as-uid", c.ImpersonateUID, "UID to impersonate")
	fs.StringArrayVar(&c.ImpersonateGroups, "as-group", c.ImpersonateGroups, "Group to impersonate; repeat for several")
	fs.StringArrayVar(&c.ImpersonateUserExtra, "as-user-extra", c.ImpersonateUserExtra, "User extra to impersonate, as KEY=VALUE; repeat for several")

	fs.StringVar(&c.CAFile, "certificate-authority", c.CAFile, "Path to the certificate authority file for the API server")
	fs.StringVar(&c.CertFile, "client-certificate", c.CertFile, "Path to a client certificate file for TLS")
	fs.StringVar(&c.KeyFile, "client-key", c.KeyFile, "Path to a client key file for TLS")
	fs.StringVar(&c.TLSServerName, "tls-server-name", c.TLSServerName, "Server name to check the API server's certificate against (default: the server's host)")
	fs.BoolVar(&c.Insecure, "insecure-skip-tls-verify", c.Insecure, "Do not check the API server's certificate: the connection is then open to interception")
	fs.StringVar(&c.ProxyURL, "proxy-url", c.ProxyURL, "Proxy URL for requests to the API server")
	fs.BoolVar(&c.DisableCompression, "disable-compression", c.DisableCompression, "Ask the API server not to compress responses")
}

// ToRawKubeConfigLoader is the kubeconfig as selected and overridden by the
// flags. Its Namespace() and RawConfig() are what commands usually need.
func (c *ConfigFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig { return c.loader() }

// ToRESTConfig is the client configuration for the selected cluster and user.
func (c *ConfigFlags) ToRESTConfig() (*rest.Config, error) {
	return c.ToRawKubeConfigLoader().ClientConfig()
}

func (c *ConfigFlags) newLoader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.KubeConfig
	o := &clientcmd.ConfigOverrides{
		// No Timeout: client-go would apply it to every request, streams
		// included; the Factory applies --request-timeout to the others.
		CurrentContext: c.Context,
	}
	o.Context.Cluster = c.Cluster
	o.Context.AuthInfo = c.User
	o.Context.Namespace = c.Namespace
	o.ClusterInfo.Server = c.Server
	o.ClusterInfo.CertificateAuthority = c.CAFile
	o.ClusterInfo.TLSServerName = c.TLSServerName
	o.ClusterInfo.InsecureSkipTLSVerify = c.Insecure
	o.ClusterInfo.ProxyURL = c.ProxyURL
	o.ClusterInfo.DisableCompression = c.DisableCompression
	o.AuthInfo.Token = c.Token
	o.AuthInfo.ClientCertificate = c.CertFile
	o.AuthInfo.ClientKey = c.KeyFile
	o.AuthInfo.Impersonate = c.Impersonate
	o.AuthInfo.ImpersonateUID = c.ImpersonateUID
	o.AuthInfo.ImpersonateGroups = c.ImpersonateGroups
	if extra, err := parseUserExtra(c.ImpersonateUserExtra); err == nil {
		o.AuthInfo.ImpersonateUserExtra = extra
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, o)
}

// parseUserExtra turns repeated KEY=VALUE into the map impersonation wants.
func parseUserExtra(pairs []string) (map[string][]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	extra := map[string][]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, inputerr.Errorf("invalid --as-user-extra %q: want KEY=VALUE", p)
		}
		extra[k] = append(extra[k], v)
	}
	return extra, nil
}

// Validate reports flag values that cannot work, as usage errors.
func (c *ConfigFlags) Validate() error {
	if _, err := parseUserExtra(c.ImpersonateUserExtra); err != nil {
		return err
	}
	if _, err := parseRequestTimeout(c.RequestTimeout); err != nil {
		return err
	}
	if c.Insecure && c.CAFile != "" {
		return inputerr.Errorf("--insecure-skip-tls-verify and --certificate-authority contradict each other; pass one")
	}
	return nil
}
