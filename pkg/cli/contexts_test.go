package cli

import "testing"

// A cluster or identity named on the command line pins the command there:
// routing to another context would drop it, or send it elsewhere.
func TestPinsCluster(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*ConfigFlags)
		want bool
	}{
		{"nothing", func(*ConfigFlags) {}, false},
		{"context and namespace only", func(c *ConfigFlags) { c.Context, c.Namespace = "a", "ns" }, false},
		{"impersonation", func(c *ConfigFlags) { c.Impersonate = "bob" }, false},
		{"--token", func(c *ConfigFlags) { c.Token = "t" }, true},
		{"--user", func(c *ConfigFlags) { c.User = "u" }, true},
		{"--server", func(c *ConfigFlags) { c.Server = "https://x" }, true},
		{"--cluster", func(c *ConfigFlags) { c.Cluster = "c" }, true},
		{"--client-certificate", func(c *ConfigFlags) { c.CertFile = "f" }, true},
		{"--client-key", func(c *ConfigFlags) { c.KeyFile = "f" }, true},
		{"--certificate-authority", func(c *ConfigFlags) { c.CAFile = "f" }, true},
		{"--tls-server-name", func(c *ConfigFlags) { c.TLSServerName = "n" }, true},
		{"--insecure-skip-tls-verify", func(c *ConfigFlags) { c.Insecure = true }, true},
		{"--proxy-url", func(c *ConfigFlags) { c.ProxyURL = "http://proxy:3128" }, true},
		{"--disable-compression", func(c *ConfigFlags) { c.DisableCompression = true }, false},
		{"--request-timeout", func(c *ConfigFlags) { c.RequestTimeout = "5s" }, false},
	} {
		c := NewConfigFlags()
		tc.set(c)
		if got := c.PinsCluster(); got != tc.want {
			t.Errorf("%s: PinsCluster() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A Factory for another context keeps -v, so requests made through it
// (routing lookups, node commands over several clusters) are traced too.
func TestForContextKeepsVerbosity(t *testing.T) {
	ios, _, _, _ := TestIOStreams()
	f := NewFactory(ios, "tug")
	f.Verbosity = 6
	if g := f.ForContext("other"); g.Verbosity != 6 || g.ConfigFlags.Context != "other" {
		t.Errorf("ForContext: verbosity %d, context %q", g.Verbosity, g.ConfigFlags.Context)
	}
}

// --insecure-skip-tls-verify and --proxy-url are for the connection the
// command line selects: a Factory for another context verifies that
// context's server and goes direct, as its kubeconfig says, so its
// credentials never cross a link the user weakened for another cluster.
func TestForContextCarriesNoWeakenedConnection(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ctx  string
		keep bool
	}{
		{[]string{"--insecure-skip-tls-verify", "--proxy-url", "http://proxy:3128"}, "other", false},
		{[]string{"--insecure-skip-tls-verify", "--proxy-url", "http://proxy:3128"}, "dev", true}, // the current context
		{[]string{"--context", "other", "--insecure-skip-tls-verify", "--proxy-url", "http://proxy:3128"}, "other", true},
		{[]string{"--context", "other", "--insecure-skip-tls-verify", "--proxy-url", "http://proxy:3128"}, "dev", false},
	} {
		f := newTestFactory(t, testKubeconfig, tc.args...)
		cfg, err := f.ForContext(tc.ctx).RESTConfig()
		if err != nil {
			t.Fatalf("%v -> %s: %v", tc.args, tc.ctx, err)
		}
		if cfg.Insecure != tc.keep || (cfg.Proxy != nil) != tc.keep {
			t.Errorf("%v -> context %s: insecure %v, proxy set %v; want both %v", tc.args, tc.ctx, cfg.Insecure, cfg.Proxy != nil, tc.keep)
		}
		g := newTestFactory(t, testKubeconfig, tc.args...)
		g.UseContext(tc.ctx)
		if g.ConfigFlags.Insecure != tc.keep || (g.ConfigFlags.ProxyURL != "") != tc.keep {
			t.Errorf("%v -> UseContext(%s): insecure %v, proxy %q; want kept %v", tc.args, tc.ctx, g.ConfigFlags.Insecure, g.ConfigFlags.ProxyURL, tc.keep)
		}
	}
	// Settings that hold for any cluster still go along.
	f := newTestFactory(t, testKubeconfig, "--as", "bob", "--disable-compression", "--request-timeout", "5s")
	g := f.ForContext("other")
	if c := g.ConfigFlags; c.Impersonate != "bob" || !c.DisableCompression || c.RequestTimeout != "5s" {
		t.Errorf("ForContext dropped a setting that holds for any cluster: %+v", c)
	}
}
