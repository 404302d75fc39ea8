package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Every path and method gets 503 with Retry-After and no-store; a browser
// (Accept: text/html) gets an HTML page naming the app, escaped; anything
// else a line of plain text.
func TestHandlerAnswers503OnEveryPath(t *testing.T) {
	h := handler(`Shop <"A&B">`)
	plain := "Shop <\"A&B\"> is down for maintenance. Please try again in a few minutes.\n"
	html := "<!doctype html><title>Down for maintenance</title><h1>Down for maintenance</h1>" +
		"<p>Shop &lt;&quot;A&amp;B&quot;&gt; is down for maintenance. Please try again in a few minutes.</p>\n"
	for _, c := range []struct {
		method, path, accept string
		wantType, wantBody   string
	}{
		{"GET", "/", "", "text/plain; charset=utf-8", plain},
		{"GET", "/checkout/42?x=1", "*/*", "text/plain; charset=utf-8", plain},
		{"POST", "/api/orders", "application/json", "text/plain; charset=utf-8", plain},
		{"HEAD", "/healthz", "", "text/plain; charset=utf-8", plain},
		{"GET", "/", "text/html,application/xhtml+xml,*/*;q=0.8", "text/html; charset=utf-8", html},
		{"DELETE", "/a/b/c", "text/html", "text/html; charset=utf-8", html},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		res := w.Result()
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s %s: status %d, want 503", c.method, c.path, res.StatusCode)
		}
		for k, want := range map[string]string{"Retry-After": "120", "Cache-Control": "no-store", "Content-Type": c.wantType} {
			if got := res.Header.Get(k); got != want {
				t.Errorf("%s %s (Accept %q): %s = %q, want %q", c.method, c.path, c.accept, k, got, want)
			}
		}
		if got := w.Body.String(); got != c.wantBody {
			t.Errorf("%s %s (Accept %q): body %q, want %q", c.method, c.path, c.accept, got, c.wantBody)
		}
	}
}

func TestHTMLEscape(t *testing.T) {
	if got, want := htmlEscape(`<a href="x">&</a>`), "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"; got != want {
		t.Errorf("htmlEscape = %q, want %q", got, want)
	}
}

// $TUG_APP names the app ("This app" when unset); $PORT is the port
// (8080 when unset), on every interface.
func TestConfigReadsAppAndPort(t *testing.T) {
	for _, c := range []struct {
		env           map[string]string
		wantApp, addr string
	}{
		{nil, "This app", ":8080"},
		{map[string]string{"TUG_APP": "shop"}, "shop", ":8080"},
		{map[string]string{"PORT": "5000"}, "This app", ":5000"},
		{map[string]string{"TUG_APP": "shop", "PORT": "9090", "HOST": "ignored"}, "shop", ":9090"},
	} {
		var asked []string
		app, addr := config(func(k string) string { asked = append(asked, k); return c.env[k] })
		if app != c.wantApp || addr != c.addr {
			t.Errorf("env %v: config = %q, %q, want %q, %q", c.env, app, addr, c.wantApp, c.addr)
		}
		if strings.Join(asked, ",") != "TUG_APP,PORT" {
			t.Errorf("env %v: read %v, want TUG_APP and PORT", c.env, asked)
		}
	}
}

// closeNotifier is a listener that says when it is closed, as Shutdown
// does first.
type closeNotifier struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeNotifier) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// run serves the page on the listener it is given; when its context ends
// (the signal) it stops taking connections, lets a request in flight get
// its answer, and returns nil.
func TestRunServesUntilCancelledAndDrains(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &closeNotifier{Listener: inner, closed: make(chan struct{})}
	url := "http://" + inner.Addr().String()

	entered, release := make(chan struct{}, 1), make(chan struct{})
	page := handler("shop")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		page.ServeHTTP(w, r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, ln, h) }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Get(url + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 503 || res.Header.Get("Retry-After") != "120" || string(body) != "shop is down for maintenance. Please try again in a few minutes.\n" {
		t.Fatalf("served %d %v %q", res.StatusCode, res.Header, body)
	}

	type answer struct {
		code int
		body string
		err  error
	}
	slow := make(chan answer, 1)
	go func() {
		res, err := client.Get(url + "/slow")
		if err != nil {
			slow <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		slow <- answer{res.StatusCode, string(b), err}
	}()
	<-entered
	cancel()
	<-ln.closed // shutting down: no new connections
	select {
	case err := <-ran:
		t.Fatalf("run returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	a := <-slow
	if a.err != nil || a.code != 503 || !strings.HasPrefix(a.body, "shop is down") {
		t.Errorf("request in flight at shutdown: %d %q %v", a.code, a.body, a.err)
	}
	if err := <-ran; err != nil {
		t.Errorf("run = %v, want nil after a shutdown", err)
	}
	if _, err := client.Get(url + "/after"); err == nil {
		t.Error("still serving after run returned")
	}
}

// run fails when it cannot serve on the listener.
func TestRunFailsWhenServeFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = run(context.Background(), ln, handler("shop"))
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("run on a closed listener = %v, want its error", err)
	}
}

// serve listens on $PORT: a port in use is an error; once the signal
// came it returns nil.
func TestServeListensOnPort(t *testing.T) {
	busy, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())
	env := map[string]string{"TUG_APP": "shop", "PORT": port}
	if err := serve(context.Background(), func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), port) {
		t.Errorf("serve on port %s in use = %v, want its error", port, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env["PORT"] = "0"
	if err := serve(ctx, func(k string) string { return env[k] }); err != nil {
		t.Errorf("serve after the signal = %v, want nil", err)
	}
}
