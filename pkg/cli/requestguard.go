package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// DefaultRequestTimeout bounds each request to the API server that is not a
// stream, unless --request-timeout says otherwise: a server that accepts
// the connection and never answers would otherwise hang tug forever.
const DefaultRequestTimeout = 30 * time.Second

// waitNoticeAfter is how long a request may go unanswered before tug says,
// on stderr, what it is waiting for.
const waitNoticeAfter = 2 * time.Second

// requestGuard is the RoundTripper that keeps requests to the API server
// from hanging silently and rides over brief unavailability:
//
//   - a request that is not a stream gets a deadline (timeout) for its whole
//     answer, body included. Streams (watches, logs -f, exec, attach, port
//     forwarding) get none: they are meant to stay open. This is why the
//     timeout is not rest.Config.Timeout, which client-go applies to every
//     request through http.Client.Timeout and would cut them.
//   - a GET answered 503 or 429 without Retry-After is tried again a few
//     times with backoff. client-go retries only when Retry-After is set
//     (those answers pass through untouched); a write is never retried
//     here, since it may have taken effect.
//   - a request unanswered after noticeAfter shows notice until it is.
type requestGuard struct {
	next        http.RoundTripper
	timeout     time.Duration // 0: none
	retries     int
	backoff     func(attempt int) time.Duration
	noticeAfter time.Duration
	notice      *waitNotice // nil: none
}

func newRequestGuard(next http.RoundTripper, timeout time.Duration, notice *waitNotice) *requestGuard {
	return &requestGuard{
		next: next, timeout: timeout, retries: 3,
		backoff:     func(attempt int) time.Duration { return 250 * time.Millisecond << attempt },
		noticeAfter: waitNoticeAfter, notice: notice,
	}
}

func (g *requestGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	stream := isStream(req)
	for attempt := 0; ; attempt++ {
		resp, err := g.once(req, stream)
		if err != nil || attempt >= g.retries || !retryable(req, resp) {
			return resp, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t := time.NewTimer(g.backoff(attempt))
		select {
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		case <-t.C:
		}
	}
}

func (g *requestGuard) once(req *http.Request, stream bool) (*http.Response, error) {
	if stream {
		return g.next.RoundTrip(req)
	}
	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if g.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
	}
	stop := g.notice.watch(g.noticeAfter)
	resp, err := g.next.RoundTrip(req.WithContext(ctx))
	stop()
	if err != nil {
		cancel()
		return nil, g.timedOut(req, ctx, err)
	}
	resp.Body = &guardedBody{ReadCloser: resp.Body, g: g, req: req, ctx: ctx, cancel: cancel}
	return resp, nil
}

// timedOut turns the expiry of our own deadline into a RequestTimeoutError;
// the caller's cancellation and other errors pass through.
func (g *requestGuard) timedOut(req *http.Request, ctx context.Context, err error) error {
	if g.timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) && req.Context().Err() == nil {
		return &kube.RequestTimeoutError{After: g.timeout}
	}
	return err
}

// guardedBody keeps the request's deadline until the body is read and
// closed.
type guardedBody struct {
	io.ReadCloser
	g      *requestGuard
	req    *http.Request
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = b.g.timedOut(b.req, b.ctx, err)
	}
	return n, err
}

func (b *guardedBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// isStream reports whether req is meant to stay open: a watch, a followed
// log, or an upgraded connection (exec, attach, port-forward, over
// WebSocket or SPDY).
func isStream(req *http.Request) bool {
	q := req.URL.Query()
	if isTrue(q.Get("watch")) || isTrue(q.Get("follow")) {
		return true
	}
	if req.Header.Get("Upgrade") != "" || strings.Contains(strings.ToLower(req.Header.Get("Connection")), "upgrade") {
		return true
	}
	if strings.Contains(req.URL.Path, "/watch/") {
		return true // the old /api/v1/watch/... paths
	}
	for _, sub := range []string{"/exec", "/attach", "/portforward"} {
		if strings.HasSuffix(req.URL.Path, sub) {
			return true
		}
	}
	return false
}

func isTrue(v string) bool { return v == "true" || v == "1" }

// retryable: a read the server could not serve just now and did not say
// when to come back for.
func retryable(req *http.Request, resp *http.Response) bool {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return false
	}
	if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests {
		return false
	}
	if resp.Header.Get("Retry-After") != "" {
		return false // client-go's own retry honours it
	}
	return req.Header.Get("Upgrade") == ""
}

// waitNotice tells the user what tug waits for while some request has gone
// unanswered for a while: a spinner on a terminal, one line per wait
// otherwise. It goes away as soon as no request is waiting.
type waitNotice struct {
	msg  string
	show func(msg string) // starts showing msg
	hide func()           // stops showing it

	mu      sync.Mutex
	waiting int
}

func newWaitNotice(ios *IOStreams, server string) *waitNotice {
	n := &waitNotice{msg: "waiting for the API server at " + server}
	if ios.IsStderrTTY() {
		s := NewProgress(ios).(*spinner)
		n.show, n.hide = s.Update, s.clear
	} else {
		p := &lineProgress{w: ios.ErrOut, now: time.Now}
		n.show, n.hide = func(msg string) { p.write(msg, true) }, func() {}
	}
	return n
}

// watch starts the clock for one request; the returned stop ends it.
func (n *waitNotice) watch(after time.Duration) (stop func()) {
	if n == nil {
		return func() {}
	}
	var mu sync.Mutex
	started, stopped := false, false
	t := time.AfterFunc(after, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			started = true
			n.begin()
		}
	})
	return func() {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if started {
			n.end()
		}
	}
}

func (n *waitNotice) begin() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waiting++
	if n.waiting == 1 {
		n.show(n.msg)
	}
}

func (n *waitNotice) end() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waiting--
	if n.waiting == 0 {
		n.hide()
	}
}

// parseRequestTimeout reads --request-timeout as kubectl does: a duration
// ("10s", "1m") or a whole number of seconds; 0 means no timeout.
func parseRequestTimeout(v string) (time.Duration, error) {
	if v == "" {
		return DefaultRequestTimeout, nil
	}
	s := v
	if strings.Trim(s, "0123456789") == "" {
		s += "s"
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, inputerr.Errorf("invalid --request-timeout %q: want a duration such as 10s or 1m, or 0 for none", v)
	}
	return d, nil
}
