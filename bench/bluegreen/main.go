//go:build unix

// Command bluegreen benchmarks a rollback to a blue-green release's kept
// units against an ordinary rollback of the same app: from the start of
// `tug release rollback APP` to the first answer of the previous release
// through the local router. Rounds interleave (blue-green, ordinary, ...):
// each deploys v2 (with --strategy blue-green, or a rolling update) over v1
// and rolls it back.
//
//	go run ./bench/bluegreen -tug bin/tug -kubectl PATH -kubeconfig FILE -router 10.200.0.100 [-rounds 3]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	rounds = flag.Int("rounds", 3, "measured rounds of each")
	router = flag.String("router", "10.200.0.100", "the local router's address (make -s cluster-router); HTTP on port 80")
	settle = flag.Duration("settle", 2500*time.Millisecond, "how long after v2 answers alone the rollback starts: longer than the router's configuration throttle (Traefik's default 2 s)")
	env    *benchkit.Env
)

const (
	ns  = "bench-bluegreen"
	app = "bench"
)

func main() {
	env = benchkit.Setup(true)
	benchkit.Check("bluegreen", run())
}

func run() error {
	ctx := context.Background()
	defer env.Namespace(ctx, ns)()
	env.MustTug(ns, "app", "create", app)
	env.MustTug(ns, "app", "deploy", app, "--image", benchkit.SampleImage+":v1")
	env.MustTug(ns, "app", "scale", app, "web=2")
	var info struct {
		URLs []string `json:"urls"`
	}
	if err := json.Unmarshal([]byte(env.MustTug(ns, "app", "info", app, "-o", "json")), &info); err != nil || len(info.URLs) == 0 {
		return fmt.Errorf("the app's URL through the router (does the cluster settings' Gateway route it?): %v", err)
	}
	u, err := url.Parse(info.URLs[0])
	if err != nil {
		return err
	}
	var kept, ordinary []time.Duration
	for range *rounds {
		for _, strategy := range []string{"blue-green", "rolling"} {
			env.MustTug(ns, "app", "deploy", app, "--image", benchkit.SampleImage+":v2", "--strategy", strategy)
			d, err := rollback(ctx, u.Hostname())
			if err != nil {
				return err
			}
			if strategy == "blue-green" {
				kept = append(kept, d)
			} else {
				ordinary = append(ordinary, d)
			}
		}
	}
	k, o := benchkit.Median(kept).Round(time.Millisecond), benchkit.Median(ordinary).Round(time.Millisecond)
	ratio, rs := benchkit.Ratio(k.Seconds(), o.Seconds())
	env.Emit(benchkit.Row{Group: "Deploys", Benchmark: fmt.Sprintf("release rollback to the first answer of the previous release through the router, 2 web units (median of %d each, interleaved)", *rounds),
		Tug:     "after a blue-green deploy (the previous units kept): " + benchkit.Ms(k),
		Kubectl: "tug, after a rolling deploy (the previous release's units start again): " + benchkit.Ms(o),
		Ratio:   rs, Goal: "<= 0.3x", Met: ratio <= 0.3, Requests: "-",
		Note: fmt.Sprintf("both columns are tug: the kept units only need the route switched back; each round in turn: kept %s, ordinary %s", benchkit.MsList(kept), benchkit.MsList(ordinary))})
	return nil
}

// rollback waits until only v2 answers for host, then runs tug release
// rollback while asking the router every 10 ms, and returns how long
// after the command started v1 answered from then on: the first of the
// answers that were all v1 until the command returned and 20 more after.
func rollback(ctx context.Context, host string) (time.Duration, error) {
	addr := net.JoinHostPort(*router, "80")
	answer := routerAnswer(ctx, addr, host)
	// only v2 first: the rolling deploy's old units may still be stopping
	if err := until(func() bool { return strings.Contains(answer(), "sample v2") }, 20); err != nil {
		return 0, fmt.Errorf("v2 never answered alone for %s: %w", host, err)
	}
	// the router applies changes at most once per throttle period
	// (Traefik's 2 s): start outside the one the deploy opened, as
	// bench/route does, so both rollbacks start alike
	time.Sleep(*settle)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := benchkit.Run(env.TugCmd(ns, "release", "rollback", app))
		done <- err
	}()
	var since time.Duration // when the run of v1 answers began; 0: not in one
	after := -1             // v1 answers since the command returned; -1: still running
	for after < 20 && time.Since(start) < time.Minute {
		at := time.Since(start)
		if strings.Contains(answer(), "sample v1") {
			if since == 0 {
				since = at
			}
			if after >= 0 {
				after++
			}
		} else {
			since, after = 0, min(after, 0)
		}
		select {
		case err := <-done:
			if err != nil {
				return 0, err
			}
			after = 0
		default:
		}
		time.Sleep(10 * time.Millisecond) // a request loop's pace, as curl's would be
	}
	if after < 20 {
		return 0, fmt.Errorf("v1 did not answer alone for %s through %s within a minute", host, addr)
	}
	return since, nil
}

// routerAnswer asks the router at addr for host's page, as a browser
// would that resolved host to the router: each time a new connection (no
// keep-alive), so every answer is routed afresh. It returns the page, ""
// when there is none.
func routerAnswer(ctx context.Context, addr, host string) func() string {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	return func() string {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/", nil)
		if err != nil {
			return ""
		}
		resp, err := client.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
}

// until asks ok every 10 ms until it holds n times in a row (a minute at most).
func until(ok func() bool, n int) error {
	deadline := time.Now().Add(time.Minute)
	for run := 0; run < n; {
		if time.Now().After(deadline) {
			return fmt.Errorf("not %d times in a row within a minute", n)
		}
		if ok() {
			run++
		} else {
			run = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
