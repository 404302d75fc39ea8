package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/traffic"
)

func TestNewCertCmds(t *testing.T) {
	a, err := parseCmd(t, newCertAddCmd, "shop", "shop.example.com", "--cert", "testdata/none.crt", "--key", "testdata/none.key")
	wantParseError(t, a, err, "none.crt")
	a, err = parseCmd(t, newCertAddCmd, "shop", "shop.example.com")
	wantParseError(t, a, err, "--cert")
	r, err := parseCmd(t, newCertRemoveCmd, "shop", "shop.example.com")
	if err != nil || r == nil || r.App != "shop" || r.Host != "shop.example.com" {
		t.Fatalf("remove: error %v, options %+v", err, r)
	}
	r, err = parseCmd(t, newCertRemoveCmd, "Shop", "shop.example.com")
	wantParseError(t, r, err, `"Shop"`)
	l, err := parseCmd(t, newCertListCmd, "shop", "-o", "yaml")
	if err != nil || l == nil || l.App != "shop" || l.Output.Format != cli.OutputYAML {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
}

// cert list of an app without certificates prints the table's header
// only; a missing app is not found; a cert change that cannot reach the
// cluster returns why.
func TestRunCertList(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop"})
	ctx := context.Background()
	ios, _, out, _ := cli.TestIOStreams()
	o := &certListOptions{IO: ios, Store: fixtureStore(p), Now: time.Now, App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable},
		Dynamic: func() (dynamic.Interface, error) { return nil, nil }}
	if err := runCertList(ctx, o); err != nil || !strings.HasPrefix(out.String(), "HOST\tSTATUS\tSOURCE") {
		t.Errorf("shop: %v\n%q", err, out)
	}
	o.App = "blog"
	if err := runCertList(ctx, o); !app.IsNotFound(err) {
		t.Errorf("a missing app: %v", err)
	}
	ch := failingChanger(ios, errors.New("forbidden"))
	if err := runCertRemove(ctx, &certRemoveOptions{Changer: ch, App: "shop", Host: "shop.example.com"}); err == nil || err.Error() != "forbidden" {
		t.Errorf("cert remove: %v", err)
	}
	if err := runCertAdd(ctx, &certAddOptions{Changer: ch, CertAddOptions: traffic.CertAddOptions{App: "shop"}}); err == nil || err.Error() != "forbidden" {
		t.Errorf("cert add: %v", err)
	}
}
