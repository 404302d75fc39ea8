package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A binding is listed with its type and key names, never a value; the
// Secret volume's own ..data entries are left out.
func TestBindingsListKeysNotValues(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, "db")
	for _, d := range []string{db, filepath.Join(root, "..2026_12_07"), filepath.Join(root, "cache")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range map[string]string{"type": "postgresql\n", "password": "s3cret", "uri": "postgres://u:s3cret@h/d", "..data": "x"} {
		if err := os.WriteFile(filepath.Join(db, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "cache", "type"), []byte("redis"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := bindings(root)
	if err != nil {
		t.Fatal(err)
	}
	want := "cache type=redis keys=type\ndb type=postgresql keys=password,type,uri"
	if strings.Join(got, "\n") != want {
		t.Fatalf("bindings:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}

func TestURLVarFollowsDBEnv(t *testing.T) {
	t.Setenv("DB_ENV", "")
	if v := urlVar(); v != "DATABASE_URL" {
		t.Errorf("without DB_ENV: %s", v)
	}
	t.Setenv("DB_ENV", "ORDERS")
	if v := urlVar(); v != "ORDERS_URL" {
		t.Errorf("DB_ENV=ORDERS: %s", v)
	}
}
