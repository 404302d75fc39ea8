package imagebuild

import (
	"strings"
	"testing"
)

func TestParseRepository(t *testing.T) {
	for _, c := range []struct{ in, registry, path string }{
		{"10.200.0.1:15000/e2e/shop", "10.200.0.1:15000", "e2e/shop"},
		{"registry.example.com/team/shop", "registry.example.com", "team/shop"},
		{"localhost/shop", "localhost", "shop"},
		{"localhost:5000/a/b/c", "localhost:5000", "a/b/c"},
		{"Registry.Example.com/shop", "Registry.Example.com", "shop"}, // host names are not case-sensitive
		{"[::1]:5000/shop", "[::1]:5000", "shop"},
		{"team/shop", "", "team/shop"}, // Docker Hub
		{"shop", "", "shop"},
		{"reg.io/my_app/a.b/c__d/e--f", "reg.io", "my_app/a.b/c__d/e--f"},
	} {
		r, err := ParseRepository(c.in)
		if err != nil || r.Registry != c.registry || r.Path != c.path || r.String() != c.in {
			t.Errorf("ParseRepository(%q) = %+v, %v; want %s %s", c.in, r, err, c.registry, c.path)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"reg.io/shop:v1", "tag (:v1)"},
		{"shop:latest", "tag (:latest)"},
		{"localhost:5000/shop:1", "tag (:1)"},
		{"reg.io/shop@sha256:" + strings.Repeat("a", 64), "digest (@sha256:"},
		{"reg.io/shop:v1@sha256:abc", "digest"},
		{"reg.io/Shop", "capitals"},
		{"Team/shop", "capitals"},
		{"reg.io/team/MyApp", "capitals"},
		{"reg.io/", "no repository"},
		{"reg.io:5000", "no repository"},
		{"localhost", "no repository"},
		{"reg.io//shop", "empty path component"},
		{"reg.io/shop/", "empty path component"},
		{"reg.io/-shop", "start and end"},
		{"reg.io/sh...op", `has "..."`},
		{"reg.io/sh_-op", `has "_-"`},
		{"reg.io/sh!op", `has "!"`},
		{"bad_host.io/shop", "not a host name"},
		{"reg.io:99999/shop", "bad port"},
		{"reg.io:/shop", "empty port"},
		{"[::1/shop", "unclosed"},
		{"reg.io/a b", "spaces"},
		{"", "empty"},
		{"reg.io/" + strings.Repeat("a", 250), "characters long"},
	} {
		if _, err := ParseRepository(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRepository(%q) = %v; want an error with %q", c.in, err, c.want)
		}
	}
}
