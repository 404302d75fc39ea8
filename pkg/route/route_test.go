package route

import (
	"strings"
	"testing"
)

func TestAppHostStaysOneLabel(t *testing.T) {
	if got := AppHost("shop", "dev", "apps.example.com"); got != "shop-dev.apps.example.com" {
		t.Errorf("AppHost = %q", got)
	}
	long := strings.Repeat("n", 60)
	a, b := AppHost("shop", long, "d.io"), AppHost("shop", long[:59]+"m", "d.io")
	label := strings.Split(a, ".")[0]
	if len(label) > 63 || !strings.HasPrefix(label, "shop-") || a == b {
		t.Errorf("AppHost for a long namespace = %q (%d), %q", a, len(label), b)
	}
}

func TestHostMatches(t *testing.T) {
	for _, tt := range []struct {
		listener, host string
		want           bool
	}{
		{"", "anything.example.com", true},
		{"*.apps.example.com", "shop-dev.apps.example.com", true},
		{"*.apps.example.com", "a.b.apps.example.com", false},
		{"*.apps.example.com", "apps.example.com", false},
		{"shop.example.com", "shop.example.com", true},
	} {
		if got := hostMatches(tt.listener, tt.host); got != tt.want {
			t.Errorf("hostMatches(%q, %q) = %v", tt.listener, tt.host, got)
		}
	}
}
