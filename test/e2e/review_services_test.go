package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/test/faultproxy"
)

// reviewEntry is review up/list -o json (docs/output.md).
type reviewEntry struct {
	App      string `json:"app"`
	URL      string `json:"url"`
	Services []struct {
		Name       string `json:"name"`
		Base       string `json:"base"`
		Plan       string `json:"plan"`
		ForkedFrom *struct {
			Service string `json:"service"`
			Backup  string `json:"backup"`
		} `json:"forkedFrom"`
	} `json:"services"`
}

// psqlCount runs a count query in service svc's unit and returns it.
func (h *H) psqlCount(svc, query string) int {
	h.t.Helper()
	r := h.mustTug("service", "connect", svc, "--", "sh", "-c", `psql -U "$POSTGRES_USER" "$POSTGRES_DB" -tAc "`+query+`"`)
	n, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		h.t.Fatalf("%s in service %s: %q", query, svc, r.Stdout)
	}
	return n
}

// reviewObjects are kubectl's names of every object labelled as review
// name of app of in the test's namespace (PVCs, StatefulSets, Secrets,
// ConfigMaps, CronJobs, Services, pods).
func (h *H) reviewObjects(of, name string) string {
	h.t.Helper()
	return strings.TrimSpace(h.kubectl("get", "statefulsets,services,secrets,configmaps,cronjobs,persistentvolumeclaims,pods", "-n", h.NS,
		"-l", "tug.dev/review-of="+of+",tug.dev/review="+name, "-o", "name"))
}

// assertNoReviewLeft checks by label and by name that nothing of review
// name of app of is left: its app's objects and its services'.
func (h *H) assertNoReviewLeft(of, name string) {
	h.t.Helper()
	h.assertNoObjectsOf(of + "-" + name)
	h.Eventually(90*time.Second, "no object of review "+name+" left", func() (bool, error) {
		all := h.kubectl("get", "statefulsets,persistentvolumeclaims,secrets,configmaps,cronjobs", "-n", h.NS, "-o", "name")
		return h.reviewObjects(of, name) == "" && !strings.Contains(all, "tug-service-"+of+"-"+name), nil
	})
}

