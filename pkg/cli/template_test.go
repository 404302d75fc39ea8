package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/inputerr"
)

type release struct {
	Version int    `json:"version"`
	Image   string `json:"image"`
}

func printWith(t *testing.T, o OutputOptions, data any) string {
	t.Helper()
	ios, _, out, _ := TestIOStreams()
	if err := o.Print(ios, data, func() error { t.Error("human form printed"); return nil }); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestTemplateFormats(t *testing.T) {
	data := []sample{{Name: "web", Units: []string{"web-1", "web-2"}}, {Name: "worker", Units: []string{}}}
	for _, c := range []struct{ flag, want string }{
		{"jsonpath={.[*].name}", "web worker"},
		{"jsonpath={range .[*]}{.name}{\"\\n\"}{end}", "web\nworker\n"},
		{"jsonpath={[*].name}", "web worker"},
		{"jsonpath={.[0].units[1]}", "web-2"},
		{"jsonpath=.[1].name", "worker"},
		{"jsonpath={.[0].nosuchfield}", ""},
		{"go-template={{range .}}{{.name}}={{len .units}};{{end}}", "web=2;worker=0;"},
	} {
		o, err := parseOutputFlags(t, "-o", c.flag)
		if err != nil {
			t.Errorf("%s: %v", c.flag, err)
			continue
		}
		if got := printWith(t, o, data); got != c.want {
			t.Errorf("%s: got %q, want %q", c.flag, got, c.want)
		}
	}
	// Numbers print as numbers, not 3e+00.
	o, _ := parseOutputFlags(t, "-o", "jsonpath={.version}")
	if got := printWith(t, o, release{Version: 3}); got != "3" {
		t.Errorf("version: got %q", got)
	}
}

func TestTemplateFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.tmpl")
	if err := os.WriteFile(path, []byte("{{.name}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parseOutputFlags(t, "-o", "go-template-file="+path)
	if err != nil {
		t.Fatal(err)
	}
	if got := printWith(t, o, sample{Name: "web"}); got != "web\n" {
		t.Errorf("got %q", got)
	}
	if _, err := parseOutputFlags(t, "-o", "jsonpath-file="+filepath.Join(dir, "none")); err == nil || !inputerr.Is(err) {
		t.Errorf("a missing template file: %v, want a usage error", err)
	}
}

func TestBadTemplatesAreUsageErrors(t *testing.T) {
	for _, flag := range []string{"jsonpath={.name", "go-template={{.name", "xpath=/a", "name"} {
		_, err := parseOutputFlags(t, "-o", flag)
		if err == nil || !inputerr.Is(err) {
			t.Errorf("-o %s: %v, want a usage error", flag, err)
		}
	}
}

func parseListFlags(t *testing.T, kind string, args ...string) OutputOptions {
	t.Helper()
	var o OutputOptions
	group := &cobra.Command{Use: "app"}
	list := &cobra.Command{Use: "list", Run: func(*cobra.Command, []string) {}}
	group.AddCommand(list)
	if kind != "" {
		SetNameKind(list, kind)
	}
	AddOutputFlags(list, &o)
	if err := list.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOutputNameOnLists(t *testing.T) {
	o := parseListFlags(t, "", "-o", "name")
	if o.Format != OutputName || o.NameKind != "app" {
		t.Fatalf("got %+v", o)
	}
	if got := printWith(t, o, []sample{{Name: "blog"}, {Name: "shop"}}); got != "app/blog\napp/shop\n" {
		t.Errorf("array: got %q", got)
	}
	o.NameKind = "release"
	if got := printWith(t, o, []release{{Version: 4}, {Version: 3}}); got != "release/v4\nrelease/v3\n" {
		t.Errorf("releases: got %q", got)
	}
	o.NameKind = "node"
	nodes := map[string]any{"nodes": []map[string]string{{"name": "w1"}, {"name": "w2"}}, "unreachable": []string{}}
	if got := printWith(t, o, nodes); got != "node/w1\nnode/w2\n" {
		t.Errorf("object holding the list: got %q", got)
	}
	o = parseListFlags(t, "process", "-o", "name")
	if got := printWith(t, o, map[string]any{"worker": nil, "web": map[string]string{"cpu": "1"}}); got != "process/web\nprocess/worker\n" {
		t.Errorf("object keyed by name: got %q", got)
	}
	o.NameKind = "domain"
	if got := printWith(t, o, []map[string]string{{"host": "a.example.com"}}); got != "domain/a.example.com\n" {
		t.Errorf("hosts: got %q", got)
	}
	o.NameKind = "node-container"
	if got := printWith(t, o, []map[string]string{{"name": "ship", "pool": "a"}, {"name": "ship"}}); got != "node-container/ship\n" {
		t.Errorf("one line per name: got %q", got)
	}
	if !strings.Contains(o.NameKind, "node") {
		t.Fatal("unreachable")
	}
}
