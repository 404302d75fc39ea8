// Package faultproxy is a reverse proxy between tug and a Kubernetes API
// server that misbehaves on purpose: the e2e suite puts it in tug's
// kubeconfig and adds rules (return 429 with Retry-After, 503, 500, reset the
// connection, close a watch early, answer 410 Gone to a watch, stall) to see
// that tug survives each fault with the truth recorded.
//
// Every request not matched by a rule is passed to the API server
// unchanged, streaming included (watches, logs -f, and the protocol upgrades
// of exec and attach).
package faultproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fault is what a rule does to a request it matches.
type Fault int

const (
	// TooMany answers 429 Too Many Requests with Retry-After.
	TooMany Fault = iota
	// Unavailable answers 503 Service Unavailable (with Retry-After when
	// the rule sets RetryAfter).
	Unavailable
	// ServerError answers 500 Internal Server Error.
	ServerError
	// Reset takes the connection and closes it without an answer.
	Reset
	// CloseEarly passes the request on, then ends the response cleanly
	// after AfterBytes bytes of body or After, whichever comes first: a
	// watch or log stream the server closed.
	CloseEarly
	// Gone answers a watch with 200 and one ERROR event carrying 410 Gone
	// (Expired), as the API server does for a resourceVersion too old.
	Gone
	// Stall never answers: the request hangs until the client gives up
	// (or the proxy closes).
	Stall
	// Lost passes the request on and then never answers: the server did
	// the work, and the client hangs as with Stall, never hearing of it
	// (a connection lost after a write). It counts as injected once the
	// server has answered, so a test can kill the client at exactly the
	// point after that write.
	Lost
	// Hold passes the request on and holds the server's answer (its
	// status and headers have come; a watch's events keep coming behind
	// them) until Release, then passes it on. It counts as injected once
	// the server has answered: a test can act at the exact moment the
	// server has done the request and the client does not know yet (stop
	// the server, say), then let the answer go.
	Hold
	// NotFound answers 404 NotFound, as the API server does for a resource
	// it does not serve (a CRD that is not installed).
	NotFound
)

func (f Fault) String() string {
	return [...]string{"429", "503", "500", "reset", "close-early", "410-gone", "stall", "lost", "hold", "404"}[f]
}

// Rule matches requests and applies its fault to the first Count of them
// (every one when Count is 0).
type Rule struct {
	Method string // "" matches every method
	Path   string // a substring of the URL path; "" matches every path
	// Watch: "yes" matches only watch requests (?watch=true), "no" only
	// the others, "" both.
	Watch string
	// Query is a substring the raw query must contain ("follow=true").
	Query string
	// Body is a substring the request body must contain (a write that
	// sets one field, say).
	Body  string
	Fault Fault
	// Skip lets the first Skip matching requests through untouched; Count
	// then counts the faulted ones after them.
	Skip  int
	Count int

	RetryAfter int           // seconds, for TooMany (default 1) and Unavailable
	AfterBytes int           // CloseEarly: end after this many body bytes (0: no limit)
	After      time.Duration // CloseEarly: end after this long (0: no limit)

	hits, skipped int // guarded by Proxy.mu
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	// URL is where clients reach the proxy (http://127.0.0.1:PORT).
	URL string

	upstream *url.URL
	rt       http.RoundTripper
	rp       *httputil.ReverseProxy
	srv      *http.Server
	ln       net.Listener

	mu       sync.Mutex
	rules    []*Rule
	injected map[Fault]int
	log      []string
	stalls   chan struct{} // closed by Close: releases stalled requests
	released chan struct{} // closed by Release or Drop: lets held requests end
	dropped  bool          // Drop: held answers are lost, not passed on
	down     bool          // between Down and Up
	conns    map[net.Conn]http.ConnState
	held     map[net.Conn]bool // connections whose answer a Hold keeps
}

// Start proxies to the API server cfg reaches, with cfg's credentials
// (client certificates or token), serving plain HTTP on 127.0.0.1.
func Start(cfg *rest.Config) (*Proxy, error) {
	up, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	if up.Scheme == "" {
		up.Scheme = "https"
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil {
		tlsCfg = &tls.Config{}
	}
	// HTTP/1.1 only, so exec/attach upgrades pass through.
	tlsCfg.NextProtos = []string{"http/1.1"}
	base := &http.Transport{
		Proxy:               nil,
		TLSClientConfig:     tlsCfg,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConnsPerHost: 32,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}
	rt, err := rest.HTTPWrappersForConfig(cfg, base)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), upstream: up, rt: rt, ln: ln,
		injected: map[Fault]int{}, stalls: make(chan struct{}), released: make(chan struct{}),
		conns: map[net.Conn]http.ConnState{}, held: map[net.Conn]bool{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(up)
			r.Out.Host = up.Host
		},
		Transport:     rt,
		FlushInterval: -1,                         // watches and logs stream
		ErrorLog:      log.New(io.Discard, "", 0), // a client that gives up is no news
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second,
		ConnState: p.connState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		}}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

