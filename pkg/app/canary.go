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
	// CanaryPromoting: the canary's units grow to the web process's full
	// size (the split unchanged), then every request goes to them while
	// the deployed release's units are replaced by the canary's release.
	CanaryPromoting = "promoting"
	// CanaryAborting: every request goes back to the deployed release
	// while the canary's units are removed.
	CanaryAborting = "aborting"
	// CanaryEnding: one release (App.Release) runs again; what the split
	// left (the canary's Deployment, the two sides' Services) is being
	// removed. The record names the canary until they are gone, so a tug
	// stopped meanwhile never leaves units the record does not name.
	CanaryEnding = "ending"
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
	Steps        []int  `json:"steps,omitempty"`
	StepInterval string `json:"stepInterval,omitempty"`
	// StepsStopped: the tug moving the canary through Steps stopped (a
	// kill, Ctrl-C, a lost lock) and nothing moves it on: it keeps Weight
	// until 'release promote' or 'release abort' (docs/reliability.md).
	StepsStopped bool `json:"stepsStopped,omitempty"`
	// WeightBefore is the share the canary had when its promote began,
	// which a promote whose rollout fails gives it back (Weight is 100
	// while it promotes, and a resumed promote must not take that for it).
	WeightBefore int `json:"weightBefore,omitempty"`
	// Undoing: an abort began undoing a promote a stopped tug left (its
	// old units coming back). Whatever command comes next undoes it too:
	// the user's last word was abort.
	Undoing bool `json:"undoing,omitempty"`
	// UnitsBefore and ProcessesBefore are the canary's units and the
	// app's formation when its promote began: a promote that fails, or an
	// abort that undoes it, puts them back (a process the canary's release
	// drops keeps its units and autoscaler).
	UnitsBefore     int32              `json:"unitsBefore,omitempty"`
	ProcessesBefore map[string]Process `json:"processesBefore,omitempty"`
	// Processes is the formation the deploy asked for (tug.yaml's units),
	// which the promote applies; nil: the deployed release's.
	Processes map[string]Process `json:"processes,omitempty"`
	// AbortStatus and AbortReason are what an abort records on the
	// canary's release (failed with the crash, aborted by hand), written
	// before it acts, so an abort a stopped tug left is finished with
	// them rather than with a plain "aborted".
	AbortStatus Status `json:"abortStatus,omitempty"`
	AbortReason string `json:"abortReason,omitempty"`
	// PromoteFailed, for blue-green, is why the promote tug tried once
	// its --keep expired failed: it keeps every request and its units
	// stay, and no later command tries it again by itself.
	PromoteFailed string    `json:"promoteFailed,omitempty"`
	StartedAt     time.Time `json:"startedAt"`
	// Exact says the weights are the router's (weighted backendRefs on the
	// app's HTTPRoute); false: the split follows the ratio of units on
	// the shared Service.
	Exact bool `json:"exact"`
	// KeepUntil, for blue-green, is when the previous release's kept
	// units may go (--keep); zero keeps them until the next deploy.
	KeepUntil time.Time `json:"keepUntil,omitzero"`
}

// SideBySide says whether c still splits the app's requests: a canary that
// is ending is rendered as the one release it leaves.
func (c *Canary) SideBySide() bool { return c != nil && c.Phase != CanaryEnding }

// WebUnits is how many web units the app runs once c is promoted: what
// the deploy asked for (Processes), else the deployed release's (procs).
func (c *Canary) WebUnits(procs map[string]Process) int32 {
	if p, ok := c.Processes[WebProcess]; ok {
		return p.Units()
	}
	return procs[WebProcess].Units()
}

// StepsHalted says whether c has steps left that nothing will take.
func (c *Canary) StepsHalted() bool { return c != nil && c.StepsStopped && len(c.Steps) > 0 }

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
	// Serving is the release that takes the web requests when one takes
	// them all (a blue-green release, a canary at 100%: the canary; at 0%:
	// the stable release); 0 while they are split.
	Serving int `json:"serving"`
	// OtherProcesses is the release the processes other than web run: the
	// deployed one, until promote.
	OtherProcesses int `json:"otherProcesses"`
}

func canaryInfo(a *App, deps []appsv1.Deployment) *CanaryInfo {
	if a.Canary == nil {
		return nil
	}
	in := &CanaryInfo{Canary: *a.Canary, Stable: a.Release, OtherProcesses: a.Release}
	switch a.Canary.Weight {
	case 100:
		in.Serving = a.Canary.Release
	case 0:
		in.Serving = a.Release
	}
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
	line := fmt.Sprintf("v%d (%s, %s): %d%% of requests (%s), %d/%d web units ready; v%d %d%%",
		c.Release, c.Strategy, c.Phase, c.Weight, how, c.Ready, c.Units, c.Stable, 100-c.Weight)
	if c.StepsHalted() {
		line += fmt.Sprintf("; steps stopped at %d%% (the tug taking them was stopped)", c.Weight)
	}
	return line
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

// Roles of a release while another runs beside the deployed one
// (ReleaseRole).
const (
	// RoleServing: it takes every web request (a blue-green release, or a
	// canary at 100%), though the app's record still names the other.
	RoleServing = "serving"
	// RoleCanary: it takes a share of the web requests.
	RoleCanary = "canary"
	// RoleStable: the deployed release, taking the rest of the requests
	// and running the processes other than web.
	RoleStable = "stable"
	// RoleKept: the deployed release with no web request (the previous
	// release of a blue-green), kept to go back to at once; its processes
	// other than web still run it until promote.
	RoleKept = "kept"
)

// ReleaseRole is what release v does while a canary or blue-green release
// runs beside the deployed one; "" for any other release, or when none
// does.
func ReleaseRole(a *App, v int) string {
	c := a.Canary
	switch {
	case !c.SideBySide():
		return ""
	case v == c.Release && c.Weight >= 100:
		return RoleServing
	case v == c.Release:
		return RoleCanary
	case v == a.Release && c.Weight >= 100:
		return RoleKept
	case v == a.Release:
		return RoleStable
	}
	return ""
}
