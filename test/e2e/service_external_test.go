package e2e

import (
	"strings"
	"testing"
)

// TestServiceExternalURI: a database tug does not run, given by its URI,
// binds like any service; 'service update --uri' gives the app new
// credentials; a bad URI exits 2 without printing it.
func TestServiceExternalURI(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("real")
	const name = "extshop"
	url := "http://" + r.appHost(name, h.NS) + "/"
	// the "outside" database is one of tug's, reached by its URI only
	h.mustTug("service", "create", "real", "--plan", "postgres")
	uri := h.credentials("real")["uri"]

	bad := "postgres://user:s3cret-word@/nohost"
	if res := h.Tug("service", "create", "ext", "--uri", bad); res.Code != 2 || strings.Contains(res.Stderr, "s3cret-word") {
		t.Errorf("a bad --uri: want exit 2 without the URI:\n%s", res)
	}
	if res := h.Tug("service", "create", "ext", "--uri", uri, "--plan", "postgres"); res.Code != 2 {
		t.Errorf("--uri with --plan: %s", res)
	}
	res := h.mustTug("service", "create", "ext", "--uri", uri)
	if strings.Contains(res.Stdout+res.Stderr, h.credentials("real")["password"]) {
		t.Errorf("create --uri printed the password:\n%s", res)
	}
	if st := h.serviceInfo("ext").Status; st != "external" {
		t.Errorf("status %q, want external", st)
	}
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	h.mustTug("service", "bind", name, "ext")
	h.routerBody(r, url, "db ok rows=", "")
	if res := h.Tug("service", "rotate", "ext"); res.Code == 0 || !strings.Contains(res.Stderr, "service update ext --uri") {
		t.Errorf("rotate of an external service: %s", res)
	}

	// its owner changes the password (here: tug rotates "real"); the app
	// gets the new URI through update
	h.mustTug("service", "rotate", "real")
	h.mustTug("service", "update", "ext", "--uri", h.credentials("real")["uri"])
	h.routerBody(r, url, "db ok rows=", "")
	if !strings.Contains(h.credentials("ext")["uri"], h.credentials("real")["password"]) {
		t.Error("the external service's binding does not hold the new URI")
	}
}
