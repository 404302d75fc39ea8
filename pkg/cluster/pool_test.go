package cluster

import (
	"errors"
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

func poolConfig() *Config {
	return &Config{Clusters: []Cluster{
		{Name: "prod", Context: "prod-admin", Pools: []string{"web"}, Default: true},
		{Name: "gpu", Context: "gpu-admin", Pools: []string{"gpu"}},
	}}
}

// wantErr: "" for no error, else a part of a usage error's message.
func checkErr(t *testing.T, what string, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v, want no error", what, err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s: %v, want %q", what, err, wantErr)
	case wantErr != "" && !inputerr.Is(err):
		t.Errorf("%s: %v is not a usage error", what, err)
	}
}

func TestCheckPoolContext(t *testing.T) {
	broken := errors.New("kubeconfig unreadable")
	for _, tc := range []struct {
		name    string
		cfg     *Config
		pool    string
		current string
		wantErr string
	}{
		{"no pool", poolConfig(), "", "elsewhere", ""},
		{"nothing configured", &Config{}, "web", "elsewhere", ""},
		{"pool's cluster", poolConfig(), "gpu", "gpu-admin", ""},
		{"other cluster", poolConfig(), "gpu", "prod-admin", `pool "gpu" is in cluster "gpu" (context "gpu-admin"), not in context "prod-admin"`},
		{"unnamed pool goes to the default", poolConfig(), "batch", "gpu-admin", `pool "batch" is in cluster "prod"`},
		{"unnamed pool, default's context", poolConfig(), "batch", "prod-admin", ""},
		{"no default: the pool is in no cluster", &Config{Clusters: []Cluster{{Name: "gpu", Context: "gpu-admin", Pools: []string{"gpu"}}}}, "batch", "x", ""},
	} {
		asked := false
		err := tc.cfg.CheckPoolContext(tc.pool, func() (string, error) { asked = true; return tc.current, nil })
		checkErr(t, tc.name, err, tc.wantErr)
		if !asked && tc.wantErr != "" {
			t.Errorf("%s: the current context was not asked for", tc.name)
		}
	}
	// the current context is read only when a rule needs it, and its error
	// is the check's
	if err := (&Config{}).CheckPoolContext("web", func() (string, error) { return "", broken }); err != nil {
		t.Errorf("nothing configured, unreadable kubeconfig: %v", err)
	}
	if err := poolConfig().CheckPoolContext("web", func() (string, error) { return "", broken }); !errors.Is(err, broken) {
		t.Errorf("unreadable kubeconfig: %v", err)
	}
}

func TestRouteToPool(t *testing.T) {
	for _, tc := range []struct {
		name, pool, explicit string
		cfg                  *Config
		want, wantErr        string
	}{
		{"no pool", "", "", poolConfig(), "", ""},
		{"named pool", "gpu", "", poolConfig(), "gpu-admin", ""},
		{"default cluster", "batch", "", poolConfig(), "prod-admin", ""},
		{"nothing configured", "gpu", "", &Config{}, "", ""},
		{"--context agrees", "gpu", "gpu-admin", poolConfig(), "", ""},
		{"--context disagrees", "gpu", "prod-admin", poolConfig(), "", "create the app there: leave out --context"},
	} {
		got, err := tc.cfg.RouteToPool(tc.pool, tc.explicit)
		checkErr(t, tc.name, err, tc.wantErr)
		if got != tc.want {
			t.Errorf("%s: RouteToPool = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckNodePool(t *testing.T) {
	prod, gpu := poolConfig().Clusters[0], poolConfig().Clusters[1]
	for _, tc := range []struct {
		name, pool string
		in         Cluster
		wantErr    string
	}{
		{"pool of the node's cluster", "gpu", gpu, ""},
		{"pool of another cluster", "gpu", prod, `pool "gpu" belongs to cluster "gpu", but node "n1" is in cluster "prod"`},
		{"pool nobody names", "batch", gpu, ""},
		{"implicit target on the owner's context", "gpu", Cluster{Name: "(current)", Context: "gpu-admin"}, ""},
	} {
		checkErr(t, tc.name, poolConfig().CheckNodePool(tc.pool, tc.in, "n1"), tc.wantErr)
	}
}

func TestCheckNew(t *testing.T) {
	known := func(kubeContext string) (bool, error) { return kubeContext == "prod-admin", nil }
	broken := errors.New("kubeconfig unreadable")
	for _, tc := range []struct {
		name    string
		cl      Cluster
		has     func(string) (bool, error)
		wantErr string
	}{
		{"good", Cluster{Name: "prod", Context: "prod-admin"}, known, ""},
		{"bad name", Cluster{Name: "Prod!", Context: "prod-admin"}, known, `invalid cluster name "Prod!"`},
		{"no context", Cluster{Name: "prod"}, known, `missing --context: the kubeconfig context that reaches cluster "prod"`},
		{"unknown context", Cluster{Name: "prod", Context: "nope"}, known, `context "nope" not found in the kubeconfig`},
	} {
		checkErr(t, tc.name, tc.cl.CheckNew(tc.has), tc.wantErr)
	}
	if err := (Cluster{Name: "prod", Context: "x"}).CheckNew(func(string) (bool, error) { return false, broken }); !errors.Is(err, broken) {
		t.Errorf("unreadable kubeconfig: %v", err)
	}
}