// TestReviewAppServicesForkedAndFresh: an app bound to a postgres service;
// a review app made with --fork-service answers with the app's rows from a
// service of its own (forked from a dump taken now, as the app's has no
// stored backup), and what it writes stays out of the app's database; a
// second review up keeps its data; a review without --fork-service starts
// empty; bad input exits 2 with nothing made; the expiry sweep and review
// down remove the review's services with their data, never the app's.
func TestReviewAppServicesForkedAndFresh(t *testing.T) {
	h := New(t)
	rt := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	for _, s := range []string{"db", "fshop-pr-1-db", "fshop-pr-2-db"} {
		h.serviceVolume(s)
	}
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", "fshop")
	h.mustTug("app", "deploy", "fshop", "--image", imgs["dbapp"])
	h.mustTug("service", "bind", "fshop", "db")
	base := "http://" + rt.appHost("fshop", h.NS) + "/"
	h.routerBody(rt, base+"?note=base-row", "newest=base-row", "")
	baseRows := h.psqlCount("db", "select count(*) from tug_rows")

	for _, args := range [][]string{
		{"--fork-service", "nosuch"},
		{"--fork-service", "Bad_Name"},
		{"--fork-service", "db", "--fork-service", "db"},
		{"--service-size", "-1Gi"},
		// the review's copy of db sets DATABASE_URL: the app would have it twice
		{"--review-override", "DATABASE_URL=postgres://review/x"},
	} {
		argv := append([]string{"review", "up", "fshop", "--name", "pr-1", "--image", imgs["dbapp"]}, args...)
		if r := h.Tug(argv...); r.Code != 2 {
			t.Errorf("tug %v: want exit 2: %s", argv, r)
		}
	}
	// a service in the way of the review's copy is never taken over
	h.mustTug("service", "create", "fshop-pr-3-db", "--uri", "postgres://u:p@db.example.test:5432/x")
	if r := h.Tug("review", "up", "fshop", "--name", "pr-3", "--image", imgs["dbapp"]); r.Code != 2 || !strings.Contains(r.Stderr, "is not review app") {
		t.Errorf("review up with a service in the way: want exit 2: %s", r)
	}
	h.mustTug("service", "remove", "fshop-pr-3-db", "--yes")
	if n := len(h.appList()); n != 1 || h.reviewObjects("fshop", "pr-1") != "" || h.reviewObjects("fshop", "pr-3") != "" {
		t.Fatalf("bad input made something: %d apps, review objects %q", n, h.reviewObjects("fshop", "pr-1"))
	}

	up := func(name string, args ...string) (reviewEntry, Result) {
		t.Helper()
		argv := append([]string{"review", "up", "fshop", "--name", name, "--image", imgs["dbapp"], "--timeout", "2m", "-o", "json"}, args...)
		r := h.mustTug(argv...)
		var e reviewEntry
		if err := json.Unmarshal([]byte(r.Stdout), &e); err != nil {
			t.Fatalf("review up -o json: %v\n%s", err, r.Stdout)
		}
		return e, r
	}
	e, r := up("pr-1", "--fork-service", "db")
	if len(e.Services) != 1 || e.Services[0].Name != "fshop-pr-1-db" || e.Services[0].Base != "db" || e.Services[0].ForkedFrom == nil ||
		e.Services[0].ForkedFrom.Service != "db" || e.Services[0].ForkedFrom.Backup != "" || !strings.Contains(r.Stderr, "has no stored backup") {
		t.Fatalf("review up --fork-service of a service with no stored backup: %+v\n%s", e, r)
	}
	review := "http://" + rt.appHost("fshop-pr-1", h.NS) + "/"
	// (every deploy's check writes a row too: the counts are lower bounds)
	if n := rows(t, h.routerBody(rt, review+"?note=review-row", "newest=review-row", "")); n <= baseRows {
		t.Errorf("the forked review app answers rows=%d, want the app's %d and its own", n, baseRows)
	}
	h.routerBody(rt, review+"bindings", "db type=postgresql", "")
	if env := h.webEnvNames("fshop-pr-1"); !contains(env, "DATABASE_URL") {
		t.Errorf("the review app's variables: %v", env)
	}
	if n := h.psqlCount("db", "select count(*) from tug_rows where note='review-row'"); n != 0 {
		t.Errorf("a row written through the review app is in the app's database (%d)", n)
	}
	if n := h.psqlCount("fshop-pr-1-db", "select count(*) from tug_rows where note='base-row'"); n != 1 {
		t.Errorf("the forked database has %d of the app's base-row, want 1", n)
	}
	if apps := h.serviceInfo("db").Apps; len(apps) != 1 || apps[0].App != "fshop" {
		t.Errorf("the app's service is bound to %+v, want fshop alone", apps)
	}
	objs := h.reviewObjects("fshop", "pr-1")
	for _, o := range []string{"persistentvolumeclaim/tug-service-fshop-pr-1-db-data", "secret/tug-service-fshop-pr-1-db", "statefulset.apps/tug-service-fshop-pr-1-db"} {
		if !strings.Contains(objs, o) {
			t.Errorf("%s is not labelled as the review's:\n%s", o, objs)
		}
	}

	// again: the same service and its data, not forked anew
	_, r = up("pr-1", "--fork-service", "db")
	if !strings.Contains(r.Stderr, "keeps its data") {
		t.Errorf("a second review up does not say the forked service keeps its data:\n%s", r)
	}
	if n := h.psqlCount("fshop-pr-1-db", "select count(*) from tug_rows where note='review-row'"); n != 1 {
		t.Errorf("after a second review up the review's own row is there %d times, want 1", n)
	}

	// without --fork-service: an empty database; it expires and the next
	// review command removes it with its service
	e2, _ := up("pr-2", "--ttl", "1s")
	if len(e2.Services) != 1 || e2.Services[0].ForkedFrom != nil {
		t.Errorf("review up without --fork-service: %+v", e2)
	}
	h.routerBody(rt, "http://"+rt.appHost("fshop-pr-2", h.NS)+"/?note=fresh-row", "newest=fresh-row", "")
	if n := h.psqlCount("fshop-pr-2-db", "select count(*) from tug_rows where note in ('base-row', 'review-row')"); n != 0 {
		t.Errorf("a review app without --fork-service has %d rows of the app's or of another review's", n)
	}
	var list []reviewEntry
	if err := json.Unmarshal([]byte(h.mustTug("review", "list", "-o", "json").Stdout), &list); err != nil || len(list) != 1 || list[0].App != "fshop-pr-1" || len(list[0].Services) != 1 {
		t.Errorf("review list after pr-2 expired: %v %+v", err, list)
	}
	h.assertNoReviewLeft("fshop", "pr-2")

	var down struct {
		App      string   `json:"app"`
		Removed  bool     `json:"removed"`
		Services []string `json:"services"`
	}
	r = h.mustTug("review", "down", "fshop", "--name", "pr-1", "--yes", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &down); err != nil || down.App != "fshop-pr-1" || !down.Removed || !slices.Equal(down.Services, []string{"fshop-pr-1-db"}) {
		t.Errorf("review down -o json: %v %+v\n%s", err, down, r.Stdout)
	}
	h.assertNoReviewLeft("fshop", "pr-1")
	// again: nothing to remove, said, exit 0
	r = h.mustTug("review", "down", "fshop", "--name", "pr-1", "--yes", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &down); err != nil || down.Removed || len(down.Services) != 0 {
		t.Errorf("review down -o json of a review removed already: %v %+v\n%s", err, down, r.Stdout)
	}
	if st := h.serviceInfo("db").Status; st != "ready" {
		t.Errorf("the app's service after review down: %s", st)
	}
	if n := h.psqlCount("db", "select count(*) from tug_rows"); n < baseRows {
		t.Errorf("the app's database lost rows: %d, had %d", n, baseRows)
	}
	if _, err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Get(context.Background(), "tug-service-db-data", metav1.GetOptions{}); err != nil {
		t.Errorf("the app's data volume: %v", err)
	}
}

