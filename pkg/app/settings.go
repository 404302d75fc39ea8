package app

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"tug.dev/tug/pkg/usage"
)

// Probe is a parsed healthcheck: one of HTTP GET, TCP connect or a command.
type Probe struct {
	Kind    string // "http", "tcp" or "exec"
	Port    int32
	Path    string
	Command string
}

// ParseProbe reads "http:PORT/PATH", "tcp:PORT" or "exec:COMMAND".
func ParseProbe(spec string) (Probe, error) {
	kind, rest, ok := strings.Cut(spec, ":")
	bad := func(why string) (Probe, error) {
		return Probe{}, fmt.Errorf("invalid healthcheck %q: %s (want http:PORT/PATH, tcp:PORT or exec:COMMAND)", spec, why)
	}
	if !ok || rest == "" {
		return bad("missing ':'")
	}
	switch kind {
	case "http":
		portStr, path, _ := strings.Cut(rest, "/")
		port, err := parsePort(portStr)
		if err != nil {
			return bad(err.Error())
		}
		return Probe{Kind: kind, Port: port, Path: "/" + path}, nil
	case "tcp":
		port, err := parsePort(rest)
		if err != nil {
			return bad(err.Error())
		}
		return Probe{Kind: kind, Port: port}, nil
	case "exec":
		if strings.TrimSpace(rest) == "" {
			return bad("empty command")
		}
		return Probe{Kind: kind, Command: rest}, nil
	default:
		return bad(fmt.Sprintf("unknown kind %q", kind))
	}
}

func parsePort(s string) (int32, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return int32(p), nil
}

// Validate checks every probe and timing of a healthcheck.
func (h Healthcheck) Validate() error {
	for _, spec := range []string{h.Readiness, h.Liveness, h.Startup} {
		if spec == "" {
			continue
		}
		if _, err := ParseProbe(spec); err != nil {
			return usage.Wrap(err)
		}
	}
	for name, v := range map[string]int32{"--initial-delay": h.InitialDelay, "--period": h.Period, "--timeout": h.Timeout, "--failure-threshold": h.FailureThreshold} {
		if v < 0 {
			return usage.Errorf("%s must not be negative", name)
		}
	}
	if h.Readiness == "" && h.Liveness == "" && h.Startup == "" {
		return usage.Errorf("no probe given: set --readiness, --liveness or --startup")
	}
	return nil
}

// Validate checks each quantity with Kubernetes' own parser, and that a
// request does not exceed its limit.
func (l Limits) Validate() error {
	q := map[string]resource.Quantity{}
	for name, v := range map[string]string{"--cpu": l.CPU, "--memory": l.Memory, "--cpu-request": l.CPURequest, "--memory-request": l.MemoryRequest} {
		if v == "" {
			continue
		}
		parsed, err := resource.ParseQuantity(v)
		if err != nil {
			return usage.Errorf("invalid %s %q: not a quantity (examples: 500m, 1, 256Mi, 1Gi)", name, v)
		}
		if parsed.Sign() <= 0 {
			return usage.Errorf("invalid %s %q: must be more than zero", name, v)
		}
		q[name] = parsed
	}
	for _, pair := range [][2]string{{"--cpu-request", "--cpu"}, {"--memory-request", "--memory"}} {
		req, hasReq := q[pair[0]]
		lim, hasLim := q[pair[1]]
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			return usage.Errorf("%s %s is more than %s %s", pair[0], req.String(), pair[1], lim.String())
		}
	}
	return nil
}

// Validate checks an autoscale range.
func (a Autoscale) Validate() error {
	switch {
	case a.Min < 1:
		return usage.Errorf("--min must be at least 1, not %d", a.Min)
	case a.Max < a.Min:
		return usage.Errorf("--max %d is less than --min %d", a.Max, a.Min)
	case a.CPUPercent < 1 || a.CPUPercent > 1000:
		return usage.Errorf("--cpu must be a percentage from 1%% to 1000%%, not %d%%", a.CPUPercent)
	}
	return nil
}
