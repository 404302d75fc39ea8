//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tug.dev/tug/bench/internal/benchkit"
)

// load is one rotation under load: how long it took, and the requests
// the clients sent meanwhile and how many of them failed.
type load struct {
	Wall          time.Duration
	Total, Failed int
}

// underLoad waits until the apps of ns run their 2 units each and nothing
// else (a unit of the last rotation may still be stopping) and answer from
// the database through the router; then it runs rotate while 4 clients,
// two per app, send requests to the apps through the router, and counts
// the requests that failed (an error, a status other than 200, or an
// answer that is not the database's).
func underLoad(ns string, hosts []string, rotate func() (time.Time, error)) (load, error) {
	for _, a := range []string{"a", "b"} {
		env.WaitUnits(ns, a, "web", 2)
	}
	client := routerClient()
	for _, h := range hosts {
		if err := answers(client, h); err != nil {
			return load{}, err
		}
	}
	var stop atomic.Bool
	var total, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for !stop.Load() {
				total.Add(1)
				if ok, _ := get(client, hosts[i%len(hosts)]); !ok {
					failed.Add(1)
				}
				time.Sleep(10 * time.Millisecond) // a request loop's pace, as curl's would be
			}
		})
	}
	start := time.Now()
	until, err := rotate()
	wall := time.Since(start)
	// the requests go on until the old login is refused: a unit still
	// using it then would fail them, and they count
	time.Sleep(time.Until(until))
	stop.Store(true)
	wg.Wait()
	return load{Wall: wall, Total: int(total.Load()), Failed: int(failed.Load())}, err
}

// routerClient sends every request to the local router's HTTP port,
// whatever the URL's host, on a new connection each time (so a request
// meets the routes as they are now).
func routerClient() *http.Client {
	addr := net.JoinHostPort(*router, "80")
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

// get asks the app at host for a row of its database.
func get(client *http.Client, host string) (bool, string) {
	resp, err := client.Get("http://" + host + "/")
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.HasPrefix(string(b), "db ok"), fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// answers waits until host answers from the database 5 times in a row (a
// minute at most).
func answers(client *http.Client, host string) error {
	deadline := time.Now().Add(time.Minute)
	last := ""
	for run := 0; run < 5; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer from its database through the router: %s", host, last)
		}
		ok, said := get(client, host)
		if ok {
			run++
		} else {
			run, last = 0, said
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func medianWall(ls []load) time.Duration {
	walls := make([]time.Duration, len(ls))
	for i, l := range ls {
		walls[i] = l.Wall
	}
	return benchkit.Median(walls).Round(time.Millisecond)
}

func sumFailed(ls []load) (failed, total int) {
	for _, l := range ls {
		failed, total = failed+l.Failed, total+l.Total
	}
	return failed, total
}

// loads are the rounds as "WALL ms (FAILED/TOTAL failed)".
func loads(ls []load) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%d ms (%d/%d failed)", l.Wall.Milliseconds(), l.Failed, l.Total)
	}
	return strings.Join(parts, ", ")
}