// TestReviewUpForkFromStoredBackup: an app's service with scheduled
// backups: the review app's copy is restored from the newest stored dump,
// named in the output.
func TestReviewUpForkFromStoredBackup(t *testing.T) {
	h := New(t)
	rt := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	h.claimVolume("tug-service-db-backups")
	h.serviceVolume("bshop-pr-1-db")
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", "bshop")
	h.mustTug("app", "deploy", "bshop", "--image", imgs["dbapp"])
	h.mustTug("service", "bind", "bshop", "db")
	h.routerBody(rt, "http://"+rt.appHost("bshop", h.NS)+"/?note=in-backup", "newest=in-backup", "")
	h.mustTug("service", "backup", "db", "--schedule", "0 3 * * *", "--keep", "2")
	h.runBackupNow("db")
	// a row written after the backup: the fork has it not
	h.routerBody(rt, "http://"+rt.appHost("bshop", h.NS)+"/?note=after-backup", "newest=after-backup", "")
	var files []struct{ Name string }
	if err := json.Unmarshal([]byte(h.mustTug("service", "backups", "db", "-o", "json").Stdout), &files); err != nil || len(files) != 1 {
		t.Fatalf("service backups: %v %+v", err, files)
	}

	r := h.mustTug("review", "up", "bshop", "--name", "pr-1", "--image", imgs["dbapp"], "--fork-service", "db", "--timeout", "2m")
	if !strings.Contains(r.Stdout, "forked from backup "+files[0].Name+" of service db") {
		t.Errorf("review up does not name the backup it forked from (%s):\n%s", files[0].Name, r)
	}
	if n := h.psqlCount("bshop-pr-1-db", "select count(*) from tug_rows where note='in-backup'"); n != 1 {
		t.Errorf("the fork lacks the backup's row (%d)", n)
	}
	if n := h.psqlCount("bshop-pr-1-db", "select count(*) from tug_rows where note='after-backup'"); n != 0 {
		t.Errorf("the fork has a row written after the backup: it was not restored from the backup")
	}
	h.mustTug("review", "down", "bshop", "--name", "pr-1", "--yes")
	h.assertNoReviewLeft("bshop", "pr-1")
	if _, err := h.Client.BatchV1().CronJobs(h.NS).Get(context.Background(), "tug-service-db-backup", metav1.GetOptions{}); err != nil {
		t.Errorf("review down touched the app's backups: %v", err)
	}
}

