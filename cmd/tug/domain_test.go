package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/traffic"
)

// domain add and domain remove print their result with -o json|yaml on
// stdout (docs/output.md), the done line on stderr; on an app never
// deployed the change is staged.
func TestDomainChangesPrintTheirResult(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Domains: []app.Domain{{Host: "old.example.com"}}})
	// domain add lists every namespace's HTTPRoutes (a list that fails
	// fails the command): a cluster with none, not the fixture's server
	defer func(f func(*rest.Config) (dynamic.Interface, error)) { newDynamic = f }(newDynamic)
	newDynamic = func(*rest.Config) (dynamic.Interface, error) {
		return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{route.HTTPRoutes: "HTTPRouteList"}), nil
	}

	r := p.run(t, false, "domain", "add", "shop", "Shop.Example.com", "--path", "/api", "-o", "json")
	if r.code != 0 {
		t.Fatalf("domain add: exit %d, stderr %q", r.code, r.stderr)
	}
	var added traffic.DomainResult
	if err := json.Unmarshal([]byte(r.stdout), &added); err != nil {
		t.Fatalf("domain add -o json printed no result: %v\n%s", err, r.stdout)
	}
	want := traffic.DomainResult{App: "shop", Namespace: "dev", Host: "shop.example.com", Change: "added",
		Changed: []app.Domain{{Host: "shop.example.com", Path: "/api"}},
		Domains: []app.Domain{{Host: "old.example.com"}, {Host: "shop.example.com", Path: "/api"}},
		Status:  app.StatusStaged, URLs: []string{"http://old.example.com/", "http://shop.example.com/api"}}
	added.DurationMS = 0
	if !reflect.DeepEqual(added, want) {
		t.Errorf("domain add -o json:\n got %+v\nwant %+v", added, want)
	}
	if !strings.Contains(r.stderr, "shop.example.com/api routes to shop; it applies at the first deploy") {
		t.Errorf("done line not on stderr: %q", r.stderr)
	}
	for _, field := range []string{`"changed":`, `"domains":`, `"urls":`, `"status": "staged"`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("domain add -o json lacks %s:\n%s", field, r.stdout)
		}
	}

	r = p.run(t, false, "domain", "remove", "shop", "shop.example.com", "-o", "yaml")
	if r.code != 0 {
		t.Fatalf("domain remove: exit %d, stderr %q", r.code, r.stderr)
	}
	var removed traffic.DomainResult
	if err := yaml.Unmarshal([]byte(r.stdout), &removed); err != nil {
		t.Fatalf("domain remove -o yaml: %v\n%s", err, r.stdout)
	}
	if removed.Change != "removed" || !reflect.DeepEqual(removed.Changed, []app.Domain{{Host: "shop.example.com", Path: "/api"}}) ||
		!reflect.DeepEqual(removed.Domains, []app.Domain{{Host: "old.example.com"}}) || !reflect.DeepEqual(removed.URLs, []string{"http://old.example.com/"}) {
		t.Errorf("domain remove -o yaml: %+v", removed)
	}

	// without -o: nothing on stdout; a refused change prints no result
	if r := p.run(t, false, "domain", "add", "shop", "new.example.com"); r.code != 0 || r.stdout != "" {
		t.Errorf("domain add without -o: exit %d, stdout %q", r.code, r.stdout)
	}
	if r := p.run(t, false, "domain", "remove", "shop", "gone.example.com", "-o", "json"); r.code == 0 || r.stdout != "" {
		t.Errorf("domain remove of a host the app lacks: exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestNewDomainCmds(t *testing.T) {
	a, err := parseCmd(t, newDomainAddCmd, "shop", "example.com", "--path", "/shop", "--ingress-class", "nginx", "-o", "json")
	if err != nil || a == nil || a.App != "shop" || a.Host != "example.com" || a.Path != "/shop" || a.IngressClass != "nginx" || a.Format != cli.OutputJSON {
		t.Fatalf("add: error %v, options %+v", err, a)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{{[]string{"shop", "exa mple.com"}, "exa mple.com"}, {[]string{"shop", "example.com", "--path", "shop"}, "shop"}, {[]string{"shop"}, "missing HOST"}} {
		a, err := parseCmd(t, newDomainAddCmd, c.argv...)
		wantParseError(t, a, err, c.want)
	}
	r, err := parseCmd(t, newDomainRemoveCmd, "shop", "Example.com")
	if err != nil || r == nil || r.App != "shop" || r.Host != "Example.com" || r.Format != cli.OutputTable {
		t.Fatalf("remove: error %v, options %+v", err, r)
	}
	r, err = parseCmd(t, newDomainRemoveCmd, "shop", "-bad-")
	wantParseError(t, r, err, "-bad-")
	l, err := parseCmd(t, newDomainListCmd, "shop")
	if err != nil || l == nil || l.App != "shop" {
		t.Fatalf("list: error %v, options %+v", err, l)
	}
}

func TestRunDomainList(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Domains: []app.Domain{{Host: "shop.example.com", Path: "/"}}})
	p.mustCreateApp(t, &app.App{Name: "blog"})
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	o := &domainListOptions{IO: ios, Store: fixtureStore(p), CommandName: "tug", App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runDomainList(ctx, o); err != nil || !strings.Contains(out.String(), "shop.example.com\t/\t-\t-") {
		t.Errorf("shop: %v\n%s", err, out)
	}
	o.App = "blog"
	if err := runDomainList(ctx, o); err != nil || !strings.Contains(errOut.String(), `app "blog" has no domains; add one with 'tug domain add blog HOST'`) {
		t.Errorf("blog: %v, stderr %q", err, errOut)
	}
}
