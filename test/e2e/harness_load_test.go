package e2e

// Harness: a load generator that sends requests through the router at a
// steady rate and tallies the answers per phase (the no-request-lost and
// blue-green tests).

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

const (
	loadRate     = 25  // requests a second, per client
	phaseMinimum = 300 // requests, per client and phase
)

// tally is what one client got in one phase.
type tally struct {
	total, ok   int
	maintenance int            // the maintenance page (503 with Retry-After)
	failed      map[string]int // reason -> count: non-2xx, errors, timeouts
	versions    map[string]int // what answered: "v1", "v2"
	units       map[string]int // which unit (pod) answered, for shares
}

func (t tally) failures() int {
	n := 0
	for _, c := range t.failed {
		n += c
	}
	return n
}

func (t tally) String() string {
	reasons := make([]string, 0, len(t.failed))
	for r, c := range t.failed {
		reasons = append(reasons, fmt.Sprintf("%d× %s", c, r))
	}
	sort.Strings(reasons)
	return fmt.Sprintf("%d requests: %d ok, %d maintenance page, %d failed %v, versions %v", t.total, t.ok, t.maintenance, t.failures(), reasons, t.versions)
}

// load sends requests for url through the router at loadRate a second, each
// request on its own goroutine (a slow answer never lowers the rate), and
// tallies every answer under the phase current when it was sent.
type load struct {
	name   string
	client *http.Client
	url    string

	// last is when each unit (by pod name) last answered, for the drain
	// measurement
	last map[string]time.Time

	mu     sync.Mutex
	phase  string
	tally  map[string]*tally
	order  []string // the phases, as entered
	start  map[string]time.Time
	ended  time.Time
	stop   chan struct{}
	done   chan struct{}
	flight sync.WaitGroup
}

func startLoad(r router, name, url string, keepAlive bool) *load {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(r.ip, port))
	}
	l := &load{
		name: name, url: url,
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext: dial, DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 16,
		}},
		last:  map[string]time.Time{},
		phase: "start", order: []string{"start"}, tally: map[string]*tally{}, start: map[string]time.Time{"start": time.Now()},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

func (l *load) run() {
	defer close(l.done)
	tick := time.NewTicker(time.Second / loadRate) // pacing, not synchronisation
	defer tick.Stop()
	deadline := time.After(15 * time.Minute) // bounded, whatever happens
	for {
		select {
		case <-l.stop:
			l.flight.Wait()
			return
		case <-deadline:
			l.flight.Wait()
			return
		case <-tick.C:
		}
		l.mu.Lock()
		phase := l.phase
		l.mu.Unlock()
		l.flight.Add(1)
		go func() {
			defer l.flight.Done()
			l.record(phase, l.once())
		}()
	}
}

// answer is one request's outcome: a version and the unit that answered,
// "maintenance", or a failure.
type answer struct {
	version, unit, failure string
	at                     time.Time
}

func (l *load) once() answer {
	resp, err := l.client.Get(l.url)
	if err != nil {
		return answer{failure: errorKind(err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return answer{failure: "reading the body: " + errorKind(err)}
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		return answer{version: "maintenance"}
	case resp.StatusCode != http.StatusOK:
		return answer{failure: fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))}
	}
	// "sample v2 from steady-web-abc-xyz"
	f := strings.Fields(string(b))
	if len(f) != 4 || f[0] != "sample" {
		return answer{failure: fmt.Sprintf("200 but not the app: %q", b)}
	}
	return answer{version: f[1], unit: f[3], at: time.Now()}
}

// errorKind shortens an error to what it says (no addresses or ports, so
// equal failures count together).
func errorKind(err error) string {
	s := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "EOF", "Client.Timeout", "i/o timeout", "broken pipe"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	return s
}

func (l *load) record(phase string, a answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tally[phase]
	if t == nil {
		t = &tally{failed: map[string]int{}, versions: map[string]int{}, units: map[string]int{}}
		l.tally[phase] = t
	}
	t.total++
	switch {
	case a.failure != "":
		t.failed[a.failure]++
	case a.version == "maintenance":
		t.maintenance++
	default:
		t.ok++
		t.versions[a.version]++
		t.units[a.unit]++
		if a.at.After(l.last[a.unit]) {
			l.last[a.unit] = a.at
		}
	}
}

// enter makes every request sent from now on count under phase.
func (l *load) enter(phase string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = phase
	l.order = append(l.order, phase)
	l.start[phase] = time.Now()
}

// rate is how many requests a second the phase got.
func (l *load) rate(phase string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.ended
	for i, p := range l.order {
		if p == phase && i+1 < len(l.order) {
			end = l.start[l.order[i+1]]
		}
	}
	t := l.tally[phase]
	if t == nil || end.IsZero() {
		return 0
	}
	return float64(t.total) / end.Sub(l.start[phase]).Seconds()
}

// counted is the phase's tally so far (a copy).
func (l *load) counted(phase string) tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tally[phase]
	if t == nil {
		return tally{failed: map[string]int{}, versions: map[string]int{}, units: map[string]int{}}
	}
	c := *t
	c.failed, c.versions, c.units = map[string]int{}, map[string]int{}, maps.Clone(t.units)
	for k, v := range t.failed {
		c.failed[k] = v
	}
	for k, v := range t.versions {
		c.versions[k] = v
	}
	return c
}

func (l *load) halt() {
	l.mu.Lock()
	l.ended = time.Now()
	l.mu.Unlock()
	close(l.stop)
	<-l.done
}
