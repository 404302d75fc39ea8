package app

import (
	"testing"
)

func TestParseProbe(t *testing.T) {
	const want = " (want http:PORT/PATH, tcp:PORT or exec:COMMAND)"
	tests := []struct {
		spec string
		want Probe
		err  string
	}{
		{spec: "http:8080/healthz", want: Probe{Kind: "http", Port: 8080, Path: "/healthz"}},
		{spec: "http:80", want: Probe{Kind: "http", Port: 80, Path: "/"}},
		{spec: "http:80/", want: Probe{Kind: "http", Port: 80, Path: "/"}},
		{spec: "http:443/a/b?c=d", want: Probe{Kind: "http", Port: 443, Path: "/a/b?c=d"}},
		{spec: "http:1/", want: Probe{Kind: "http", Port: 1, Path: "/"}},
		{spec: "tcp:5432", want: Probe{Kind: "tcp", Port: 5432}},
		{spec: "tcp:65535", want: Probe{Kind: "tcp", Port: 65535}},
		{spec: "exec:pg_isready -U app", want: Probe{Kind: "exec", Command: "pg_isready -U app"}},
		{spec: "exec:test -f /tmp/ready:yes", want: Probe{Kind: "exec", Command: "test -f /tmp/ready:yes"}},

		{spec: "", err: `invalid healthcheck "": missing ':'` + want},
		{spec: "http", err: `invalid healthcheck "http": missing ':'` + want},
		{spec: "tcp:", err: `invalid healthcheck "tcp:": missing ':'` + want},
		{spec: "http:/healthz", err: `invalid healthcheck "http:/healthz": port "" is not a number from 1 to 65535` + want},
		{spec: "http:web/healthz", err: `invalid healthcheck "http:web/healthz": port "web" is not a number from 1 to 65535` + want},
		{spec: "http:0/", err: `invalid healthcheck "http:0/": port "0" is not a number from 1 to 65535` + want},
		{spec: "tcp:65536", err: `invalid healthcheck "tcp:65536": port "65536" is not a number from 1 to 65535` + want},
		{spec: "tcp:-1", err: `invalid healthcheck "tcp:-1": port "-1" is not a number from 1 to 65535` + want},
		{spec: "tcp:80/x", err: `invalid healthcheck "tcp:80/x": port "80/x" is not a number from 1 to 65535` + want},
		{spec: "exec:   ", err: `invalid healthcheck "exec:   ": empty command` + want},
		{spec: "grpc:9000", err: `invalid healthcheck "grpc:9000": unknown kind "grpc"` + want},
		{spec: "HTTP:80/", err: `invalid healthcheck "HTTP:80/": unknown kind "HTTP"` + want},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseProbe(tt.spec)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseProbe(%q) = %+v, %v; want error %q", tt.spec, got, err, tt.err)
				}
				if got != (Probe{}) {
					t.Errorf("ParseProbe(%q) returned %+v with its error", tt.spec, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseProbe(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
			}
		})
	}
}