type connKey struct{}

// connState tracks the client connections, so Down can close them; one
// that goes idle while the proxy is down is closed then.
func (p *Proxy) connState(c net.Conn, st http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
		delete(p.held, c)
		return
	case http.StateIdle:
		if p.down {
			delete(p.conns, c)
			_ = c.Close()
			return
		}
	}
	p.conns[c] = st
}

// Down makes the proxy look like an API server that stopped: it stops
// listening (new connections are refused) and closes every client
// connection but those whose answer a Hold keeps, which close once that
// answer has gone (Release). Requests already passed on to the server end
// as the server ends them.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return
	}
	p.down = true
	_ = p.ln.Close()
	for c := range p.conns {
		if !p.held[c] {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
}

// Up listens again, on the same address, after Down: an API server that
// started again. Connections to the server made before are dropped.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down {
		return nil
	}
	ln, err := net.Listen("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		return err
	}
	if ci, ok := p.rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
	p.ln, p.down = ln, false
	go func() { _ = p.srv.Serve(ln) }()
	return nil
}

// Release lets every held answer go, and every later Hold pass at once.
func (p *Proxy) Release() { p.release(false) }

// Drop ends every held request without its answer (the connection is
// reset): a server that did the work and died before it could say so.
// Later Holds end the same way, until Clear.
func (p *Proxy) Drop() { p.release(true) }

func (p *Proxy) release(drop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.released:
	default:
		p.dropped = drop
		close(p.released)
	}
}

// Close stops the proxy, releasing stalled requests.
func (p *Proxy) Close() {
	p.mu.Lock()
	select {
	case <-p.stalls:
	default:
		close(p.stalls)
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	_ = p.srv.Close()
}

// Add installs a rule; rules are tried in the order added.
func (p *Proxy) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rr := r
	p.rules = append(p.rules, &rr)
}

// Clear removes every rule, and arms Hold again after a Release.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
	select {
	case <-p.released:
		p.released, p.dropped = make(chan struct{}), false
	default:
	}
}

// Injected is how many requests got fault f so far.
func (p *Proxy) Injected(f Fault) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injected[f]
}

// Log lists the faults injected, "503 GET /api/v1/...", in order.
func (p *Proxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// WriteKubeconfig writes a kubeconfig at path whose current context reaches
// the API server through the proxy, in namespace ns.
func (p *Proxy) WriteKubeconfig(path, ns string) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["faulty"] = &clientcmdapi.Cluster{Server: p.URL}
	c.AuthInfos["faulty"] = &clientcmdapi.AuthInfo{}
	c.Contexts["faulty"] = &clientcmdapi.Context{Cluster: "faulty", AuthInfo: "faulty", Namespace: ns}
	c.CurrentContext = "faulty"
	if err := os.MkdirAll(dirOf(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*c, path)
}

func dirOf(path string) string {
	if i := strings.LastIndex(path, "/"); i > 0 {
		return path[:i]
	}
	return "."
}

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1" || strings.Contains(r.URL.Path, "/watch/")
}

