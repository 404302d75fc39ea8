package cli

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tug.dev/tug/pkg/kube"
)

type recordingRT struct {
	deadlines map[string]bool
}

func (r *recordingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	_, ok := req.Context().Deadline()
	r.deadlines[req.Method+" "+req.URL.String()] = ok
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}, Request: req}, nil
}

// TestRequestGuardTimesOnlyNonStreams: reads and writes get the deadline;
// watches, followed logs and upgraded sessions (exec, attach,
// port-forward) never do, so they are not cut.
func TestRequestGuardTimesOnlyNonStreams(t *testing.T) {
	rec := &recordingRT{deadlines: map[string]bool{}}
	g := newRequestGuard(rec, 30*time.Second, nil)
	const base = "https://k8s.example:6443"
	cases := []struct {
		method, url string
		header      http.Header
		want        bool
	}{
		{"GET", base + "/api/v1/namespaces/dev/configmaps?labelSelector=a", nil, true},
		{"POST", base + "/api/v1/namespaces/dev/configmaps", nil, true},
		{"GET", base + "/api/v1/namespaces/dev/pods/p/log?container=web", nil, true},
		{"GET", base + "/api/v1/namespaces/dev/pods?watch=true&resourceVersion=5", nil, false},
		{"GET", base + "/api/v1/watch/namespaces/dev/pods", nil, false},
		{"GET", base + "/api/v1/namespaces/dev/pods/p/log?follow=true", nil, false},
		{"GET", base + "/api/v1/namespaces/dev/pods/p/exec?command=sh&stdin=true", nil, false},
		{"POST", base + "/api/v1/namespaces/dev/pods/p/attach?stdin=true", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}, false},
		{"POST", base + "/api/v1/namespaces/dev/pods/p/portforward", nil, false},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, c.url, nil)
		if c.header != nil {
			req.Header = c.header
		}
		resp, err := g.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.url, err)
		}
		resp.Body.Close()
		if got := rec.deadlines[c.method+" "+c.url]; got != c.want {
			t.Errorf("%s %s: deadline %v, want %v", c.method, c.url, got, c.want)
		}
	}
	// --request-timeout 0: no deadline at all
	rec.deadlines = map[string]bool{}
	g = newRequestGuard(rec, 0, nil)
	req, _ := http.NewRequest("GET", cases[0].url, nil)
	if _, err := g.RoundTrip(req); err != nil || rec.deadlines["GET "+cases[0].url] {
		t.Errorf("timeout 0 still set a deadline (%v)", err)
	}
}

// TestRequestGuardTimesOut: a server that accepts and never answers ends
// in a RequestTimeoutError, not a hang.
func TestRequestGuardTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	g := newRequestGuard(http.DefaultTransport, 50*time.Millisecond, nil)
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/namespaces", nil)
	_, err := g.RoundTrip(req)
	var te *kube.RequestTimeoutError
	if !errors.As(err, &te) || te.After != 50*time.Millisecond {
		t.Fatalf("got %v, want a RequestTimeoutError after 50ms", err)
	}
}

func TestRequestGuardRetriesUnavailableReadsOnly(t *testing.T) {
	var hits atomic.Int32
	failFirst := int32(2)
	retryAfter := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= failFirst {
			if retryAfter {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	g := newRequestGuard(http.DefaultTransport, time.Minute, nil)
	g.backoff = func(int) time.Duration { return time.Millisecond }
	do := func(method string) *http.Response {
		t.Helper()
		hits.Store(0)
		req, _ := http.NewRequest(method, srv.URL+"/api/v1/namespaces/dev/configmaps", nil)
		resp, err := g.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := do("GET"); resp.StatusCode != 200 || hits.Load() != 3 {
		t.Errorf("GET after two 503s: status %d after %d requests, want 200 after 3", resp.StatusCode, hits.Load())
	}
	if resp := do("POST"); resp.StatusCode != 503 || hits.Load() != 1 {
		t.Errorf("POST: status %d after %d requests; a write must not be retried", resp.StatusCode, hits.Load())
	}
	failFirst = 10
	if resp := do("GET"); resp.StatusCode != 503 || hits.Load() != 4 {
		t.Errorf("GET always 503: status %d after %d requests, want 503 after 1+3 retries", resp.StatusCode, hits.Load())
	}
	failFirst, retryAfter = 2, true
	if resp := do("GET"); resp.StatusCode != 503 || hits.Load() != 1 {
		t.Errorf("503 with Retry-After: status %d after %d requests; client-go retries those itself", resp.StatusCode, hits.Load())
	}
}

// syncBuffer is a bytes.Buffer safe to read while the notice writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWaitNotice: a slow answer makes tug say what it waits for, once
// when piped, as a spinner that is erased afterwards on a terminal.
func TestWaitNotice(t *testing.T) {
	for _, tty := range []bool{false, true} {
		ios, _, _, _ := TestIOStreams()
		errOut := &syncBuffer{}
		ios.ErrOut = errOut
		ios.SetStderrTTY(tty)
		ios.SetColorDisabled(true)
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			_, _ = io.WriteString(w, "ok")
		}))
		g := newRequestGuard(http.DefaultTransport, time.Minute, newWaitNotice(ios, srv.URL))
		g.noticeAfter = time.Millisecond
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequest("GET", srv.URL+"/api/v1/namespaces", nil)
			resp, err := g.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		want := "waiting for the API server at " + srv.URL
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(errOut.String(), want) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		srv.Close()
		got := errOut.String()
		if !strings.Contains(got, want) {
			t.Fatalf("tty=%v: no notice; stderr %q", tty, got)
		}
		if tty {
			if !strings.HasSuffix(got, "\r\x1b[K") {
				t.Errorf("the spinner must be erased once answered: %q", got)
			}
		} else if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, want+"\n") {
			t.Errorf("piped: want one line, got %q", got)
		}
	}
}

func TestParseRequestTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"": DefaultRequestTimeout, "0": 0, "5": 5 * time.Second, "1m": time.Minute, "250ms": 250 * time.Millisecond} {
		if got, err := parseRequestTimeout(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"x", "-1s", "5x"} {
		if _, err := parseRequestTimeout(in); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
	if NewConfigFlags().RequestTimeout != "30s" {
		t.Errorf("the default --request-timeout is %q, want 30s", NewConfigFlags().RequestTimeout)
	}
}
