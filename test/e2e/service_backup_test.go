package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceBackupDropRestore: a dump streamed to a file, a table dropped,
// the dump restored: the rows are back. connect -- COMMAND exits with the
// command's code.
func TestServiceBackupDropRestore(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	h.Kubeconfig = adminRoleKubeconfig(t, h)
	const name = "bkshop"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	h.mustTug("service", "bind", name, "db")
	h.routerBody(r, url, "db ok rows=", "")
	before := rows(t, h.routerBody(r, url, "db ok rows=", ""))

	dump := filepath.Join(t.TempDir(), "db.dump")
	h.mustTug("service", "backup", "db", "-f", dump)
	if st, err := os.Stat(dump); err != nil || st.Size() == 0 {
		t.Fatalf("backup -f: %v", err)
	}
	res := h.mustTug("service", "connect", "db", "--", "sh", "-c", `psql -U "$POSTGRES_USER" "$POSTGRES_DB" -c 'drop table tug_rows'`)
	if !strings.Contains(res.Stdout, "DROP TABLE") {
		t.Fatalf("connect -- psql drop table:\n%s", res)
	}
	// the app makes its table again: one row, the one it just wrote
	if n := rows(t, h.routerBody(r, url, "db ok rows=", "")); n != 1 {
		t.Fatalf("after the drop: rows=%d, want 1", n)
	}
	if res := h.Tug("service", "restore", "db", "-f", dump); res.Code == 0 {
		t.Fatalf("restore without --yes and no terminal went ahead:\n%s", res)
	}
	if r := h.mustTug("service", "restore", "db", "-f", dump, "--yes", "-o", "json"); !strings.Contains(r.Stdout, `"service": "db"`) || !strings.Contains(r.Stdout, `"file": "`+dump+`"`) {
		t.Errorf("service restore -o json: %s", r.Stdout)
	}
	if n := rows(t, h.routerBody(r, url, "db ok rows=", "")); n != before+1 {
		t.Errorf("after the restore: rows=%d, want %d (the %d dumped, and this request's)", n, before+1, before)
	}
	if res := h.Tug("service", "connect", "db", "--", "sh", "-c", "exit 3"); res.Code != 3 {
		t.Errorf("connect -- a command that exits 3: %s", res)
	}
}

// TestServiceScheduledBackups: a schedule makes a CronJob whose run writes a
// dump into the service's backups volume, keeping the newest --keep;
// 'service backups' lists them and 'restore --from' brings the rows back.
func TestServiceScheduledBackups(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	h.claimVolume("tug-service-db-backups")
	admin := h.Kubeconfig
	h.Kubeconfig = adminRoleKubeconfig(t, h)
	const name = "schedshop"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	h.mustTug("service", "bind", name, "db")
	before := rows(t, h.routerBody(r, url, "db ok rows=", ""))

	if res := h.Tug("service", "backup", "db", "--schedule", "not a schedule"); res.Code != 2 {
		t.Errorf("a bad --schedule: %s", res)
	}
	h.mustTug("service", "backup", "db", "--schedule", "0 3 * * *", "--keep", "1")
	ctx := context.Background()
	cj, err := h.Client.BatchV1().CronJobs(h.NS).Get(ctx, "tug-service-db-backup", metav1.GetOptions{})
	if err != nil || cj.Spec.Schedule != "0 3 * * *" {
		t.Fatalf("the backups' CronJob: %v", err)
	}
	// run it now, twice (what the schedule does at 3:00): one dump is kept
	for i := range 2 {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "now-" + strconv.Itoa(i), Namespace: h.NS}, Spec: cj.Spec.JobTemplate.Spec}
		if _, err := h.Client.BatchV1().Jobs(h.NS).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.Eventually(2*time.Minute, "the backup job "+job.Name+" completes", func() (bool, error) {
			j, err := h.Client.BatchV1().Jobs(h.NS).Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil || j.Status.Failed > 0 {
				return false, fmt.Errorf("%v failed=%d", err, j.Status.Failed)
			}
			return j.Status.Succeeded > 0, nil
		})
	}
	var files []struct{ Name string }
	if err := json.Unmarshal([]byte(h.mustTug("service", "backups", "db", "-o", "json").Stdout), &files); err != nil || len(files) != 1 {
		t.Fatalf("service backups with --keep 1 after two runs: %v %+v", err, files)
	}
	h.mustTug("service", "connect", "db", "--", "sh", "-c", `psql -U "$POSTGRES_USER" "$POSTGRES_DB" -c 'drop table tug_rows'`)
	if res := h.Tug("service", "restore", "db", "--from", "../etc/passwd", "--yes"); res.Code != 2 {
		t.Errorf("restore --from a path: %s", res)
	}
	h.mustTug("service", "restore", "db", "--from", files[0].Name, "--yes")
	if n := rows(t, h.routerBody(r, url, "db ok rows=", "")); n <= before {
		t.Errorf("after restore --from: rows=%d, want more than %d", n, before)
	}
	// remove keeps the backups with the data
	h.mustTug("service", "unbind", name, "db")
	res := h.mustTug("service", "remove", "db", "--yes")
	if !strings.Contains(res.Stderr, "tug-service-db-backups (backups)") {
		t.Errorf("remove does not say the backups stay:\n%s", res)
	}
	h.Kubeconfig = admin
	if _, err := h.Client.BatchV1().CronJobs(h.NS).Get(ctx, "tug-service-db-backup", metav1.GetOptions{}); err == nil {
		t.Error("the backups' CronJob outlived the service")
	}
}
