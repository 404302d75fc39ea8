package app

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

// TestAutoscaleCPUDoesNotWrap (issue 12 item 8): a percentage beyond int32
// is refused, not wrapped to a valid one (4294967366 % 2^32 = 70).
func TestAutoscaleCPUDoesNotWrap(t *testing.T) {
	for cpu, want := range map[string]string{
		"4294967366%":  "--cpu must be a percentage from 1% to 1000%, not 4294967366%",
		"-4294967226%": "--cpu must be a percentage from 1% to 1000%, not -4294967226%",
		"2147483648":   "--cpu must be a percentage from 1% to 1000%, not 2147483648",
		"1001%":        "--cpu must be a percentage from 1% to 1000%, not 1001%",
		"70%%":         `invalid --cpu "70%%"`,
	} {
		_, err := SetAutoscaleOptions{App: "shop", Process: "web", Min: 1, Max: 2, CPU: cpu}.Autoscale()
		if !inputerr.Is(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("--cpu %s: %v, want %q", cpu, err, want)
		}
	}
	as, err := SetAutoscaleOptions{App: "shop", Process: "web", Min: 1, Max: 2, CPU: "1000%"}.Autoscale()
	if err != nil || as.CPUPercent != 1000 {
		t.Errorf("1000%%: %+v, %v", as, err)
	}
	if _, err := (SetAutoscaleOptions{App: "shop", Process: "web", Min: 1, Max: MaxUnits + 1, CPU: "70%"}).Autoscale(); !inputerr.Is(err) {
		t.Errorf("--max beyond MaxUnits: %v", err)
	}
}

// TestProbePathIsARequestPath (issue 12 item 8): a space or another byte a
// request line cannot carry is refused; escapes and queries are kept.
func TestProbePathIsARequestPath(t *testing.T) {
	for _, bad := range []string{"http:80/a b", "http:80/a\tb", "http:80/\x00", "http:80/caf\xc3\xa9", "http:80/a#b", "http:80/%zz", "http:80/%4", `http:80/a"b`} {
		if _, err := ParseProbe(bad); err == nil {
			t.Errorf("ParseProbe(%q) accepted", bad)
		}
	}
	for spec, path := range map[string]string{"http:80/a%20b": "/a%20b", "http:80/health?full=1&x=y": "/health?full=1&x=y", "http:80": "/", "http:8080/": "/", "http:80/~u/a:b@c;d": "/~u/a:b@c;d"} {
		p, err := ParseProbe(spec)
		if err != nil || p.Path != path {
			t.Errorf("ParseProbe(%q) = %+v, %v; want path %q", spec, p, err, path)
		}
	}
	err := Healthcheck{Readiness: "http:80/a b"}.Validate()
	if !inputerr.Is(err) || !strings.Contains(err.Error(), `path "/a b" has " "; escape it as %20`) {
		t.Errorf("Validate: %v", err)
	}
}

func TestProbeString(t *testing.T) {
	for in, want := range map[string]string{"http:080/x": "http:80/x", "http:80": "http:80/", "tcp:+22": "tcp:22", "exec:test -f /x": "exec:test -f /x"} {
		p, err := ParseProbe(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseProbe(%q).String() = %q, %v; want %q", in, p.String(), err, want)
		}
	}
}

func TestValidateUnitName(t *testing.T) {
	for _, ok := range []string{"shop-web-6d9c7b8f5-x2k9q", "shop-run-abc12"} {
		if err := ValidateUnitName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Bad_Name!", "web-1 x", "a/b", strings.Repeat("a", 254)} {
		if err := ValidateUnitName(bad); !inputerr.Is(err) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

func TestValidateTagKeys(t *testing.T) {
	if err := ValidateTagKeys([]string{"disk", "example.com/gpu"}); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"bad key!", "disk=ssd", ""} {
		if err := ValidateTagKeys([]string{"disk", bad}); !inputerr.Is(err) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}
