package traffic

import (
	"net/netip"
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

// Fuzz targets for allowed sources and domains: nothing panics, a refusal
// is an input error, and what is accepted is canonical and accepted again
// unchanged. hack/fuzz.sh runs them; f.Add holds the seed corpus.

func FuzzParseCIDR(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "192.168.1.5", "2001:db8::1", "2001:DB8::/32", "10.0.0.1/8", "::ffff:10.0.0.1",
		"::ffff:10.0.0.0/104", "::ffff:0:0/95", "fe80::1%eth0", "::/0", "0.0.0.0/0", "010.0.0.1", "10.0.0.0/08", "1.2.3.4/33", "lots", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := (&AllowOptions{App: "shop", Sources: []string{s}}).Validate()
		c, perr := ParseCIDR(s)
		if (err == nil) != (perr == nil) || (err != nil && !inputerr.Is(err)) {
			t.Fatalf("ParseCIDR: %v; Validate: %v", perr, err)
		}
		if perr != nil {
			return
		}
		p, err := netip.ParsePrefix(c)
		if err != nil || p.Masked() != p || p.Addr().Is4In6() || p.Addr().Zone() != "" || p.String() != c {
			t.Fatalf("%q became %q, not a canonical range (%v)", s, c, err)
		}
		if again, err := ParseCIDR(c); err != nil || again != c {
			t.Fatalf("%q reads as %q, %v", c, again, err)
		}
	})
}

func FuzzDomain(f *testing.F) {
	for _, s := range [][2]string{{"shop.example.com", "/"}, {"*.Example.COM", "/api"}, {"localhost", ""}, {"10.1.2.3", "/"},
		{"a..b", "/"}, {"shop.example.com", "/a b"}, {"shop.example.com", "api"}, {"xn--bcher-kva.example", "/?x"}, {"\u212a.example.com", "/"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, host, path string) {
		o := DomainAddOptions{App: "shop", Host: host, Path: path}
		if err := o.Validate(); err != nil {
			if !inputerr.Is(err) {
				t.Fatalf("a refusal that is not an input error: %v", err)
			}
			return
		}
		if o.Host != strings.ToLower(o.Host) || ValidateHost(o.Host) != nil || ValidatePath(o.Path) != nil {
			t.Fatalf("accepted %q %q", o.Host, o.Path)
		}
		again := DomainAddOptions{App: "shop", Host: o.Host, Path: o.Path}
		if err := again.Validate(); err != nil || again.Host != o.Host || again.Path != o.Path {
			t.Fatalf("%q %q is not accepted again unchanged: %v", o.Host, o.Path, err)
		}
	})
}
