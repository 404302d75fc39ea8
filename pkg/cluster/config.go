// Package cluster keeps tug's map of clusters: which kubeconfig context
// serves which pools (tsuru's clusterForPool), in tug's own config file. The
// kubeconfig stays the one source of credentials; the file only names
// contexts.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// EnvConfig names a config file to use instead of the one in the user's
// config directory (tests, several setups side by side).
const EnvConfig = "TUG_CONFIG"

// Cluster is one kubeconfig context that tug treats as a cluster of pools.
type Cluster struct {
	Name    string `json:"name"`
	Context string `json:"context"`
	// Pools whose apps and nodes live in this cluster.
	Pools []string `json:"pools"`
	// Default takes the pools no cluster names.
	Default bool `json:"default,omitempty"`
}

// HasPool reports whether the cluster names pool.
func (c Cluster) HasPool(pool string) bool { return slices.Contains(c.Pools, pool) }

// Config is the content of tug's config file. Keys tug does not know (a
// newer tug's settings) are kept as they are when the file is saved.
type Config struct {
	Clusters []Cluster `json:"clusters"`

	path  string
	extra map[string]json.RawMessage
}

// Path is where the config file lives: override (the value of
// $TUG_CONFIG, which cmd reads) when set, else tug/config.yaml in the
// user's config directory (~/.config on Linux).
func Path(override string) (string, error) {
	if override != "" {
		return override, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding tug's config file: %w; set %s", err, EnvConfig)
	}
	return filepath.Join(dir, "tug", "config.yaml"), nil
}

// Load reads the config file at path. A missing file is an empty config:
// with no cluster configured, tug uses the kubeconfig's current context.
func Load(path string) (*Config, error) {
	c := &Config{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading tug's config: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("tug's config %s is not valid YAML: %w; fix or remove it", path, err)
	}
	if cl, ok := raw["clusters"]; ok {
		if err := json.Unmarshal(cl, &c.Clusters); err != nil {
			return nil, fmt.Errorf("tug's config %s: clusters: %w; fix or remove it", path, err)
		}
		delete(raw, "clusters")
	}
	for i := range c.Clusters {
		if c.Clusters[i].Pools == nil {
			c.Clusters[i].Pools = []string{}
		}
	}
	c.extra = raw
	return c, nil
}

// LoadDefault loads the config file at Path(override).
func LoadDefault(override string) (*Config, error) {
	p, err := Path(override)
	if err != nil {
		return nil, err
	}
	return Load(p)
}

// File is where the config was loaded from and is saved to.
func (c *Config) File() string { return c.path }

// Save writes the config back, atomically (a temporary file renamed over the
// old one), readable only by the user: it names their contexts.
func (c *Config) Save() error {
	if c.path == "" {
		return errors.New("tug's config has no file to save to")
	}
	out := map[string]any{}
	for k, v := range c.extra {
		out[k] = v
	}
	out["clusters"] = c.Clusters
	b, err := yaml.Marshal(out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("saving tug's config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("saving tug's config: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("saving tug's config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving tug's config: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		return fmt.Errorf("saving tug's config: %w", err)
	}
	return nil
}

// Get returns the named cluster.
func (c *Config) Get(name string) (Cluster, bool) {
	for _, cl := range c.Clusters {
		if cl.Name == name {
			return cl, true
		}
	}
	return Cluster{}, false
}

// Names lists the configured clusters' names.
func (c *Config) Names() []string {
	names := make([]string, len(c.Clusters))
	for i, cl := range c.Clusters {
		names[i] = cl.Name
	}
	return names
}

// Default is the cluster marked default, if any.
func (c *Config) Default() (Cluster, bool) {
	for _, cl := range c.Clusters {
		if cl.Default {
			return cl, true
		}
	}
	return Cluster{}, false
}

// ForPool is the cluster whose apps and nodes of pool live there: the one
// naming the pool, else the default. ok is false when neither exists; with
// no cluster configured at all, callers use the kubeconfig's current
// context.
func (c *Config) ForPool(pool string) (cl Cluster, ok bool) {
	if pool != "" {
		for _, cl := range c.Clusters {
			if cl.HasPool(pool) {
				return cl, true
			}
		}
	}
	return c.Default()
}

// OwnerOfPool is the cluster that names pool explicitly (the default does
// not count).
func (c *Config) OwnerOfPool(pool string) (Cluster, bool) {
	for _, cl := range c.Clusters {
		if cl.HasPool(pool) {
			return cl, true
		}
	}
	return Cluster{}, false
}

func invalid(format string, a ...any) error { return inputerr.Errorf(format, a...) }

// ValidateName checks a cluster name: a DNS label, as it shows in tables
// and flags.
func ValidateName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return invalid("invalid cluster name %q: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", name)
	}
	return nil
}

