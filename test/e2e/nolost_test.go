package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/render"
)

// No request lost (issue 29 item 8): requests through the router at 25 a
// second on each of four clients, for the whole of a rolling deploy, a
// scale-down and maintenance off. Units must leave the route before they
// stop: not one request may fail.
//
// The clients come in through the Gateway (an HTTPRoute) and through an
// Ingress (Traefik's two providers read endpoints differently), each with
// and without keep-alive. Without it every request is a new connection to
// the router, so none rides on one opened before a change; with it the
// client's connection to the router is reused, as browsers do. Either way
// the router pools its own connections to the units, which is where a unit
// that stops under a kept-alive connection shows: here both clients lost
// the same share of requests when the units had no stop delay.

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
		t = &tally{failed: map[string]int{}, versions: map[string]int{}}
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
		return tally{failed: map[string]int{}, versions: map[string]int{}}
	}
	c := *t
	c.failed, c.versions = map[string]int{}, map[string]int{}
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

// stops records when each unit was told to stop: its deletion, when the
// kubelet starts its preStop hook and the endpoint controllers mark it
// terminating.
type stops struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (h *H) watchStops(ctx context.Context, selector string) *stops {
	s := &stops{at: map[string]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			w, err := h.Client.CoreV1().Pods(h.NS).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond): // retry pacing
				}
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || p.DeletionTimestamp == nil {
					continue
				}
				// when the watch saw it: the deletion timestamp has whole
				// seconds only, and this is milliseconds after the fact
				now := time.Now()
				s.mu.Lock()
				if _, seen := s.at[p.Name]; !seen {
					s.at[p.Name] = now
				}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// drain says, for each unit that stopped, how long after it was told to
// stop the router still sent it requests (the last answer from it).
func drain(s *stops, loads []*load) (worst time.Duration, units []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pod, stop := range s.at {
		var last time.Time
		for _, l := range loads {
			l.mu.Lock()
			if t := l.last[pod]; t.After(last) {
				last = t
			}
			l.mu.Unlock()
		}
		if last.IsZero() {
			continue
		}
		d := last.Sub(stop).Round(10 * time.Millisecond)
		units = append(units, fmt.Sprintf("%s %v", pod, d))
		worst = max(worst, d)
	}
	sort.Strings(units)
	return worst, units
}

