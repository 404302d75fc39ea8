//go:build unix

// Command route benchmarks how soon a new host answers through the local
// router: from the start of `tug domain add APP HOST` to the first 200 for
// HOST through the router (tug returns once the router serves it, so the
// first request after it should already get one), against `kubectl apply`
// of the same HTTPRoute (the one tug wrote for the app, with HOST as its
// only hostname) followed by a request loop until 200. Rounds interleave
// (tug, kubectl, tug, ...) after one unmeasured warm-up of each; every
// round routes a host of its own, removed again (untimed) before the next.
//
// The router applies configuration changes at most once per throttle
// period (Traefik's providers.providersThrottleDuration, 2 s by default):
// a change that comes soon after the previous one waits for the rest of
// the period. So that neither tool starts in a period the other's last
// change opened, each measured change starts -settle after the router was
// seen applying the previous change of this benchmark (other users of the
// shared cluster still change routes at random moments, for both alike).
//
//	go run ./bench/route -tug bin/tug -kubectl PATH -kubeconfig FILE -router 10.200.0.100 [-rounds 3]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	rounds = flag.Int("rounds", 3, "measured rounds of each")
	router = flag.String("router", "10.200.0.100", "the local router's address (make -s cluster-router); HTTP on port 80")
	settle = flag.Duration("settle", 2500*time.Millisecond, "how long after the router applied a change the next one starts: longer than its configuration throttle (Traefik's default 2 s)")
	env    *benchkit.Env
)

const (
	ns  = "bench-route"
	app = "bench"
	// how often the loop asks, and for how long
	pollEvery = 10 * time.Millisecond
	pollFor   = 60 * time.Second
)

var httpRoutes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

func main() {
	env = benchkit.Setup(true)
	benchkit.Check("route", run())
}

func run() error {
	ctx := context.Background()
	defer env.Namespace(ctx, ns)()
	env.MustTug(ns, "app", "create", app)
	env.MustTug(ns, "app", "deploy", app, "--image", benchkit.SampleImage+":v1")

	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// tug's route for the app, as a template for kubectl's
	tugRoute, err := dyn.Resource(httpRoutes).Namespace(ns).Get(ctx, app, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the app's HTTPRoute (does the cluster settings' Gateway route it?): %w", err)
	}
	dir, err := os.MkdirTemp("", "bench-route")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	m := &measured{requests: "-"}
	for i := 0; i <= *rounds; i++ {
		if err := m.tugRound(ctx, i); err != nil {
			return err
		}
		if err := m.kubectlRound(ctx, dir, tugRoute, i); err != nil {
			return err
		}
	}
	tugTotal, tugReturn, kubectlTotal, requests := m.tugTotal, m.tugReturn, m.kubectlTotal, m.requests
	t, k := median(tugTotal), median(kubectlTotal)
	ratio, rs := benchkit.Ratio(t.Seconds(), k.Seconds())
	fmt.Printf("domain add to the first 200 through the router (median of %d): tug %s (returns at %s), kubectl apply + request loop %s: %s\n",
		*rounds, t, median(tugReturn), k, rs)
	env.Emit(benchkit.Row{Group: "Traffic", Benchmark: fmt.Sprintf("a new host to its first 200 through the router (median of %d each, interleaved)", *rounds),
		Tug:     fmt.Sprintf("tug domain add, then the first 200: %s (tug returns at %s)", benchkit.Ms(t), benchkit.Ms(median(tugReturn))),
		Kubectl: "kubectl apply of the same HTTPRoute, then requests every 10 ms until 200: " + benchkit.Ms(k),
		Ratio:   rs, Goal: "<= 1.0x", Met: ratio <= 1.0, Requests: requests,
		Note: fmt.Sprintf("tug also takes the app's lock, records the domain and waits for the route's status and a request through the router before it returns; each round in turn: tug %s, kubectl %s",
			benchkit.MsList(tugTotal), benchkit.MsList(kubectlTotal))})
	return nil
}

// measured is what the rounds measured; round 0 is the warm-up.
type measured struct {
	tugTotal, tugReturn, kubectlTotal []time.Duration
	requests                          string // tug's requests, counted in the warm-up
}

// tugRound adds a host with tug domain add and waits for its first 200.
func (m *measured) tugRound(ctx context.Context, i int) error {
	host := fmt.Sprintf("tug-%d.%s.bench.test", i, ns)
	args := []string{"domain", "add", app, host}
	if i == 0 { // the warm-up counts tug's requests
		args = append(args, "-v", "6")
	}
	start := time.Now()
	r, err := benchkit.Run(env.TugCmd(ns, args...))
	if err != nil {
		return err
	}
	returned := time.Since(start)
	if err := await(ctx, host, http.StatusOK); err != nil {
		return fmt.Errorf("after tug domain add %s: %w", host, err)
	}
	total := time.Since(start)
	if i == 0 {
		n, _ := benchkit.Requests(r.Stderr)
		m.requests = fmt.Sprint(n)
	} else {
		m.tugTotal, m.tugReturn = append(m.tugTotal, total), append(m.tugReturn, returned)
	}
	env.MustTug(ns, "domain", "remove", app, host)
	return quiet(ctx, host)
}

// kubectlRound applies the same route with kubectl and waits for its
// first 200.
func (m *measured) kubectlRound(ctx context.Context, dir string, tugRoute *unstructured.Unstructured, i int) error {
	host := fmt.Sprintf("kubectl-%d.%s.bench.test", i, ns)
	file, err := routeFile(dir, tugRoute, fmt.Sprintf("kubectl-%d", i), host)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := benchkit.Run(env.KubectlCmd(ns, "apply", "-f", file)); err != nil {
		return err
	}
	if err := await(ctx, host, http.StatusOK); err != nil {
		return fmt.Errorf("after kubectl apply of %s: %w", host, err)
	}
	if i > 0 {
		m.kubectlTotal = append(m.kubectlTotal, time.Since(start))
	}
	env.MustKubectl(ns, "delete", "-f", file)
	return quiet(ctx, host)
}

// routeFile writes tug's route as kubectl's: named name, for host only.
func routeFile(dir string, tugRoute *unstructured.Unstructured, name, host string) (string, error) {
	spec, _, _ := unstructured.NestedMap(tugRoute.Object, "spec")
	spec["hostnames"] = []any{host}
	route := map[string]any{
		"apiVersion": tugRoute.GetAPIVersion(), "kind": tugRoute.GetKind(),
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}
	b, err := json.Marshal(route)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, name+".json")
	return file, os.WriteFile(file, b, 0o644)
}

// quiet waits until the router no longer routes host (its 404), then
// -settle, so that the next change starts with the router's throttle
// period over.
func quiet(ctx context.Context, host string) error {
	if err := await(ctx, host, http.StatusNotFound); err != nil {
		return fmt.Errorf("after removing %s: %w", host, err)
	}
	time.Sleep(*settle)
	return nil
}

// await asks the router for host every pollEvery until it answers want,
// each request on a new connection, as a curl loop would.
func await(ctx context.Context, host string, want int) error {
	addr := net.JoinHostPort(*router, "80")
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	deadline := time.Now().Add(pollFor)
	last := ""
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("no %d for %s through %s within %s (last: %s)", want, host, addr, pollFor, last)
}

func median(ds []time.Duration) time.Duration { return benchkit.Median(ds).Round(time.Millisecond) }