func TestHealthcheckValidate(t *testing.T) {
	tests := []struct {
		name string
		h    Healthcheck
		err  string
	}{
		{"readiness only", Healthcheck{Readiness: "http:8080/ready"}, ""},
		{"liveness only", Healthcheck{Liveness: "tcp:8080"}, ""},
		{"startup only", Healthcheck{Startup: "exec:true"}, ""},
		{"all three with timings", Healthcheck{Readiness: "http:8080/", Liveness: "tcp:8080", Startup: "exec:true",
			InitialDelay: 5, Period: 10, Timeout: 1, FailureThreshold: 3}, ""},
		{"zero timings are defaults", Healthcheck{Readiness: "tcp:1", InitialDelay: 0, Period: 0}, ""},

		{"nothing set", Healthcheck{}, "no probe given: set --readiness, --liveness or --startup"},
		{"timings without a probe", Healthcheck{Period: 5}, "no probe given: set --readiness, --liveness or --startup"},
		{"bad readiness", Healthcheck{Readiness: "http:x/"},
			`invalid healthcheck "http:x/": port "x" is not a number from 1 to 65535 (want http:PORT/PATH, tcp:PORT or exec:COMMAND)`},
		{"bad liveness", Healthcheck{Readiness: "tcp:80", Liveness: "udp:53"},
			`invalid healthcheck "udp:53": unknown kind "udp" (want http:PORT/PATH, tcp:PORT or exec:COMMAND)`},
		{"bad startup", Healthcheck{Startup: "exec:"},
			`invalid healthcheck "exec:": missing ':' (want http:PORT/PATH, tcp:PORT or exec:COMMAND)`},
		{"negative initial delay", Healthcheck{Readiness: "tcp:80", InitialDelay: -1}, "--initial-delay must not be negative"},
		{"negative period", Healthcheck{Readiness: "tcp:80", Period: -5}, "--period must not be negative"},
		{"negative timeout", Healthcheck{Readiness: "tcp:80", Timeout: -1}, "--timeout-seconds must not be negative"},
		{"negative failure threshold", Healthcheck{Readiness: "tcp:80", FailureThreshold: -3}, "--failure-threshold must not be negative"},
		{"a bad probe is reported before a bad timing", Healthcheck{Readiness: "tcp:0", Period: -1},
			`invalid healthcheck "tcp:0": port "0" is not a number from 1 to 65535 (want http:PORT/PATH, tcp:PORT or exec:COMMAND)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.h.Validate()
			if tt.err == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.err {
				t.Errorf("Validate() = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name string
		l    Limits
		err  string
	}{
		{"nothing set", Limits{}, ""},
		{"limits only", Limits{CPU: "500m", Memory: "256Mi"}, ""},
		{"requests only", Limits{CPURequest: "2", MemoryRequest: "1Gi"}, ""},
		{"request equal to limit", Limits{CPU: "1", CPURequest: "1000m", Memory: "1Gi", MemoryRequest: "1024Mi"}, ""},
		{"request below limit", Limits{CPU: "2", CPURequest: "250m", Memory: "2G", MemoryRequest: "1G"}, ""},
		{"decimal cpu", Limits{CPU: "0.5"}, ""},

		{"not a quantity", Limits{CPU: "lots"}, `invalid --cpu "lots": not a quantity (examples: 500m, 1, 256Mi, 1Gi)`},
		{"unit typo", Limits{Memory: "256MB"}, `invalid --memory "256MB": not a quantity (examples: 500m, 1, 256Mi, 1Gi)`},
		{"bad cpu request", Limits{CPURequest: "1 core"}, `invalid --cpu-request "1 core": not a quantity (examples: 500m, 1, 256Mi, 1Gi)`},
		{"bad memory request", Limits{MemoryRequest: "1.5.5"}, `invalid --memory-request "1.5.5": not a quantity (examples: 500m, 1, 256Mi, 1Gi)`},
		{"zero", Limits{Memory: "0"}, `invalid --memory "0": must be more than zero`},
		{"negative", Limits{CPU: "-1"}, `invalid --cpu "-1": must be more than zero`},
		{"zero request", Limits{CPURequest: "0m"}, `invalid --cpu-request "0m": must be more than zero`},
		{"cpu request above limit", Limits{CPU: "500m", CPURequest: "1"}, "--cpu-request 1 is more than --cpu 500m"},
		{"memory request above limit", Limits{Memory: "1Gi", MemoryRequest: "2Gi"}, "--memory-request 2Gi is more than --memory 1Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if tt.err == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.err {
				t.Errorf("Validate() = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestLimitsIsZero(t *testing.T) {
	if !(Limits{}).IsZero() {
		t.Error("empty limits are not zero")
	}
	for _, l := range []Limits{{CPU: "1"}, {Memory: "1Gi"}, {CPURequest: "1"}, {MemoryRequest: "1Mi"}} {
		if l.IsZero() {
			t.Errorf("%+v IsZero", l)
		}
	}
}

func TestAutoscaleValidate(t *testing.T) {
	tests := []struct {
		name string
		a    Autoscale
		err  string
	}{
		{"typical", Autoscale{Min: 2, Max: 10, CPUPercent: 70}, ""},
		{"fixed size", Autoscale{Min: 3, Max: 3, CPUPercent: 50}, ""},
		{"lowest percent", Autoscale{Min: 1, Max: 2, CPUPercent: 1}, ""},
		{"highest percent", Autoscale{Min: 1, Max: 2, CPUPercent: 1000}, ""},

		{"min zero", Autoscale{Min: 0, Max: 3, CPUPercent: 50}, "--min must be at least 1, not 0"},
		{"min negative", Autoscale{Min: -2, Max: 3, CPUPercent: 50}, "--min must be at least 1, not -2"},
		{"max below min", Autoscale{Min: 5, Max: 4, CPUPercent: 50}, "--max 4 is less than --min 5"},
		{"percent zero", Autoscale{Min: 1, Max: 2, CPUPercent: 0}, "--cpu must be a percentage from 1% to 1000%, not 0%"},
		{"percent too high", Autoscale{Min: 1, Max: 2, CPUPercent: 1001}, "--cpu must be a percentage from 1% to 1000%, not 1001%"},
		{"min checked first", Autoscale{Min: 0, Max: -1, CPUPercent: 0}, "--min must be at least 1, not 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate()
			if tt.err == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.err {
				t.Errorf("Validate() = %v, want %q", err, tt.err)
			}
		})
	}
}
