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
)

func (f Fault) String() string {
	return [...]string{"429", "503", "500", "reset", "close-early", "410-gone", "stall", "lost"}[f]
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
		injected: map[Fault]int{}, stalls: make(chan struct{})}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(up)
			r.Out.Host = up.Host
		},
		Transport:     rt,
		FlushInterval: -1,                         // watches and logs stream
		ErrorLog:      log.New(io.Discard, "", 0), // a client that gives up is no news
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
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

// Clear removes every rule.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
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
			if rule.Fault != Lost { // counted once the server has it
				p.record(rule.Fault, r)
			}
			c := *rule
			return &c
		}
	}
	return nil
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	case Reset:
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
