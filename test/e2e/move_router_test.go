package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A move between clusters takes the app's routes along, through the local
// router: its domain answers from the new copy's units right after `app pool
// set` returns, its own URL becomes the new namespace's (the two "clusters"
// are two namespaces of the one local cluster behind one Gateway), and the
// old URL stops being routed. Requests to the domain during the move are
// counted and logged; what is asserted is what the router serves once the
// command has returned.
func TestMoveKeepsItsRoutesThroughTheRouter(t *testing.T) {
	pc := newPoolClusters(t)
	h, beta, cc := pc.Alpha, pc.Beta, pc.clusterContexts
	r := h.localRouter()
	ca := clusterCA(t, h.Config)
	must := func(args ...string) Result {
		t.Helper()
		res := h.TugRun(Run{Args: args, Env: cc.Env(cc.Kubeconfig)})
		if res.Code != 0 {
			t.Fatalf("tug %s: %s", strings.Join(args, " "), res)
		}
		return res
	}
	must("cluster", "add", "alpha", "--context", "alpha", "--pool", "pa")
	must("cluster", "add", "beta", "--context", "beta", "--pool", "pb")
	must("app", "create", "shop", "--pool", "pa")
	must("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	host := "move-" + h.NS + ".example.test"
	must("domain", "add", "shop", host)

	// servedFrom is the namespace of the unit that answered the domain
	// through the router ("sample v1 from POD").
	servedFrom := func() string {
		t.Helper()
		code, body, _, err := r.get(nil, "http://"+host+"/")
		if err != nil || code != 200 {
			t.Fatalf("%s through the router: %d %q %v", host, code, body, err)
		}
		_, pod, ok := strings.Cut(strings.TrimSpace(body), " from ")
		if !ok {
			t.Fatalf("%s answered %q, not the sample app", host, body)
		}
		for _, ns := range []string{h.NS, beta.NS} {
			_, err := h.Client.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
			if err == nil {
				return ns
			}
			if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		t.Fatalf("%s was answered by %q, a unit of neither copy", host, pod)
		return ""
	}
	if ns := servedFrom(); ns != h.NS {
		t.Fatalf("before the move the domain is served from %s, want alpha's %s", ns, h.NS)
	}
	oldURL := "https://" + r.appHost("shop", h.NS) + "/"
	if code, _, _, err := r.get(ca, oldURL+"version"); err != nil || code != 200 {
		t.Fatalf("the app's URL before the move: %d %v", code, err)
	}

	// requests to the domain while the app moves, 20 a second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, failed int
	var failures []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			code, body, _, err := r.get(nil, "http://"+host+"/version")
			sent++
			if err != nil || code != 200 || !strings.Contains(body, "v1") {
				failed++
				if len(failures) < 5 {
					failures = append(failures, strings.TrimSpace(body)+" "+outcome(code, err))
				}
			}
		}
	}()
	must("app", "pool", "set", "shop", "pb")
	close(stop)
	wg.Wait()
	t.Logf("during the move: %d of %d requests to %s failed (first: %q)", failed, sent, host, failures)

	// right after the move: the domain is the new copy's
	if ns := servedFrom(); ns != beta.NS {
		t.Errorf("right after the move the domain is served from %s, want beta's %s", ns, beta.NS)
	}
	newURL := "https://" + r.appHost("shop", beta.NS) + "/"
	var info struct {
		Namespace string   `json:"namespace"`
		URLs      []string `json:"urls"`
	}
	if err := json.Unmarshal([]byte(must("app", "info", "shop", "-o", "json").Stdout), &info); err != nil {
		t.Fatal(err)
	}
	if want := []string{newURL, "http://" + host + "/"}; info.Namespace != beta.NS || !slices.Equal(info.URLs, want) {
		t.Errorf("app info after the move: namespace %s, urls %q; want %s, %q", info.Namespace, info.URLs, beta.NS, want)
	}
	if code, body, _, err := r.get(ca, newURL+"version"); err != nil || code != 200 || !strings.Contains(body, "v1") {
		t.Errorf("the app's new URL right after the move: %d %q %v", code, body, err)
	}
	// the old copy's route went with it
	h.Eventually(30*time.Second, "the old URL is no longer routed", func() (bool, error) {
		code, _, _, err := r.get(ca, oldURL+"version")
		return err == nil && code == 404, nil
	})
}

// outcome says how a request ended: its status, or its error.
func outcome(code int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("status %d", code)
}
