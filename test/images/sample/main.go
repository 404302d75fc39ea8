// Command sample is the app image tug's tests and demo deploy: an HTTP server
// on $PORT (8080 when unset) that logs every request and a heartbeat, and
// reports its version. Its mode, baked into each image tag, produces the
// failure paths a deploy must explain:
//
//	serve   (default) answer HTTP
//	worker  no listener, only a heartbeat (a background process)
//	crash   print a message and exit with $SAMPLE_EXIT_CODE (default 3) at start
//	unready run, but never listen, so any readiness probe fails forever
//
// The first argument, when given, overrides $SAMPLE_MODE, so a Procfile line
// "worker: sample worker" works with any tag.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	log.SetFlags(0)
	log.SetOutput(os.Stdout)
	mode := envOr("SAMPLE_MODE", "serve")
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	version := envOr("VERSION", "dev")
	host, _ := os.Hostname()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	switch mode {
	case "crash":
		code, err := strconv.Atoi(envOr("SAMPLE_EXIT_CODE", "3"))
		if err != nil {
			code = 3
		}
		fmt.Fprintf(os.Stderr, "sample %s: %s\n", version, envOr("SAMPLE_CRASH_MESSAGE", "fatal: configured to crash at start"))
		os.Exit(code)
	case "serve":
		go serve(ctx, version, host)
	case "worker", "unready":
	default:
		fmt.Fprintf(os.Stderr, "sample: unknown mode %q (serve, worker, crash, unready)\n", mode)
		os.Exit(2)
	}

	log.Printf("sample %s: started mode=%s host=%s", version, mode, host)
	every, err := time.ParseDuration(envOr("HEARTBEAT", "5s"))
	if err != nil || every <= 0 {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Printf("sample %s: stopping", version)
			return
		case <-tick.C:
			log.Printf("sample %s: heartbeat mode=%s", version, mode)
		}
	}
}

func serve(ctx context.Context, version, host string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "sample %s from %s\n", version, host)
	})
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, version)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// /env lists the names of the variables the process sees (values only
	// for names given in ?show=), so tests can prove config reached it.
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		show := map[string]bool{}
		for _, k := range strings.Split(r.URL.Query().Get("show"), ",") {
			show[k] = true
		}
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if show[k] {
				fmt.Fprintf(w, "%s=%s\n", k, v)
			} else {
				fmt.Fprintln(w, k)
			}
		}
	})
	addr := ":" + envOr("PORT", "8080")
	srv := &http.Server{Addr: addr, Handler: logRequests(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("sample %s: listening on %s", version, addr)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "sample %s: %v\n", version, err)
		os.Exit(1)
	}
}

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)
		log.Printf("%s %s from %s in %s", r.Method, r.URL.Path, r.RemoteAddr, time.Since(start).Round(time.Microsecond))
	})
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