// readBody reads r's body when a rule matches on bodies, and puts it back
// for the server.
func (p *Proxy) readBody(r *http.Request) []byte {
	p.mu.Lock()
	need := false
	for _, rule := range p.rules {
		need = need || rule.Body != ""
	}
	p.mu.Unlock()
	if !need || r.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// match returns the rule for r (whose body is body), counting the hit, or nil.
func (p *Proxy) match(r *http.Request, body []byte) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	watch := isWatch(r)
	for _, rule := range p.rules {
		switch {
		case rule.Method != "" && !strings.EqualFold(rule.Method, r.Method):
		case rule.Path != "" && !strings.Contains(r.URL.Path, rule.Path):
		case rule.Query != "" && !strings.Contains(r.URL.RawQuery, rule.Query):
		case rule.Body != "" && !bytes.Contains(body, []byte(rule.Body)):
		case rule.Watch == "yes" && !watch, rule.Watch == "no" && watch:
		case rule.Count > 0 && rule.hits >= rule.Count:
		case rule.skipped < rule.Skip:
			rule.skipped++
			return nil
		default:
			rule.hits++
			if rule.Fault != Lost && rule.Fault != Hold { // counted once the server has it
				p.record(rule.Fault, r)
			}
			c := *rule
			return &c
		}
	}
	return nil
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down { // a request on a connection made before Down: it dies
		abort(w)
		return
	}
	rule := p.match(r, p.readBody(r))
	if rule == nil {
		p.rp.ServeHTTP(w, r)
		return
	}
	switch rule.Fault {
	case TooMany:
		ra := rule.RetryAfter
		if ra <= 0 {
			ra = 1
		}
		w.Header().Set("Retry-After", fmt.Sprint(ra))
		status(w, http.StatusTooManyRequests, "TooManyRequests", "the fault proxy says: too many requests, please try again later")
	case Unavailable:
		if rule.RetryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(rule.RetryAfter))
		}
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the fault proxy says: the server is currently unable to handle the request")
	case ServerError:
		status(w, http.StatusInternalServerError, "InternalError", "the fault proxy says: an error on the server has prevented the request from succeeding")
	case NotFound:
		status(w, http.StatusNotFound, "NotFound", "the fault proxy says: the server could not find the requested resource")
	case Reset:
		abort(w)
	case Gone:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the fault proxy says: too old resource version","reason":"Expired","code":410}}`+"\n")
	case Stall:
		p.stall(r)
	case Lost:
		// The client going away must not stop the request on its way to
		// the server, and Injected counts it only once the server answered.
		out := r.Clone(context.WithoutCancel(r.Context()))
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host, out.Host = p.upstream.Scheme, p.upstream.Host, p.upstream.Host
		if resp, err := p.rt.RoundTrip(out); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		p.mu.Lock()
		p.record(Lost, r)
		p.mu.Unlock()
		p.stall(r)
	case CloseEarly:
		p.closeEarly(w, r, rule)
	case Hold:
		p.hold(w, r)
	}
}

// abort takes the connection and resets it without an answer.
func abort(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, not FIN
		}
		_ = conn.Close()
	}
}

// hold passes r on, counts it injected once the server has answered, and
// passes the answer on after Release (or ends with the client or the proxy).
func (p *Proxy) hold(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	p.mu.Lock()
	if c != nil {
		p.held[c] = true
	}
	released := p.released
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.held, c)
		p.mu.Unlock()
	}()
	// The client going away must not stop the request on its way to the server.
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = p.upstream.Scheme, p.upstream.Host, p.upstream.Host
	resp, err := p.rt.RoundTrip(out)
	p.mu.Lock()
	p.record(Hold, r)
	p.mu.Unlock()
	select {
	case <-released:
	case <-r.Context().Done():
	case <-p.stalls:
	}
	p.mu.Lock()
	drop := p.dropped
	p.mu.Unlock()
	if err != nil || drop {
		if err == nil {
			resp.Body.Close()
		}
		abort(w) // the answer is lost: the client hears nothing
		return
	}
	defer resp.Body.Close()
	if r.Context().Err() != nil {
		return
	}
	relay(w, resp)
}

// relay passes the server's answer on as it comes, each piece flushed (a
// watch's events must not wait in a buffer), until the client goes away
// or the answer ends; a server that dies mid-answer aborts this one too.
func relay(w http.ResponseWriter, resp *http.Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil { // the server died mid-answer: so does this one
			panic(http.ErrAbortHandler)
		}
	}
}

// record counts fault f as injected into r; p.mu is held.
func (p *Proxy) record(f Fault, r *http.Request) {
	p.injected[f]++
	p.log = append(p.log, fmt.Sprintf("%s %s %s?%s", f, r.Method, r.URL.Path, r.URL.RawQuery))
}

// stall holds r until its client gives up or the proxy closes.
func (p *Proxy) stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.stalls:
	}
}

// closeEarly passes r on and copies the answer until the rule's byte or
// time limit, then ends the response cleanly (the last chunk is sent): a
// stream the server closed.
func (p *Proxy) closeEarly(w http.ResponseWriter, r *http.Request, rule *Rule) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := r.Clone(ctx)
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = p.upstream.Scheme, p.upstream.Host, p.upstream.Host
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		status(w, http.StatusBadGateway, "BadGateway", err.Error())
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k == "Content-Length" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	if rule.After > 0 {
		t := time.AfterFunc(rule.After, cancel)
		defer t.Stop()
	}
	written := 0
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if rule.AfterBytes > 0 && written+n > rule.AfterBytes {
				n = rule.AfterBytes - written
			}
			_, _ = w.Write(buf[:n])
			written += n
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil || (rule.AfterBytes > 0 && written >= rule.AfterBytes) {
			return
		}
	}
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`+"\n", msg, reason, code)
}