func TestNoRequestLost(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	const name = "steady"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", sampleV1)
	h.mustTug("app", "scale", name, "web=3")
	h.waitUnits(name, "web", 3, sampleV1)
	// two ways in through the router: the app's URL on the Gateway (an
	// HTTPRoute) and a domain on the router's IngressClass (an Ingress)
	url := "http://" + name + "-" + h.NS + "." + r.appsDomain + "/"
	ingressHost := name + "-" + h.NS + ".ingress.test"
	h.mustTug("domain", "add", name, ingressHost, "--ingress-class", "traefik")
	// both commands return once the router serves the app: no waiting here
	for _, u := range []string{url, "http://" + ingressHost + "/"} {
		if code, body, _, err := r.get(nil, u); err != nil || code != 200 || !strings.Contains(body, "sample v1") {
			t.Fatalf("%s: %d %q %v", u, code, body, err)
		}
	}
	stopped := h.watchStops(ctx, "tug.dev/app="+name+",tug.dev/process=web")

	loads := []*load{
		startLoad(r, "gateway, keep-alive off", url, false),
		startLoad(r, "gateway, keep-alive on", url, true),
		startLoad(r, "ingress, keep-alive off", "http://"+ingressHost+"/", false),
		startLoad(r, "ingress, keep-alive on", "http://"+ingressHost+"/", true),
	}
	halted := false
	halt := func() {
		if !halted {
			halted = true
			for _, l := range loads {
				l.halt()
			}
		}
	}
	defer halt()
	enter := func(phase string) {
		for _, l := range loads {
			l.enter(phase)
		}
	}
	// a phase lasts until its condition holds and every client has sent
	// phaseMinimum requests in it
	enough := func(phase string) {
		h.t.Helper()
		h.Eventually(2*time.Minute, fmt.Sprintf("%d requests per client in phase %s", phaseMinimum, phase), func() (bool, error) {
			for _, l := range loads {
				if c := l.counted(phase); c.total < phaseMinimum {
					return false, fmt.Errorf("%s: %d", l.name, c.total)
				}
			}
			return true, nil
		})
	}
	noMaintenancePage := func() {
		h.t.Helper()
		h.WaitPods("tug.dev/app="+name+",tug.dev/kind=maintenance", 90*time.Second, "the maintenance page gone", func(p []corev1.Pod) bool { return len(p) == 0 })
	}

	// A rolling deploy, v1 -> v2 of three units: the phase ends when the
	// old units have stopped, not when the command returns (they are
	// still stopping then).
	enter("deploy")
	h.mustTug("app", "deploy", name, "--image", sampleV2)
	h.waitUnits(name, "web", 3, sampleV2)
	enough("deploy")

	// A scale-down, 3 -> 1: until the two units have stopped.
	enter("scale-down")
	h.mustTug("app", "scale", name, "web=1")
	h.waitUnits(name, "web", 1, sampleV2)
	enough("scale-down")

	// Maintenance on, then off. While off runs the page may still answer;
	// from when it returns every request gets the app.
	enter("maintenance on")
	h.mustTug("app", "maintenance", name, "on")
	enter("maintenance off (running)")
	h.mustTug("app", "maintenance", name, "off")
	enter("maintenance off")
	noMaintenancePage()
	enough("maintenance off")

	// Maintenance off right after the units were asked for, before they
	// are ready (stopped for a migration, say, then started again with
	// --no-wait): the page must answer until they serve.
	enter("maintenance on, units stopped")
	h.mustTug("app", "maintenance", name, "on")
	h.mustTug("app", "scale", name, "web=0")
	h.waitUnits(name, "web", 0, sampleV2)
	h.mustTug("app", "scale", name, "web=2", "--no-wait")
	enter("maintenance off, units starting (running)")
	h.mustTug("app", "maintenance", name, "off")
	enter("maintenance off, units starting")
	noMaintenancePage()
	enough("maintenance off, units starting")
	halt()

	// With no web unit at all there is nothing to hand the traffic to:
	// maintenance off is refused and the page keeps answering.
	h.mustTug("app", "maintenance", name, "on")
	h.mustTug("app", "scale", name, "web=0")
	if res := h.Tug("app", "maintenance", name, "off"); res.Code != 1 || !strings.Contains(res.Stderr, "stays in maintenance") {
		t.Errorf("maintenance off with no web unit: want exit 1 saying the app stays in maintenance; got %s", res)
	}
	if code, body, _, err := r.get(nil, url); err != nil || code != 503 || !strings.Contains(body, "maintenance") {
		t.Errorf("after a refused maintenance off: %d %q %v; want the maintenance page", code, body, err)
	}

	for _, l := range loads {
		for _, phase := range l.order[1:] {
			t.Logf("%s, %s: %s (%.1f a second)", l.name, phase, l.counted(phase).String(), l.rate(phase))
		}
	}
	worst, units := drain(stopped, loads)
	t.Logf("the router's last request to a stopping unit came %v after it was told to stop (preStop sleep of %ds): %s", worst, render.WebStopDelaySeconds, strings.Join(units, ", "))
	for _, l := range loads {
		// from the app alone
		for _, phase := range []string{"deploy", "scale-down", "maintenance off", "maintenance off, units starting"} {
			c := l.counted(phase)
			if c.failures() != 0 || c.maintenance != 0 || c.total < phaseMinimum {
				t.Errorf("%s, %s: want 0 failed of at least %d, all from the app; got %s", l.name, phase, phaseMinimum, c.String())
			}
		}
		// the page or the app, never the router's own error
		for _, phase := range []string{"maintenance on", "maintenance off (running)", "maintenance on, units stopped", "maintenance off, units starting (running)"} {
			if c := l.counted(phase); c.failures() != 0 {
				t.Errorf("%s, %s: want only the maintenance page or the app; got %s", l.name, phase, c.String())
			}
		}
		if c := l.counted("deploy"); c.versions["v2"] == 0 {
			t.Errorf("%s: no answer from v2 during the deploy: %s", l.name, c.String())
		}
	}
}
