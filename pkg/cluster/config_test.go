package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/inputerr"
)

func TestPathHonoursTheOverride(t *testing.T) {
	t.Setenv(EnvConfig, "/elsewhere/tug.yaml") // cmd's to read, not Path's
	if p, err := Path("/somewhere/tug.yaml"); err != nil || p != "/somewhere/tug.yaml" {
		t.Fatalf("Path() = %q, %v", p, err)
	}
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	t.Setenv("HOME", "/home/u")
	if p, err := Path(""); err != nil || !strings.HasSuffix(p, filepath.Join("tug", "config.yaml")) {
		t.Fatalf("Path() = %q, %v; want .../tug/config.yaml", p, err)
	}
}

func TestRoundTripKeepsUnknownKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "config.yaml")
	c, err := Load(path)
	if err != nil || len(c.Clusters) != 0 {
		t.Fatalf("a missing file is an empty config: %+v, %v", c, err)
	}
	if _, err := c.Add(Cluster{Name: "prod", Context: "prod-admin", Pools: []string{"web", "api", "web"}, Default: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved file: %v, mode %v; want 0600", err, fi.Mode())
	}
	// A newer tug's setting survives this tug's save.
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(b, []byte("futureSetting:\n  x: 1\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c.Get("prod")
	if !ok || got.Context != "prod-admin" || strings.Join(got.Pools, ",") != "api,web" || !got.Default {
		t.Fatalf("loaded %+v; want pools sorted and deduplicated", got)
	}
	if _, err := c.Remove("prod"); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if !strings.Contains(string(b), "futureSetting") || strings.Contains(string(b), "prod-admin") {
		t.Fatalf("saved file:\n%s", b)
	}
}

func TestLoadRejectsDamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	_ = os.WriteFile(path, []byte("clusters: [unclosed"), 0o600)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("want an error naming the file, got %v", err)
	}
	_ = os.WriteFile(path, []byte("clusters: 3\n"), 0o600)
	if _, err := Load(path); err == nil {
		t.Fatal("clusters: 3 should not load")
	}
}