// CheckNew checks a cluster to add before tug's config is read: its name,
// and a context that hasContext finds in the kubeconfig.
func (cl Cluster) CheckNew(hasContext func(kubeContext string) (bool, error)) error {
	if err := ValidateName(cl.Name); err != nil {
		return err
	}
	if cl.Context == "" {
		return invalid("missing --context: the kubeconfig context that reaches cluster %q", cl.Name)
	}
	ok, err := hasContext(cl.Context)
	if err != nil {
		return err
	}
	if !ok {
		return invalid("context %q not found in the kubeconfig; see 'kubectl config get-contexts'", cl.Context)
	}
	return nil
}

// Add stores cl, replacing a cluster of the same name (so adding twice
// updates). A pool belongs to one cluster; a new default unsets the old
// one. It validates everything before changing anything.
func (c *Config) Add(cl Cluster) (replaced bool, err error) {
	if err := ValidateName(cl.Name); err != nil {
		return false, err
	}
	if cl.Context == "" {
		return false, invalid("cluster %q needs a kubeconfig context: pass --context", cl.Name)
	}
	seen := map[string]bool{}
	pools := make([]string, 0, len(cl.Pools))
	for _, p := range cl.Pools {
		if err := kube.ValidateLabelValue("pool", p); err != nil {
			return false, inputerr.Wrap(err)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		pools = append(pools, p)
		if owner, ok := c.OwnerOfPool(p); ok && owner.Name != cl.Name {
			return false, invalid("pool %q already belongs to cluster %q; remove it there first ('tug cluster add %s --context %s --pool ...' without it)", p, owner.Name, owner.Name, owner.Context)
		}
	}
	sort.Strings(pools)
	cl.Pools = pools
	for i := range c.Clusters {
		if cl.Default && c.Clusters[i].Name != cl.Name {
			c.Clusters[i].Default = false
		}
	}
	for i := range c.Clusters {
		if c.Clusters[i].Name == cl.Name {
			c.Clusters[i] = cl
			return true, nil
		}
	}
	c.Clusters = append(c.Clusters, cl)
	sort.Slice(c.Clusters, func(i, j int) bool { return c.Clusters[i].Name < c.Clusters[j].Name })
	return false, nil
}

// NotFoundError says a cluster name is not configured.
type NotFoundError struct {
	Name  string
	Known []string
}

func (e *NotFoundError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("cluster %q not found: no cluster is configured; add one with 'tug cluster add NAME --context CONTEXT'", e.Name)
	}
	return fmt.Sprintf("cluster %q not found; see 'tug cluster list'", e.Name)
}

// Remove deletes the named cluster from the config.
func (c *Config) Remove(name string) (Cluster, error) {
	for i, cl := range c.Clusters {
		if cl.Name == name {
			c.Clusters = slices.Delete(c.Clusters, i, i+1)
			return cl, nil
		}
	}
	return Cluster{}, inputerr.Wrap(&NotFoundError{Name: name, Known: c.Names()})
}
