package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/test/faultproxy"
)

// TestServiceCreateKill9IsSafeToRunAgain: tug is killed at each step of a
// service create (its record written, its credentials made, its objects
// applied, its binding written); the next create of the same service says
// it finishes what was begun, ends ready, and keeps the credentials made
// the first time (new ones would lock out the data).
func TestServiceCreateKill9IsSafeToRunAgain(t *testing.T) {
	h := New(t)
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	f := h.faulty()
	points := []struct {
		service, point string
		rule           faultproxy.Rule
	}{
		{"k1", "its record written", faultproxy.Rule{Method: "POST", Path: "/configmaps", Fault: faultproxy.Lost, Count: 1}},
		{"k2", "its credentials made", faultproxy.Rule{Method: "POST", Path: "/secrets", Fault: faultproxy.Lost, Count: 1}},
		{"k3", "its StatefulSet applied", faultproxy.Rule{Method: "PATCH", Path: "/statefulsets/", Fault: faultproxy.Lost, Count: 1}},
		{"k4", "its binding written", faultproxy.Rule{Method: "POST", Path: "/secrets", Skip: 1, Fault: faultproxy.Lost, Count: 1}},
	}
	ctx := context.Background()
	for _, p := range points {
		h.serviceVolume(p.service)
		h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, p.point, p.rule, "service", "create", p.service, "--plan", "postgres")
		var password string
		if s, err := h.Client.CoreV1().Secrets(h.NS).Get(ctx, "tug-service-"+p.service, metav1.GetOptions{}); err == nil {
			password = string(s.Data["password"])
		}
		h.dropLease("service." + p.service) // the service's lock a killed create held (it would expire)
		res := h.mustTug("service", "create", p.service, "--plan", "postgres")
		if !strings.Contains(res.Stderr, "finishing it") {
			t.Errorf("%s: the next create does not say it finishes what was begun:\n%s", p.point, res)
		}
		if st := h.serviceInfo(p.service).Status; st != "ready" {
			t.Errorf("%s: status %q after the next create", p.point, st)
		}
		s, err := h.Client.CoreV1().Secrets(h.NS).Get(ctx, "tug-service-"+p.service, metav1.GetOptions{})
		if err != nil || (password != "" && string(s.Data["password"]) != password) {
			t.Errorf("%s: the credentials made before the kill were replaced (%v)", p.point, err)
		}
		if _, err := h.Client.CoreV1().Secrets(h.NS).Get(ctx, "tug-service-"+p.service+"-binding", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: no binding after the next create: %v", p.point, err)
		}
	}
}

// TestServiceBindKill9IsSettledByTheNextCommand: tug is killed while a bind
// rolls out; the next bind settles the interrupted release and either
// finishes it or says the service is bound, and the units then see the
// binding.
func TestServiceBindKill9IsSettledByTheNextCommand(t *testing.T) {
	h := New(t)
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	h.mustTug("service", "create", "db", "--plan", "postgres")
	const name = "kbind"
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	f := h.faulty()
	h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, "the web Deployment updated with the binding",
		faultproxy.Rule{Method: "PATCH", Path: "/deployments/" + name + "-web", Fault: faultproxy.Lost, Count: 1}, "service", "bind", name, "db")
	h.dropLease(name)
	h.dropLease("service.db") // the service's lock, as the app's: a lease a killed tug held
	res := h.Tug("service", "bind", name, "db")
	if res.Code != 0 && !strings.Contains(res.Stderr, "already bound") {
		t.Fatalf("the next bind after a kill: %s", res)
	}
	h.Eventually(2*time.Minute, "the units see the binding", func() (bool, error) {
		return contains(h.webEnvNames(name), "DATABASE_URL"), nil
	})
	info := h.serviceInfo("db")
	if len(info.Apps) != 1 || info.Apps[0].App != name {
		t.Errorf("service info after the settled bind: %+v", info)
	}
}

// TestServiceRotateKill9IsFinishedByTheNextRotate: tug is killed while a
// rotate rolls the bound app onto the new login; the app keeps answering
// (both logins are valid), and the next rotate finishes that rotation:
// the old password is refused, the new one works.
func TestServiceRotateKill9IsFinishedByTheNextRotate(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	const name = "krot"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	h.mustTug("service", "bind", name, "db")
	old := h.credentials("db")
	f := h.faulty()
	h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, "the app restarted with the new login",
		faultproxy.Rule{Method: "PATCH", Path: "/deployments/" + name + "-web", Fault: faultproxy.Lost, Count: 1}, "service", "rotate", "db")
	h.dropLease(name)
	h.dropLease("service.db") // the service's lock, as the app's: a lease a killed tug held
	h.routerBody(r, url, "db ok rows=", "")
	res := h.mustTug("service", "rotate", "db", "--wait-units")
	if !strings.Contains(res.Stderr, "finishing it") {
		t.Errorf("the next rotate does not say it finishes the stopped one:\n%s", res)
	}
	now := h.credentials("db")
	if now["username"] == old["username"] {
		t.Fatalf("the next rotate began another turn (back to %s) instead of finishing", now["username"])
	}
	if err := h.psqlLogin("db", old["username"], old["password"]); err == nil {
		t.Error("the old password still logs in")
	}
	if err := h.psqlLogin("db", now["username"], now["password"]); err != nil {
		t.Errorf("the new password: %v", err)
	}
	h.routerBody(r, url, "db ok rows=", "")
}