func TestAddValidates(t *testing.T) {
	c := &Config{}
	if _, err := c.Add(Cluster{Name: "a", Context: "ctx-a", Pools: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Cluster{
		{Name: "Bad_Name", Context: "x"},
		{Name: "b", Context: ""},
		{Name: "b", Context: "x", Pools: []string{"not a pool"}},
		{Name: "b", Context: "x", Pools: []string{"web"}}, // a's
	} {
		_, err := c.Add(bad)
		if !inputerr.Is(err) {
			t.Errorf("Add(%+v) = %v; want an input error", bad, err)
		}
	}
	if len(c.Clusters) != 1 {
		t.Fatalf("refused adds changed the config: %+v", c.Clusters)
	}
	// Re-adding replaces, and may keep its own pools.
	if replaced, err := c.Add(Cluster{Name: "a", Context: "ctx-a2", Pools: []string{"web", "gpu"}}); err != nil || !replaced {
		t.Fatalf("re-add: %v, replaced=%v", err, replaced)
	}
	// One default at a time.
	_, _ = c.Add(Cluster{Name: "b", Context: "ctx-b", Default: true})
	_, _ = c.Add(Cluster{Name: "c", Context: "ctx-c", Default: true})
	if d, _ := c.Default(); d.Name != "c" {
		t.Fatalf("default is %q, want c", d.Name)
	}
	if b, _ := c.Get("b"); b.Default {
		t.Fatal("b is still default")
	}
	if got := strings.Join(c.Names(), ","); got != "a,b,c" {
		t.Fatalf("names %s", got)
	}
}

func TestForPool(t *testing.T) {
	c := &Config{}
	if _, ok := c.ForPool("web"); ok {
		t.Fatal("empty config maps no pool")
	}
	_, _ = c.Add(Cluster{Name: "a", Context: "ctx-a", Pools: []string{"web"}})
	_, _ = c.Add(Cluster{Name: "b", Context: "ctx-b", Pools: []string{"gpu"}})
	if cl, ok := c.ForPool("gpu"); !ok || cl.Name != "b" {
		t.Fatalf("gpu -> %+v %v", cl, ok)
	}
	if _, ok := c.ForPool("other"); ok {
		t.Fatal("no default: other pools map nowhere")
	}
	_, _ = c.Add(Cluster{Name: "b", Context: "ctx-b", Pools: []string{"gpu"}, Default: true})
	if ctx, ok := c.ContextForPool("other"); !ok || ctx != "ctx-b" {
		t.Fatalf("other -> %q %v; want the default's context", ctx, ok)
	}
	if _, err := c.Remove("zzz"); err == nil {
		t.Fatal("removing an unknown cluster should fail")
	}
}

type fakeConnector struct {
	asked []string
	fail  map[string]error
}

func (f *fakeConnector) connect(ctx string) (kubernetes.Interface, string, error) {
	f.asked = append(f.asked, ctx)
	if err := f.fail[ctx]; err != nil {
		return nil, "", err
	}
	return fake.NewClientset(), "ns-" + ctx, nil
}

func TestResolve(t *testing.T) {
	empty := &Config{}
	fc := &fakeConnector{}
	ts, err := Resolve(empty, fc.connect, Selection{CurrentContext: "laptop"})
	if err != nil || len(ts) != 1 || !ts[0].Implicit || ts[0].Name != "laptop" || fc.asked[0] != "" {
		t.Fatalf("nothing configured: %+v %v (asked %q); want the command line's context", ts, err, fc.asked)
	}

	c := &Config{}
	_, _ = c.Add(Cluster{Name: "a", Context: "ctx-a", Pools: []string{"web"}, Default: true})
	_, _ = c.Add(Cluster{Name: "b", Context: "ctx-b", Pools: []string{"gpu"}})
	fc = &fakeConnector{fail: map[string]error{"ctx-b": errors.New("context missing")}}
	ts, err = Resolve(c, fc.connect, Selection{CurrentContext: "laptop"})
	if err != nil || len(ts) != 2 || ts[0].Err != nil || ts[1].Err == nil || ts[0].Namespace != "ns-ctx-a" {
		t.Fatalf("all clusters: %+v %v", ts, err)
	}
	if _, err := Resolve(c, fc.connect, Selection{Only: "zzz"}); err == nil {
		t.Fatal("an unknown --cluster should fail")
	}
	ts, err = Resolve(c, fc.connect, Selection{ExplicitContext: "ctx-a"})
	if err != nil || len(ts) != 1 || ts[0].Name != "a" || !ts[0].Implicit {
		t.Fatalf("--context of a configured cluster: %+v %v; want it under the cluster's name", ts, err)
	}
	if _, err := Resolve(c, fc.connect, Selection{Only: "a", ExplicitContext: "ctx-b"}); err == nil {
		t.Fatal("--cluster a with --context ctx-b should fail")
	}

	// Pools.
	fc = &fakeConnector{}
	if t1, err := ResolvePool(c, fc.connect, "gpu", Selection{}); err != nil || t1.Name != "b" {
		t.Fatalf("gpu: %+v %v", t1, err)
	}
	if t1, err := ResolvePool(c, fc.connect, "unmapped", Selection{}); err != nil || t1.Name != "a" {
		t.Fatalf("unmapped pool goes to the default: %+v %v", t1, err)
	}
	if _, err := ResolvePool(c, fc.connect, "gpu", Selection{Only: "a"}); err == nil {
		t.Fatal("gpu is b's: --cluster a should be refused")
	}
	if _, err := ResolvePool(c, fc.connect, "gpu", Selection{ExplicitContext: "ctx-a"}); err == nil {
		t.Fatal("gpu is b's: --context ctx-a should be refused")
	}
	noDefault := &Config{}
	_, _ = noDefault.Add(Cluster{Name: "b", Context: "ctx-b", Pools: []string{"gpu"}})
	if _, err := ResolvePool(noDefault, fc.connect, "web", Selection{}); err == nil {
		t.Fatal("a pool no cluster holds, with no default, should be refused")
	}
}
