package app

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"tug.dev/tug/pkg/inputerr"
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
		if err := checkProbePath("/" + path); err != nil {
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

// String is the probe as ParseProbe reads it, in canonical form.
func (p Probe) String() string {
	switch p.Kind {
	case "http":
		return fmt.Sprintf("http:%d%s", p.Port, p.Path)
	case "tcp":
		return fmt.Sprintf("tcp:%d", p.Port)
	}
	return p.Kind + ":" + p.Command
}

// checkProbePath accepts what may stand in a request line as it is: the
// characters RFC 3986 allows in a path and query, and %XX escapes. A space
// would end the request line early, so the kubelet would ask for another
// path than the one given.
func checkProbePath(path string) error {
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0:
		case c == '%' && i+2 < len(path) && isHex(path[i+1]) && isHex(path[i+2]):
			i += 2
		case c == '%':
			return fmt.Errorf("path %q has a '%%' that is not a %%XX escape", path)
		default:
			return fmt.Errorf("path %q has %q; escape it as %%%02X", path, path[i:i+1], c)
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
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
			return inputerr.Wrap(err)
		}
	}
	for name, v := range map[string]int32{"--initial-delay": h.InitialDelay, "--period": h.Period, "--timeout-seconds": h.Timeout, "--failure-threshold": h.FailureThreshold} {
		if v < 0 {
			return inputerr.Errorf("%s must not be negative", name)
		}
	}
	if h.Readiness == "" && h.Liveness == "" && h.Startup == "" {
		return inputerr.Errorf("no probe given: set --readiness, --liveness or --startup")
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
			return inputerr.Errorf("invalid %s %q: not a quantity (examples: 500m, 1, 256Mi, 1Gi)", name, v)
		}
		if parsed.Sign() <= 0 {
			return inputerr.Errorf("invalid %s %q: must be more than zero", name, v)
		}
		q[name] = parsed
	}
	for _, pair := range [][2]string{{"--cpu-request", "--cpu"}, {"--memory-request", "--memory"}} {
		req, hasReq := q[pair[0]]
		lim, hasLim := q[pair[1]]
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			return inputerr.Errorf("%s %s is more than %s %s", pair[0], req.String(), pair[1], lim.String())
		}
	}
	return nil
}

// Validate checks an autoscale range.
func (a Autoscale) Validate() error {
	switch {
	case a.Min < 1:
		return inputerr.Errorf("--min must be at least 1, not %d", a.Min)
	case a.Max < a.Min:
		return inputerr.Errorf("--max %d is less than --min %d", a.Max, a.Min)
	case a.Max > MaxUnits:
		return inputerr.Errorf("--max must be at most %d, not %d", MaxUnits, a.Max)
	case a.CPUPercent < 1 || a.CPUPercent > 1000:
		return inputerr.Errorf("--cpu must be a percentage from 1%% to 1000%%, not %d%%", a.CPUPercent)
	}
	return nil
}
