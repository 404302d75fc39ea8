package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"tug.dev/tug/pkg/kube"
)

// StatusCanary is a release whose web units run beside the deployed
// release's and get a share of its requests (App.Canary says how much),
// until 'release promote' or 'release abort'.
const StatusCanary Status = "canary"

// StatusAborted is a canary (or blue-green) release sent away: by
// 'release abort', by a rollback, or by tug when its units failed (then
// it is StatusFailed).
const StatusAborted Status = "aborted"

// Strategies of a deploy that runs two releases side by side.
const (
	StrategyCanary    = "canary"
	StrategyBlueGreen = "blue-green"
)

// Phases of a canary, recorded before each step so the next command that
// takes the app's lock knows what a stopped tug was doing.
const (
	// CanaryStarting: the canary's units are being started; no request
	// reaches them yet (their weight is 0).
	CanaryStarting = "starting"
	// CanaryRunning: the canary gets Weight% of requests.
	CanaryRunning = "running"
	// CanaryPromoting: every request goes to the canary while the
	// deployed release's units are replaced by the canary's release.
	CanaryPromoting = "promoting"
	// CanaryAborting: every request goes back to the deployed release
	// while the canary's units are removed.
	CanaryAborting = "aborting"
)

// Canary is a release running beside the deployed one (App.Release): its
// web units in their own Deployment, a share of the requests.
type Canary struct {
	Release  int    `json:"release"`
	Strategy string `json:"strategy"`
	Phase    string `json:"phase"`
	// Weight is the percentage of requests the canary gets (0-100).
	Weight int `json:"weight"`
	// Units is how many web units the canary runs.
	Units int32 `json:"units"`
	// Steps are the weights still to reach by themselves (--canary-steps),
	// one every StepInterval; the last step is followed by a promote.
	Steps        []int     `json:"steps,omitempty"`
	StepInterval string    `json:"stepInterval,omitempty"`
	StartedAt    time.Time `json:"startedAt"`
	// Exact says the weights are the router's (weighted backendRefs on the
	// app's HTTPRoute); false: the split follows the ratio of units on
	// the shared Service.
	Exact bool `json:"exact"`
	// KeepUntil, for blue-green, is when the previous release's kept
	// units may go (--keep); zero keeps them until the next deploy.
	KeepUntil time.Time `json:"keepUntil,omitzero"`
}

// CanaryUnits is how many web units a canary of weight percent gets
// beside units: ceil(units x weight/100), at least 1.
func CanaryUnits(units int32, weight int) int32 {
	n := (int64(units)*int64(weight) + 99) / 100
	if n < 1 {
		n = 1
	}
	return int32(n)
}

// ParsePercent reads a canary weight: "25%" or "25", from 1 to 99.
func ParsePercent(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	if err != nil || n < 1 || n > 99 {
		return 0, fmt.Errorf("a canary's share must be a percentage from 1%% to 99%%, not %q", s)
	}
	return n, nil
}

// ParseSteps reads --canary-steps: ascending percentages, e.g. "10,50".
func ParseSteps(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := ParsePercent(part)
		if err != nil {
			return nil, fmt.Errorf("--canary-steps: %w", err)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("--canary-steps must go up, not %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// CanaryInfo is a canary as `app info` shows it (docs/output.md).
type CanaryInfo struct {
	Canary
	// Stable is the deployed release beside it, with 100-Weight percent.
	Stable int `json:"stable"`
	// Ready is how many of the canary's web units are ready.
	Ready int32 `json:"ready"`
}

func canaryInfo(a *App, deps []appsv1.Deployment) *CanaryInfo {
	if a.Canary == nil {
		return nil
	}
	in := &CanaryInfo{Canary: *a.Canary, Stable: a.Release}
	for _, d := range deps {
		if d.Labels[kube.LabelTrack] != "" {
			in.Ready = d.Status.ReadyReplicas
		}
	}
	return in
}

// Describe says how the requests split, for `app info`.
func (c *CanaryInfo) Describe() string {
	how := "exact, by the router's weights"
	if !c.Exact {
		how = "approximate, by units on the Service"
	}
	return fmt.Sprintf("v%d (%s, %s): %d%% of requests (%s), %d/%d web units ready; v%d %d%%",
		c.Release, c.Strategy, c.Phase, c.Weight, how, c.Ready, c.Units, c.Stable, 100-c.Weight)
}

// TrafficShare is the share of requests release v gets while a canary
// runs (nil when one release gets them all).
func TrafficShare(a *App, v int) *int {
	switch {
	case a.Canary == nil:
		return nil
	case v == a.Canary.Release:
		return &a.Canary.Weight
	case v == a.Release:
		w := 100 - a.Canary.Weight
		return &w
	}
	return nil
}
