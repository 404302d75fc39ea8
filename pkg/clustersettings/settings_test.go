package clustersettings

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

func TestCertIssuerSetting(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  Issuer
		ok    bool
	}{
		{"ClusterIssuer/letsencrypt", Issuer{"ClusterIssuer", "letsencrypt"}, true},
		{"Issuer/team-ca", Issuer{"Issuer", "team-ca"}, true},
		{"letsencrypt", Issuer{}, false}, // a bare name: which kind?
		{"clusterissuer/letsencrypt", Issuer{}, false},
		{"Vault/ca", Issuer{}, false},
		{"ClusterIssuer/", Issuer{}, false},
		{"ClusterIssuer/Bad_Name", Issuer{}, false},
		{"ClusterIssuer/a/b", Issuer{}, false},
	} {
		got, err := ParseIssuer(tt.value)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseIssuer(%q) = %+v, %v", tt.value, got, err)
		}
		err = Change{Set: map[string]string{CertIssuer: tt.value}}.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("set certIssuer=%q: %v", tt.value, err)
		}
		if err != nil && (!inputerr.Is(err) || !strings.Contains(err.Error(), "ClusterIssuer/NAME or Issuer/NAME")) {
			t.Errorf("set certIssuer=%q: want a usage error saying the shape, got %v", tt.value, err)
		}
		if tt.ok && got.String() != tt.value {
			t.Errorf("String() = %q, want %q", got.String(), tt.value)
		}
	}
	// the pool's value wins; a bad stored value is an error, not ignored
	s := &Stored{Cluster: Settings{CertIssuer: "ClusterIssuer/le"}, Pools: map[string]Settings{"edge": {CertIssuer: "letsencrypt"}}}
	if i, ok, err := s.For("").CertIssuer(); !ok || err != nil || i.Name != "le" {
		t.Errorf("cluster issuer %+v %v %v", i, ok, err)
	}
	if _, ok, err := s.For("edge").CertIssuer(); ok || err == nil {
		t.Errorf("a bad pool value: ok %v, err %v", ok, err)
	}
	if _, ok, err := (&Stored{}).For("").CertIssuer(); ok || err != nil {
		t.Errorf("no issuer: ok %v, err %v", ok, err)
	}
}
