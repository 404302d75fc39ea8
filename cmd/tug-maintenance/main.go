// Command tug-maintenance is the page an app shows while `tug app
// maintenance APP on`: every request gets 503 Service Unavailable with a
// Retry-After header and a short message naming the app ($TUG_APP). It
// listens on $PORT (8080 when unset) and exits on SIGTERM. Its image is
// render.MaintenanceImage; it has no shell and needs nothing else.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, os.Getenv); err != nil {
		log.Fatal(err)
	}
}

// serve listens where getenv's $PORT says and serves the page for
// $TUG_APP until ctx is done.
func serve(ctx context.Context, getenv func(string) string) error {
	appName, addr := config(getenv)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Printf("maintenance page for %s on %s", appName, addr)
	return run(ctx, ln, handler(appName))
}

// config is the app's name ($TUG_APP, "This app" when unset) and the
// address to listen on (":$PORT", ":8080" when unset), read with getenv.
func config(getenv func(string) string) (appName, addr string) {
	appName = getenv("TUG_APP")
	if appName == "" {
		appName = "This app"
	}
	port := getenv("PORT")
	if port == "" {
		port = "8080"
	}
	return appName, ":" + port
}

// run serves h on ln until ctx is done, then shuts the server down,
// letting requests in flight finish (for up to 5 s), and returns once it
// is down.
func run(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); errors.Is(err, context.DeadlineExceeded) {
		// a connection still open after 5 s (one that never sent its
		// request, say) is closed: that is a normal stop, not a failure
		log.Printf("stopped; closed connections still open after 5s")
		_ = srv.Close()
		return nil
	} else if err != nil {
		return err
	}
	return nil
}

func handler(appName string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.Header().Set("Cache-Control", "no-store")
		msg := fmt.Sprintf("%s is down for maintenance. Please try again in a few minutes.", appName)
		if strings.Contains(r.Header.Get("Accept"), "text/html") {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "<!doctype html><title>Down for maintenance</title><h1>Down for maintenance</h1><p>%s</p>\n", htmlEscape(msg))
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, msg)
	})
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
