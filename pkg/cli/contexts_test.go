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
