package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	h.Kubeconfig = developerKubeconfig(t, h)
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
	h.mustTug("service", "restore", "db", "-f", dump, "--yes")
	if n := rows(t, h.routerBody(r, url, "db ok rows=", "")); n != before+1 {
		t.Errorf("after the restore: rows=%d, want %d (the %d dumped, and this request's)", n, before+1, before)
	}
	if res := h.Tug("service", "connect", "db", "--", "sh", "-c", "exit 3"); res.Code != 3 {
		t.Errorf("connect -- a command that exits 3: %s", res)
	}
}
