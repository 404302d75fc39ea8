package deploy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"tug.dev/tug/pkg/app"
)

// processSettings says how a process's settings change from base to next
// (limits, healthcheck), and whether that alone restarts its units.
func processSettings(base, next *app.Release, name string) (changes []string, restarts bool) {
	var oldL app.Limits
	var oldH app.Healthcheck
	if base != nil {
		oldL, oldH = base.Limits[name], base.Healthchecks[name]
	}
	if newL := next.Limits[name]; newL != oldL {
		changes = append(changes, fmt.Sprintf("limits %s -> %s", describeLimits(oldL), describeLimits(newL)))
	}
	if newH := next.Healthchecks[name]; newH != oldH {
		changes = append(changes, fmt.Sprintf("healthcheck %s -> %s", describeHealthcheck(oldH), describeHealthcheck(newH)))
	}
	return changes, len(changes) > 0
}

// unitCount says "units 2 -> 3" when the count changes; before is the
// count the app had before the change (tug.yaml's units set it).
func unitCount(before map[string]app.Process, a *app.App, name string) string {
	old, ok := before[name]
	if !ok {
		return ""
	}
	if n := a.Processes[name].Replicas; n != old.Replicas {
		return fmt.Sprintf("units %d -> %d", old.Replicas, n)
	}
	return ""
}

// appSettings says how what the whole release carries changes: pool, tags,
// volumes, rollout settings. restarts is true when that restarts units.
func appSettings(base, next *app.Release) (lines []string, restarts bool) {
	var old app.Release
	if base != nil {
		old = *base
	}
	if old.Pool != next.Pool {
		lines = append(lines, fmt.Sprintf("pool: %s -> %s", orNone(old.Pool), orNone(next.Pool)))
		restarts = true
	}
	if !maps.Equal(old.Tags, next.Tags) {
		lines = append(lines, fmt.Sprintf("tags: %s -> %s", describeTags(old.Tags), describeTags(next.Tags)))
	}
	if !slices.Equal(volumeNames(old.Volumes), volumeNames(next.Volumes)) {
		lines = append(lines, fmt.Sprintf("volumes: %s -> %s", orNone(strings.Join(volumeNames(old.Volumes), ",")), orNone(strings.Join(volumeNames(next.Volumes), ","))))
		restarts = true
	}
	if o, n := serviceNames(old.Services), serviceNames(next.Services); o != n {
		lines = append(lines, fmt.Sprintf("services: %s -> %s", orNone(o), orNone(n)))
		restarts = true
	}
	if s := describeRolloutChange(old.Rollout, next.Rollout); s != "" {
		lines = append(lines, "settings: "+s)
		restarts = restarts || old.Rollout.GracePeriod != next.Rollout.GracePeriod
	}
	return lines, restarts
}

func describeRolloutChange(o, n app.Rollout) string {
	d := app.RolloutDefaults
	var parts []string
	str := func(name, o, n, def string) {
		if o != n {
			parts = append(parts, fmt.Sprintf("%s %s -> %s", name, orDefault(o, def), orDefault(n, def)))
		}
	}
	num := func(name string, o, n, def int64, unit string) {
		if o != n {
			parts = append(parts, fmt.Sprintf("%s %s -> %s", name, orDefaultNum(o, def, unit), orDefaultNum(n, def, unit)))
		}
	}
	str("max-surge", o.MaxSurge, n.MaxSurge, d.MaxSurge)
	str("max-unavailable", o.MaxUnavailable, n.MaxUnavailable, d.MaxUnavailable)
	num("grace-period", o.GracePeriod, n.GracePeriod, d.GracePeriod, "s")
	num("history", int64(o.History), int64(n.History), int64(d.History), "")
	num("deploy-timeout", o.DeployTimeout, n.DeployTimeout, d.DeployTimeout, "s")
	return strings.Join(parts, ", ")
}

func orDefault(v, def string) string {
	if v == "" {
		return def + " (default)"
	}
	return v
}

func orDefaultNum(v, def int64, unit string) string {
	if v == 0 {
		return fmt.Sprintf("%d%s (default)", def, unit)
	}
	return fmt.Sprintf("%d%s", v, unit)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func describeLimits(l app.Limits) string {
	var parts []string
	for _, kv := range [][2]string{{"cpu", l.CPU}, {"memory", l.Memory}, {"cpu-request", l.CPURequest}, {"memory-request", l.MemoryRequest}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return orNone(strings.Join(parts, ","))
}

func describeHealthcheck(h app.Healthcheck) string {
	var parts []string
	for _, kv := range [][2]string{{"readiness", h.Readiness}, {"liveness", h.Liveness}, {"startup", h.Startup}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	for _, kv := range []struct {
		name string
		v    int32
	}{{"initial-delay", h.InitialDelay}, {"period", h.Period}, {"timeout", h.Timeout}, {"failure-threshold", h.FailureThreshold}} {
		if kv.v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", kv.name, kv.v))
		}
	}
	return orNone(strings.Join(parts, ","))
}

func describeTags(tags map[string]string) string {
	keys := slices.Sorted(maps.Keys(tags))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + tags[k]
	}
	return orNone(strings.Join(parts, ","))
}

func volumeNames(vs []app.VolumeBinding) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		s := v.Volume + ":" + v.MountPath
		if v.Process != "" {
			s = v.Process + "/" + s
		}
		if v.ReadOnly {
			s += ":ro"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// serviceNames describes bound services as SERVICE (as PREFIX), comma-separated.
func serviceNames(bs []app.ServiceBinding) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Service + " as " + b.Prefix
	}
	return strings.Join(out, ",")
}
