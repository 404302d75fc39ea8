package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

func start(t *testing.T) *Proxy {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			f := w.(http.Flusher)
			for i := 0; r.Context().Err() == nil; i++ {
				fmt.Fprintf(w, "{\"type\":\"ADDED\",\"n\":%d}\n", i)
				f.Flush()
				time.Sleep(time.Millisecond)
			}
			return
		}
		fmt.Fprint(w, "upstream "+r.URL.Path)
	}))
	t.Cleanup(up.Close)
	p, err := Start(&rest.Config{Host: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func get(t *testing.T, url string) (*http.Response, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := (&http.Transport{}).RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestFaults(t *testing.T) {
	p := start(t)
	p.Add(Rule{Path: "/busy", Fault: TooMany, RetryAfter: 3, Count: 1})
	p.Add(Rule{Path: "/down", Fault: Unavailable})
	p.Add(Rule{Path: "/broken", Fault: ServerError})
	p.Add(Rule{Path: "/reset", Fault: Reset})
	p.Add(Rule{Path: "/w", Watch: "yes", Fault: Gone, Count: 1})
	p.Add(Rule{Path: "/w", Watch: "yes", Fault: CloseEarly, AfterBytes: 50})
	p.Add(Rule{Path: "/stall", Fault: Stall})
	p.Add(Rule{Path: "/second", Fault: ServerError, Skip: 1, Count: 1})

	resp, body, err := get(t, p.URL+"/busy")
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(body, `"code":429`) {
		t.Errorf("busy: %v %v %q", resp, err, body)
	}
	// Count 1: the second request passes
	if _, body, _ := get(t, p.URL+"/busy"); body != "upstream /busy" {
		t.Errorf("busy again: %q", body)
	}
	if resp, _, _ := get(t, p.URL+"/down"); resp.StatusCode != 503 {
		t.Errorf("down: %d", resp.StatusCode)
	}
	if resp, _, _ := get(t, p.URL+"/broken"); resp.StatusCode != 500 {
		t.Errorf("broken: %d", resp.StatusCode)
	}
	if _, _, err := get(t, p.URL+"/reset"); err == nil {
		t.Error("reset: got an answer")
	}
	if _, body, _ := get(t, p.URL+"/w?watch=true"); !strings.Contains(body, `"code":410`) {
		t.Errorf("gone: %q", body)
	}
	if _, body, err := get(t, p.URL+"/w?watch=true"); err != nil || len(body) != 50 {
		t.Errorf("close early: %v, %d bytes %q", err, len(body), body)
	}
	// the rules for watches leave other requests alone
	if _, body, _ := get(t, p.URL+"/w"); body != "upstream /w" {
		t.Errorf("not a watch: %q", body)
	}
	if _, _, err := get(t, p.URL+"/stall"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stall: %v, want the client's deadline", err)
	}
	if p.Injected(TooMany) != 1 || p.Injected(Stall) != 1 || p.Injected(Reset) != 1 {
		t.Errorf("injected: %v", p.Log())
	}
	for i, want := range []int{200, 500, 200} {
		if resp, _, _ := get(t, p.URL+"/second"); resp.StatusCode != want {
			t.Errorf("/second #%d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	p.Clear()
	if _, body, _ := get(t, p.URL+"/down"); body != "upstream /down" {
		t.Errorf("after Clear: %q", body)
	}
}

// Lost: the server gets the request, the client never hears; Body picks
// requests by what they write.
func TestLostAndBody(t *testing.T) {
	got := make(chan string, 10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + r.URL.Path + " " + string(b)
		fmt.Fprint(w, "upstream "+r.URL.Path)
	}))
	t.Cleanup(up.Close)
	p, err := Start(&rest.Config{Host: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.Add(Rule{Method: "PUT", Path: "/rec", Body: `"superseded"`, Fault: Lost, Count: 1})
	put := func(body string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "PUT", p.URL+"/rec", strings.NewReader(body))
		resp, err := (&http.Transport{}).RoundTrip(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	// another body passes, and the server gets it whole
	if body, err := put(`{"a":1}`); err != nil || body != "upstream /rec" {
		t.Errorf("a write without the body the rule wants: %q %v", body, err)
	}
	if s := <-got; s != `PUT /rec {"a":1}` {
		t.Errorf("the server got %q", s)
	}
	if _, err := put(`{"superseded":true}`); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("lost: %v, want the client's deadline", err)
	}
	if s := <-got; s != `PUT /rec {"superseded":true}` {
		t.Errorf("lost: the server got %q", s)
	}
	if p.Injected(Lost) != 1 {
		t.Errorf("injected: %v", p.Log())
	}
}

// Hold: the server answers, the client hears only after Release. Down
// refuses new connections and drops kept-alive ones, keeping a held
// answer's; Up serves again at the same address.
func TestHoldDownUp(t *testing.T) {
	got := make(chan string, 10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Method + " " + r.URL.Path
		fmt.Fprint(w, "upstream "+r.URL.Path)
	}))
	t.Cleanup(up.Close)
	p, err := Start(&rest.Config{Host: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	fetch := func(path string) (string, error) {
		resp, err := client.Get(p.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	// a kept-alive connection, for Down to drop
	if body, err := fetch("/before"); err != nil || body != "upstream /before" {
		t.Fatalf("before: %q %v", body, err)
	}
	<-got
	p.Add(Rule{Path: "/held", Fault: Hold, Count: 1})
	answer := make(chan string, 1)
	go func() {
		body, err := (&http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}).Get(p.URL + "/held")
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(body.Body)
		body.Body.Close()
		answer <- string(b)
	}()
	if s := <-got; s != "GET /held" {
		t.Fatalf("the server got %q", s)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return p.Injected(Hold) == 1, nil
	}); err != nil {
		t.Fatalf("the held request never counted: %v", p.Log())
	}
	select {
	case a := <-answer:
		t.Fatalf("the client heard %q before Release", a)
	default:
	}
	p.Down()
	if _, err := fetch("/while-down"); err == nil {
		t.Error("a request while down got an answer")
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(p.URL, "http://"), time.Second); err == nil {
		t.Error("a new connection while down was accepted")
	}
	p.Release()
	if a := <-answer; a != "upstream /held" {
		t.Errorf("the held answer after Release: %q", a)
	}
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	if body, err := fetch("/after"); err != nil || body != "upstream /after" {
		t.Errorf("after Up: %q %v", body, err)
	}
	if s := <-got; s != "GET /after" {
		t.Errorf("the server got %q, want only the request after Up", s)
	}

	// Drop: the server does it, the client never hears of it.
	p.Clear()
	p.Add(Rule{Path: "/dropped", Fault: Hold, Count: 1})
	go func() { // a new connection: a GET reset on a reused one is retried
		resp, err := (&http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}).Get(p.URL + "/dropped")
		if err == nil {
			resp.Body.Close()
		}
		answer <- fmt.Sprint(err)
	}()
	if s := <-got; s != "GET /dropped" {
		t.Fatalf("the server got %q", s)
	}
	p.Drop()
	if a := <-answer; a == "<nil>" {
		t.Error("a dropped answer reached the client")
	}
}