// TestServiceRemoveKill9IsFinishedByTheNextRemove: tug is killed as a
// remove deletes the service's objects; the record (deleted last) still
// names the service, and the next remove finishes, keeping the volume.
func TestServiceRemoveKill9IsFinishedByTheNextRemove(t *testing.T) {
	h := New(t)
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.mustTug("service", "create", "db", "--plan", "postgres")
	f := h.faulty()
	h.killAt(f.p, []string{"KUBECONFIG=" + f.kubeconfig}, "its StatefulSet deleted",
		faultproxy.Rule{Method: "DELETE", Path: "/statefulsets/tug-service-db", Fault: faultproxy.Lost, Count: 1}, "service", "remove", "db", "--yes")
	h.dropLease("service.db") // the lease the killed remove held (it would expire)
	if res := h.Tug("service", "info", "db"); res.Code != 0 {
		t.Fatalf("after the kill the service is not listed (the record went first?): %s", res)
	}
	res := h.mustTug("service", "remove", "db", "--yes")
	if !strings.Contains(res.Stderr, "kept: PersistentVolumeClaim tug-service-db-data") {
		t.Errorf("the next remove: %s", res)
	}
	ctx := context.Background()
	if _, err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Get(ctx, "tug-service-db-data", metav1.GetOptions{}); err != nil {
		t.Errorf("the volume: %v", err)
	}
	if res := h.Tug("service", "info", "db"); res.Code != 2 {
		t.Errorf("info after the remove: %s", res)
	}
}

// TestServiceRestoreKill9LeavesTheOldOrTheRestoredData: tug is killed while
// a restore streams a dump into the service (pg_restore has begun its one
// transaction and waits for the rest of the dump); the service is ready,
// its data is what it held before the restore, never part of the dump
// (pg_restore --single-transaction: the cut stream rolls it back); a
// restore is refused while the killed one's lease holds the service, and
// once it is gone a second restore brings the dump's data back whole.
func TestServiceRestoreKill9LeavesTheOldOrTheRestoredData(t *testing.T) {
	h := New(t)
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	h.mustTug("service", "create", "db", "--plan", "postgres")
	// a dump of a few MB, so that half of it leaves pg_restore mid-table
	h.sql("db", `create table big(i int, s text); insert into big select i, md5(i::text) from generate_series(1, 200000) i; create table marker(v text); insert into marker values ('dumped')`)
	dump := filepath.Join(t.TempDir(), "db.dump")
	h.mustTug("service", "backup", "db", "-f", dump)
	data, err := os.ReadFile(dump)
	if err != nil || len(data) < 1<<20 {
		t.Fatalf("the dump: %d bytes, %v", len(data), err)
	}
	h.sql("db", `drop table big; update marker set v = 'changed'`)

	cmd := exec.Command(env.tug, "service", "restore", "db", "-f", "-", "--yes")
	cmd.Env = h.tugEnv(nil)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	go func() { _, _ = in.Write(data[:len(data)/2]) }() // the rest never comes
	h.Eventually(2*time.Minute, "pg_restore's transaction is open", func() (bool, error) {
		return h.sql("db", `select count(*) from pg_stat_activity where application_name = 'pg_restore' and xact_start is not null`) == "1", nil
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	t.Logf("killed tug service restore mid-stream; its stderr:\n%s", stderr.String())

	// the cut stream ends pg_restore, and its transaction with it
	h.Eventually(2*time.Minute, "pg_restore's session ends", func() (bool, error) {
		return h.sql("db", `select count(*) from pg_stat_activity where application_name = 'pg_restore'`) == "0", nil
	})
	if st := h.serviceInfo("db").Status; st != "ready" {
		t.Errorf("service info after the kill: status %q, want ready", st)
	}
	marker := h.sql("db", `select v from marker`)
	big := h.sql("db", `select count(*) from pg_tables where tablename = 'big'`)
	if marker != "changed" || big != "0" {
		t.Errorf("after the killed restore: marker %q, table big present %s; want the data from before the restore (changed, 0): a half restore", marker, big)
	}
	// the killed restore's lease still holds the service: another restore
	// is refused, and changes nothing, until it expires (or is dropped)
	if res := h.Tug("service", "restore", "db", "-f", dump, "--yes"); res.Code == 0 || !strings.Contains(res.Stderr, `service "db" is being changed`) {
		t.Errorf("a restore while the killed one's lease holds the service: want it refused, saying so:\n%s", res)
	}
	if m := h.sql("db", `select v from marker`); m != "changed" {
		t.Errorf("the refused restore changed the data: marker %q", m)
	}
	h.dropLease("service.db")
	h.mustTug("service", "restore", "db", "-f", dump, "--yes")
	if m, n := h.sql("db", `select v from marker`), h.sql("db", `select count(*) from big`); m != "dumped" || n != "200000" {
		t.Errorf("after the second restore: marker %q, %s rows in big; want dumped, 200000", m, n)
	}
}

// sql runs one statement list in the service's database through 'tug
// service connect' and returns what psql printed, unaligned and trimmed.
func (h *H) sql(service, statements string) string {
	h.t.Helper()
	res := h.mustTug("service", "connect", service, "--", "sh", "-c", `psql -v ON_ERROR_STOP=1 -qtA -U "$POSTGRES_USER" "$POSTGRES_DB" -c "$1"`, "sh", statements)
	return strings.TrimSpace(res.Stdout)
}
