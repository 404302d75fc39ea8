package traffic

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
)

func TestValidateHost(t *testing.T) {
	for host, wantErr := range map[string]string{
		"shop.example.com":   "",
		"*.example.com":      "",
		"localhost":          "",
		"":                   "empty",
		"10.1.2.3":           "not IP addresses",
		"nodot":              "at least one dot",
		"bad_host.example":   `invalid host "bad_host.example": '_' is not allowed: a host has letters, digits, '-' and '.'`,
		"UPPER.example.com":  "",
		"Shop_X.Example.com": `invalid host "Shop_X.Example.com": '_' is not allowed`, // as typed, not lower-cased
		"a..b.example.com":   `invalid host "a..b.example.com": it has an empty label (two dots in a row, or a dot at either end)`,
		"a.*.example.com":    "a wildcard is allowed only as the first label",
		"shop-.example.com":  `the label "shop-" starts or ends with '-'`,
		"*.*.example.com":    "invalid host",
		"shop.example.com.":  "it has an empty label",
		"-shop.example.com":  "invalid host",
		"shop.example.com/x": "invalid host",
	} {
		err := ValidateHost(host)
		if (wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("ValidateHost(%q) = %v, want %q", host, err, wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "regex") {
			t.Errorf("ValidateHost(%q) prints a regular expression: %v", host, err)
		}
	}
	long := strings.Repeat("a", 64) + ".example.com"
	if err := ValidateHost(long); err == nil || !strings.Contains(err.Error(), "is 64 characters long; the limit is 63") {
		t.Errorf("a 64-character label: %v", err)
	}
}

func TestParseCIDR(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.0/8":  "10.0.0.0/8",
		"192.168.1.5": "192.168.1.5/32",
		"2001:db8::1": "2001:db8::1/128",
		"10.0.0.1/8":  "error: did you mean 10.0.0.0/8",
		"lots":        "error: invalid CIDR",
		"10.0.0.0/33": "error: invalid CIDR",
		// issue 12 item 8: IPv4-mapped IPv6 is the IPv4 address it maps
		"::ffff:10.0.0.1":     "10.0.0.1/32",
		"::ffff:10.0.0.0/104": "10.0.0.0/8",
		"::ffff:10.0.0.1/128": "10.0.0.1/32",
		"::ffff:10.0.0.0/95":  "error: IPv4-mapped range must be /96 or longer",
		"::ffff:10.0.0.1/104": "error: did you mean 10.0.0.0/8",
		"2001:DB8::/32":       "2001:db8::/32",
		"2001:db8:0:0::1":     "2001:db8::1/128",
		"fe80::1%eth0":        "error: zone",
		"010.0.0.1":           "error: invalid CIDR",
		"10.0.0.0/8 ":         "error: invalid CIDR",
		"::/0":                "::/0",
	} {
		got, err := ParseCIDR(in)
		if strings.HasPrefix(want, "error: ") {
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(want, "error: ")) {
				t.Errorf("ParseCIDR(%q) = %q, %v; want an error with %q", in, got, err, want)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ParseCIDR(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestDomains(t *testing.T) {
	a := &app.App{Name: "shop"}
	if err := AddDomain(a, app.Domain{Host: "shop.example.com", Path: "/"}); err != nil {
		t.Fatal(err)
	}
	if err := AddDomain(a, app.Domain{Host: "shop.example.com", Path: "/"}); err == nil {
		t.Fatal("the same host and path twice was accepted")
	}
	a.Domains[0].TLSSecret = "shop-tls"
	// a second path of a host with a certificate shares it
	if err := AddDomain(a, app.Domain{Host: "shop.example.com", Path: "/api"}); err != nil || a.Domains[1].TLSSecret != "shop-tls" {
		t.Fatalf("second path: %v, %+v", err, a.Domains)
	}
	secret, err := RemoveDomain(a, "SHOP.example.com")
	if err != nil || secret != "shop-tls" || len(a.Domains) != 0 {
		t.Fatalf("RemoveDomain = %q, %v; domains left %+v", secret, err, a.Domains)
	}
	if _, err := RemoveDomain(a, "shop.example.com"); err == nil || !strings.Contains(err.Error(), "no domain") {
		t.Fatalf("removing a missing domain: %v", err)
	}
}

func pair(t *testing.T, hosts []string, from, to time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts, NotBefore: from, NotAfter: to}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func TestCheckPair(t *testing.T) {
	now := time.Now()
	good, goodKey := pair(t, []string{"*.example.com"}, now.Add(-time.Hour), now.Add(time.Hour))
	_, otherKey := pair(t, []string{"*.example.com"}, now.Add(-time.Hour), now.Add(time.Hour))
	old, oldKey := pair(t, []string{"shop.example.com"}, now.Add(-48*time.Hour), now.Add(-time.Hour))
	future, futureKey := pair(t, []string{"shop.example.com"}, now.Add(time.Hour), now.Add(48*time.Hour))
	for _, c := range []struct {
		name      string
		cert, key []byte
		host      string
		want      string
	}{
		{"wildcard matches", good, goodKey, "shop.example.com", ""},
		{"other key", good, otherKey, "shop.example.com", "does not match"},
		{"host not named", good, goodKey, "shop.example.org", "not for shop.example.org"},
		{"expired", old, oldKey, "shop.example.com", "expired"},
		{"not yet valid", future, futureKey, "shop.example.com", "not valid before"},
		{"not PEM", []byte("hello"), goodKey, "shop.example.com", "not a PEM"},
	} {
		_, err := CheckPair(c.cert, c.key, c.host, now)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: CheckPair = %v, want %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: the error shows the key: %v", c.name, err)
		}
	}
}