// runBackupNow runs a service's scheduled backup now, as its CronJob does.
func (h *H) runBackupNow(svc string) {
	h.t.Helper()
	ctx := context.Background()
	cj, err := h.Client.BatchV1().CronJobs(h.NS).Get(ctx, "tug-service-"+svc+"-backup", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "now-" + svc, Namespace: h.NS}, Spec: cj.Spec.JobTemplate.Spec}
	made, err := h.Client.BatchV1().Jobs(h.NS).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.Eventually(2*time.Minute, "the backup job completes", func() (bool, error) {
		j, err := h.Client.BatchV1().Jobs(h.NS).Get(ctx, made.Name, metav1.GetOptions{})
		return err == nil && j.Status.Succeeded > 0, err
	})
}

// TestKill9DuringReviewUpWithService: tug is killed while review up makes
// the review app's service (its StatefulSet applied, before it is ready
// and bound). The next review up finishes it: bound, answering from its
// own database. Killed again at the same point for another review, review
// down removes everything, the half-made service included. A review app
// removed with 'app remove' leaves its services to the next review
// command, which removes them.
func TestKill9DuringReviewUpWithService(t *testing.T) {
	h := New(t)
	rt := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	for _, s := range []string{"db", "kshop-pr-1-db", "kshop-pr-2-db"} {
		h.serviceVolume(s)
	}
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", "kshop")
	h.mustTug("app", "deploy", "kshop", "--image", imgs["dbapp"])
	h.mustTug("service", "bind", "kshop", "db")
	f := h.faulty()
	killUp := func(name string) {
		t.Helper()
		h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, "the review service's StatefulSet applied",
			faultproxy.Rule{Method: "PATCH", Path: "/statefulsets/tug-service-kshop-" + name + "-db", Fault: faultproxy.Lost, Count: 1},
			"review", "up", "kshop", "--name", name, "--image", imgs["dbapp"], "--fork-service", "db")
		h.dropLease("kshop-" + name)
		// and the review service's, which the killed create held (both
		// would expire: the next command says so until then)
		h.dropLease("service.kshop-" + name + "-db")
	}
	killUp("pr-1")
	r := h.mustTug("review", "up", "kshop", "--name", "pr-1", "--image", imgs["dbapp"], "--fork-service", "db", "--timeout", "2m")
	if !strings.Contains(r.Stderr, "finishing it") || !strings.Contains(r.Stdout, "forked from") {
		t.Errorf("the review up after the kill does not finish the service and fork it:\n%s", r)
	}
	h.routerBody(rt, "http://"+rt.appHost("kshop-pr-1", h.NS)+"/", "db ok rows=", "")
	if env := h.webEnvNames("kshop-pr-1"); !contains(env, "DATABASE_URL") {
		t.Errorf("the review app is not bound after the finished review up: %v", env)
	}

	killUp("pr-2")
	if h.reviewObjects("kshop", "pr-2") == "" {
		t.Fatal("the killed review up made no service objects: the kill came too early to test anything")
	}
	h.mustTug("review", "down", "kshop", "--name", "pr-2", "--yes")
	h.assertNoReviewLeft("kshop", "pr-2")
	// the review app removed as an app: its services are left to the next
	// review command, which removes them as its app is gone
	h.mustTug("app", "remove", "kshop-pr-1", "--yes")
	if h.reviewObjects("kshop", "pr-1") == "" {
		t.Fatal("app remove of a review app removed its services: the sweep below proves nothing")
	}
	h.mustTug("review", "list")
	h.assertNoReviewLeft("kshop", "pr-1")
	if st := h.serviceInfo("db").Status; st != "ready" {
		t.Errorf("the app's service after the review downs: %s", st)
	}
}
