// Command dbapp is the sample app of tug's backing services (the demo and
// the e2e tests): an HTTP server on $PORT (8080 when unset) that proves what
// a bound database gives it.
//
//	GET /          connect with $DATABASE_URL (or ${DB_ENV}_URL when DB_ENV
//	               names another prefix), create table tug_rows if missing,
//	               insert a row (its note: ?note=, else the host name), and
//	               answer "db ok rows=N newest=NOTE release=$TUG_RELEASE",
//	               or 503 "db error: REASON"
//	GET /healthz   200 without touching the database
//	GET /bindings  one line per binding under $SERVICE_BINDING_ROOT: its
//	               name, type and the keys present (never a value)
//
// It connects afresh on every request, so a request after a credential
// rotation uses what the unit has now, and a database that went away is
// reported at once rather than by a stale pool.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	log.SetFlags(0)
	log.SetOutput(os.Stdout)
	host, _ := os.Hostname()
	a := &app{
		url:     os.Getenv(urlVar()),
		urlVar:  urlVar(),
		release: os.Getenv("TUG_RELEASE"),
		host:    host,
		root:    os.Getenv("SERVICE_BINDING_ROOT"),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.serveDB)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /bindings", a.serveBindings)
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		// let requests in flight finish: a rollout stops units while the
		// router still sends them a request or two
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	log.Printf("dbapp: listening on :%s (database from $%s, release %q)", port, a.urlVar, a.release)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("dbapp: %v", err)
	}
}

// urlVar is the variable holding the database URL: DATABASE_URL, or
// PREFIX_URL when DB_ENV=PREFIX (a service bound with --as PREFIX).
func urlVar() string {
	if p := os.Getenv("DB_ENV"); p != "" {
		return strings.TrimSuffix(p, "_") + "_URL"
	}
	return "DATABASE_URL"
}

type app struct {
	url, urlVar, release, host, root string
}

func (a *app) serveDB(w http.ResponseWriter, r *http.Request) {
	note := r.URL.Query().Get("note")
	if note == "" {
		note = a.host
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	rows, newest, err := a.touch(ctx, note)
	if err != nil {
		log.Printf("GET / -> 503: %v", err)
		http.Error(w, "db error: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	log.Printf("GET / -> 200 rows=%d", rows)
	fmt.Fprintf(w, "db ok rows=%d newest=%s release=%s\n", rows, newest, a.release)
}

// touch makes sure the table exists, adds a row with note and returns the
// row count and the newest row's note.
func (a *app) touch(ctx context.Context, note string) (int64, string, error) {
	if a.url == "" {
		return 0, "", fmt.Errorf("$%s is not set (bind a database to the app)", a.urlVar)
	}
	conn, err := pgx.Connect(ctx, a.url)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close(context.Background())
	if err := ensureTable(ctx, conn); err != nil {
		return 0, "", err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO tug_rows (note) VALUES ($1)`, note); err != nil {
		return 0, "", err
	}
	var n int64
	var newest string
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM tug_rows), (SELECT note FROM tug_rows ORDER BY id DESC LIMIT 1)`).Scan(&n, &newest)
	return n, newest, err
}

// ensureTable creates tug_rows when it is missing. Two first requests at
// once would both try CREATE TABLE IF NOT EXISTS, and one can fail on the
// catalog's unique index; an advisory lock makes them take turns.
func ensureTable(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('tug_rows') IS NOT NULL`).Scan(&exists); err != nil || exists {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7470127)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS tug_rows (id serial PRIMARY KEY, note text)`); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// serveBindings lists the bindings the Service Binding specification lays
// out under $SERVICE_BINDING_ROOT: a directory per binding, a file per key.
func (a *app) serveBindings(w http.ResponseWriter, _ *http.Request) {
	if a.root == "" {
		fmt.Fprintln(w, "no $SERVICE_BINDING_ROOT")
		return
	}
	lines, err := bindings(a.root)
	if err != nil {
		http.Error(w, "bindings: "+err.Error(), http.StatusInternalServerError)
		return
	}
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// bindings describes each binding under root as "NAME type=TYPE
// keys=K1,K2,...". The type is not a secret; no other value is read.
// Names starting with a dot are the Secret volume's own bookkeeping.
func bindings(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		files, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		var keys []string
		for _, f := range files {
			if !strings.HasPrefix(f.Name(), ".") {
				keys = append(keys, f.Name())
			}
		}
		sort.Strings(keys)
		typ, _ := os.ReadFile(filepath.Join(dir, "type"))
		out = append(out, fmt.Sprintf("%s type=%s keys=%s", e.Name(), strings.TrimSpace(string(typ)), strings.Join(keys, ",")))
	}
	return out, nil
}
