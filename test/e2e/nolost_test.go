package e2e

import (
	"context"
	"fmt"
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
	url := "http://" + r.appHost(name, h.NS) + "/"
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
