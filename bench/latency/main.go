//go:build unix

// Command latency measures requests through the local router (Traefik, the
// app's URL on the Gateway) to an app of 2 web units: their latency p50 and
// p99 while tug rolls the app out (v1 -> v2 -> v1 ..., from the deploy's
// start until the replaced units have stopped) against the same app at
// rest, and how many failed. There is no kubectl peer: the row compares
// tug's rollout with no rollout.
//
//	go run ./bench/latency -tug bin/tug -kubeconfig FILE -router 10.200.0.100 [-requests 300]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/bench/internal/benchkit"
	"tug.dev/tug/pkg/route"
)

var (
	routerIP = flag.String("router", "", "the router's address (test/cluster/cluster.sh router)")
	requests = flag.Int("requests", 300, "requests at rest, and at least as many during rollouts")
	rate     = flag.Int("rate", 50, "requests a second")
	env      *benchkit.Env
)

const (
	ns   = "bench-latency"
	app  = "bench"
	unit = 2
)

func main() {
	env = benchkit.Setup(true)
	benchkit.Check("latency", run())
}

func run() error {
	if *routerIP == "" {
		return fmt.Errorf("-router is required (test/cluster/cluster.sh router)")
	}
	ctx := context.Background()
	cm, err := env.Client.CoreV1().ConfigMaps("kube-public").Get(ctx, "tug-cluster-settings", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the cluster settings: %w", err)
	}
	domain := cm.Data["appsDomain"]
	if domain == "" {
		return fmt.Errorf("the cluster settings name no apps domain: %v", cm.Data)
	}
	defer env.Namespace(ctx, ns)()
	env.MustTug(ns, "app", "create", app)
	env.MustTug(ns, "app", "deploy", app, "--image", benchkit.SampleImage+":v1")
	env.MustTug(ns, "app", "scale", app, fmt.Sprintf("web=%d", unit))
	env.WaitUnits(ns, app, "web", unit)
	url := "http://" + route.AppHost(app, ns, domain) + "/"
	c := client(*routerIP)

	rest := sample(c, url, func(stop <-chan struct{}, sent func() int) {
		for sent() < *requests {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	rollouts := 0
	during := sample(c, url, func(_ <-chan struct{}, sent func() int) {
		for i := 0; sent() < *requests; i++ {
			env.MustTug(ns, "app", "deploy", app, "--image", benchkit.SampleImage+":"+[]string{"v2", "v1"}[i%2])
			env.WaitUnits(ns, app, "web", unit) // until the replaced units stopped
			rollouts++
		}
	})

	fmt.Printf("at rest: %s\nduring %d rollouts: %s\n", rest, rollouts, during)
	_, ratio := benchkit.Ratio(float64(during.p(99)), float64(rest.p(99)))
	env.Emit(benchkit.Row{Group: "Traffic", Benchmark: fmt.Sprintf("request latency through the router during a rollout, %d units (%d rollouts, %d requests a second)", unit, rollouts, *rate),
		Tug:     fmt.Sprintf("rollout: p50 %s, p99 %s, %d of %d failed", benchkit.Ms(during.p(50)), benchkit.Ms(during.p(99)), during.failed, during.total()),
		Kubectl: fmt.Sprintf("no kubectl peer; at rest: p50 %s, p99 %s, %d of %d failed", benchkit.Ms(rest.p(50)), benchkit.Ms(rest.p(99)), rest.failed, rest.total()),
		Ratio:   "p99 " + ratio, Goal: "0 failed", Met: during.failed == 0 && rest.failed == 0, Requests: "-"})
	return nil
}

// client sends every request to the router's address, whatever the URL's
// host, and keeps connections alive (so the figures are the router's and
// the app's, not TCP set-up).
func client(ip string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
		},
		MaxIdleConnsPerHost: 32,
	}}
}

// latencies are the answered requests' times and the failed count.
type latencies struct {
	ok     []time.Duration
	failed int
}

func (l latencies) total() int { return len(l.ok) + l.failed }

func (l latencies) p(q int) time.Duration {
	if len(l.ok) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), l.ok...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*q/100]
}

func (l latencies) String() string {
	return fmt.Sprintf("%d requests, %d failed, p50 %s, p99 %s", l.total(), l.failed, benchkit.Ms(l.p(50)), benchkit.Ms(l.p(99)))
}

// sample sends requests to url at -rate a second (each on its own
// goroutine, so a slow answer does not slow the pace) while during runs,
// and returns what they got. during gets how many were sent so far.
func sample(c *http.Client, url string, during func(stop <-chan struct{}, sent func() int)) latencies {
	var (
		mu  sync.Mutex
		out latencies
		n   int
		wg  sync.WaitGroup
	)
	stop := make(chan struct{})
	paced := make(chan struct{})
	go func() {
		defer close(paced)
		tick := time.NewTicker(time.Second / time.Duration(*rate))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mu.Lock()
			n++
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				ok := get(c, url)
				took := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				if ok {
					out.ok = append(out.ok, took)
				} else {
					out.failed++
				}
			}()
		}
	}()
	during(stop, func() int { mu.Lock(); defer mu.Unlock(); return n })
	close(stop)
	<-paced
	wg.Wait()
	return out
}

// get is one request: true when the app answered 200.
func get(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "latency: %v\n", err)
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK && strings.HasPrefix(string(b), "sample ")
}
