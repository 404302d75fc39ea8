package app

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"tug.dev/tug/pkg/inputerr"
)

// Rollout is how an app's releases roll out: the pace of a rolling update,
// how long a stopping unit may take, how many release records are kept and
// how long a rollout may go without progress. It travels with the release,
// so a rollback restores it. A field left empty means tug's default
// (RolloutDefaults).
type Rollout struct {
	// MaxSurge is how many units above the count a rolling update may
	// start: a number ("2") or a percentage of the count ("25%").
	MaxSurge string `json:"maxSurge,omitempty"`
	// MaxUnavailable is how many units below the count may be missing
	// during a rolling update: a number or a percentage.
	MaxUnavailable string `json:"maxUnavailable,omitempty"`
	// GracePeriod is how long, in seconds, a stopping unit has between
	// SIGTERM and SIGKILL (the pod's terminationGracePeriodSeconds). A web
	// unit's stop delay (render.WebStopDelaySeconds) is part of it.
	GracePeriod int64 `json:"gracePeriodSeconds,omitempty"`
	// History is how many release records the app keeps.
	History int `json:"history,omitempty"`
	// DeployTimeout, in seconds, is how long a rollout may go without
	// progress before it fails, unless the command's --timeout says.
	DeployTimeout int64 `json:"deployTimeoutSeconds,omitempty"`
}

// IsZero reports whether every setting is tug's default.
func (r Rollout) IsZero() bool { return r == Rollout{} }

// RolloutDefaults are tug's values for the settings a release leaves empty:
// the one place they are written down. GracePeriod is Kubernetes' own
// default, which tug leaves to the cluster when it is not set.
var RolloutDefaults = Rollout{
	MaxSurge:       "25%",
	MaxUnavailable: "0",
	GracePeriod:    30,
	History:        DefaultHistoryMax,
	DeployTimeout:  600,
}

// Bounds of the rollout settings.
const (
	// MaxHistory caps --history: each kept release is a Secret that every
	// deploy lists, and a few hundred is more than any rollback needs.
	MaxHistory = 200
	// MinGracePeriod is the web units' stop delay (render.WebStopDelaySeconds,
	// a preStop sleep): the API server refuses a pod whose sleep outlasts
	// its grace period, so a shorter one could never be applied.
	MinGracePeriod   = 5 * time.Second
	MaxGracePeriod   = time.Hour
	MinDeployTimeout = 10 * time.Second
	MaxDeployTimeout = 24 * time.Hour
	maxPercent       = 100
)

// WithDefaults fills the settings r leaves empty with tug's defaults.
func (r Rollout) WithDefaults() Rollout {
	d := RolloutDefaults
	if r.MaxSurge != "" {
		d.MaxSurge = r.MaxSurge
	}
	if r.MaxUnavailable != "" {
		d.MaxUnavailable = r.MaxUnavailable
	}
	if r.GracePeriod > 0 {
		d.GracePeriod = r.GracePeriod
	}
	if r.History > 0 {
		d.History = r.History
	}
	if r.DeployTimeout > 0 {
		d.DeployTimeout = r.DeployTimeout
	}
	return d
}

// DeployTimeoutDuration is the rollout's idle timeout, default included.
func (r Rollout) DeployTimeoutDuration() time.Duration {
	return time.Duration(r.WithDefaults().DeployTimeout) * time.Second
}

// Validate checks settings as they would apply: each value in range, and a
// rolling update that can move (surge and unavailable not both zero).
func (r Rollout) Validate() error {
	eff := r.WithDefaults()
	surgeZero, err := checkPace("--max-surge", eff.MaxSurge)
	if err != nil {
		return err
	}
	unavailZero, err := checkPace("--max-unavailable", eff.MaxUnavailable)
	if err != nil {
		return err
	}
	if surgeZero && unavailZero {
		return inputerr.Errorf("--max-surge and --max-unavailable cannot both be 0: a rolling update could then neither start a unit nor stop one")
	}
	if g := time.Duration(eff.GracePeriod) * time.Second; g < MinGracePeriod || g > MaxGracePeriod {
		return inputerr.Errorf("--grace-period must be from %s to %s, not %s", fmtDuration(MinGracePeriod), fmtDuration(MaxGracePeriod), fmtDuration(g))
	}
	if eff.History < 1 || eff.History > MaxHistory {
		return inputerr.Errorf("--history must be from 1 to %d, not %d", MaxHistory, eff.History)
	}
	if t := time.Duration(eff.DeployTimeout) * time.Second; t < MinDeployTimeout || t > MaxDeployTimeout {
		return inputerr.Errorf("--deploy-timeout must be from %s to %s, not %s", fmtDuration(MinDeployTimeout), fmtDuration(MaxDeployTimeout), fmtDuration(t))
	}
	return nil
}

// ParsePace reads a --max-surge or --max-unavailable value: a number of
// units from 0 to MaxUnits, or a percentage from 0% to 100%. It returns
// the canonical form ("025%" reads as "25%").
func ParsePace(flag, s string) (string, error) {
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	n, err := strconv.ParseInt(num, 10, 32)
	limit := int64(MaxUnits)
	what := "a number of units such as 1"
	if pct {
		limit, what = maxPercent, "a percentage such as 25%"
	}
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && n > limit:
		if pct {
			return "", inputerr.Errorf("invalid %s %q: a percentage must be from 0%% to %d%%", flag, s, maxPercent)
		}
		return "", inputerr.Errorf("invalid %s %q: a number of units must be from 0 to %d", flag, s, MaxUnits)
	case err != nil || strings.HasPrefix(num, "+"):
		return "", inputerr.Errorf("invalid %s %q: want %s, or a number of units", flag, s, what)
	case n < 0:
		return "", inputerr.Errorf("invalid %s %q: must not be negative", flag, s)
	}
	if pct {
		return strconv.FormatInt(n, 10) + "%", nil
	}
	return strconv.FormatInt(n, 10), nil
}

// checkPace parses a pace and says whether it is zero.
func checkPace(flag, s string) (bool, error) {
	v, err := ParsePace(flag, s)
	if err != nil {
		return false, err
	}
	return v == "0" || v == "0%", nil
}

// parseSeconds reads a duration flag ("60s", "15m") that must be whole
// seconds; the range is checked by Validate.
func parseSeconds(flag, s string) (int64, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, inputerr.Errorf("invalid %s %q: want a duration such as 60s or 15m", flag, s)
	}
	if d <= 0 {
		return 0, inputerr.Errorf("invalid %s %q: must be more than zero", flag, s)
	}
	if d%time.Second != 0 {
		return 0, inputerr.Errorf("invalid %s %q: must be whole seconds", flag, s)
	}
	return int64(d / time.Second), nil
}

// fmtDuration writes a duration without trailing zero units: 15m, 1h, 90s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FormatSeconds writes a number of seconds as a duration: 30s, 15m, 1h.
func FormatSeconds(n int64) string { return fmtDuration(time.Duration(n) * time.Second) }

// SetRolloutOptions is `tug app settings set`: each setting given (not "")
// replaces the release's; the others keep their value.
type SetRolloutOptions struct {
	App                                                           string
	MaxSurge, MaxUnavailable, GracePeriod, History, DeployTimeout string
}

// Settings parses the given values into a Rollout holding only those.
func (o SetRolloutOptions) Settings() (Rollout, error) {
	var r Rollout
	var err error
	if o.MaxSurge != "" {
		if r.MaxSurge, err = ParsePace("--max-surge", o.MaxSurge); err != nil {
			return Rollout{}, err
		}
	}
	if o.MaxUnavailable != "" {
		if r.MaxUnavailable, err = ParsePace("--max-unavailable", o.MaxUnavailable); err != nil {
			return Rollout{}, err
		}
	}
	if o.GracePeriod != "" {
		if r.GracePeriod, err = parseSeconds("--grace-period", o.GracePeriod); err != nil {
			return Rollout{}, err
		}
	}
	if o.History != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(o.History), 10, 32)
		if errors.Is(err, strconv.ErrRange) || err == nil && (n < 1 || n > MaxHistory) {
			return Rollout{}, inputerr.Errorf("--history must be from 1 to %d, not %s", MaxHistory, o.History)
		}
		if err != nil {
			return Rollout{}, inputerr.Errorf("invalid --history %q: want a number of releases such as 20", o.History)
		}
		r.History = int(n)
	}
	if o.DeployTimeout != "" {
		if r.DeployTimeout, err = parseSeconds("--deploy-timeout", o.DeployTimeout); err != nil {
			return Rollout{}, err
		}
	}
	return r, nil
}

// Validate checks the app and each given setting, and that one is given.
func (o SetRolloutOptions) Validate() error {
	if err := ValidateName(o.App); err != nil {
		return err
	}
	r, err := o.Settings()
	if err != nil {
		return err
	}
	if r.IsZero() {
		return inputerr.Errorf("nothing to set: give --max-surge, --max-unavailable, --grace-period, --history or --deploy-timeout")
	}
	// Each value on its own; the pair surge/unavailable is checked against
	// the release's in Apply.
	return mergeRollout(Rollout{MaxSurge: "1", MaxUnavailable: "1"}, r).Validate()
}

// mergeRollout returns base with the settings that over sets.
func mergeRollout(base, over Rollout) Rollout {
	if over.MaxSurge != "" {
		base.MaxSurge = over.MaxSurge
	}
	if over.MaxUnavailable != "" {
		base.MaxUnavailable = over.MaxUnavailable
	}
	if over.GracePeriod != 0 {
		base.GracePeriod = over.GracePeriod
	}
	if over.History != 0 {
		base.History = over.History
	}
	if over.DeployTimeout != 0 {
		base.DeployTimeout = over.DeployTimeout
	}
	return base
}

// Apply sets the given settings in r, refusing a result that cannot roll
// out (surge and unavailable both 0 once merged with r's).
func (o SetRolloutOptions) Apply(_ *App, r *Release) error {
	set, err := o.Settings()
	if err != nil {
		return err
	}
	next := mergeRollout(r.Rollout, set)
	if err := next.Validate(); err != nil {
		return err
	}
	r.Rollout = next
	return nil
}

// UnsetRolloutOptions is `tug app settings unset`: the named settings go
// back to tug's defaults.
type UnsetRolloutOptions struct {
	App                                                           string
	MaxSurge, MaxUnavailable, GracePeriod, History, DeployTimeout bool
}

// Validate checks the app and that a setting is named.
func (o UnsetRolloutOptions) Validate() error {
	if err := ValidateName(o.App); err != nil {
		return err
	}
	if !o.MaxSurge && !o.MaxUnavailable && !o.GracePeriod && !o.History && !o.DeployTimeout {
		return inputerr.Errorf("nothing to unset: give --max-surge, --max-unavailable, --grace-period, --history or --deploy-timeout")
	}
	return nil
}

// Apply resets the named settings of r, refusing a result that cannot
// roll out.
func (o UnsetRolloutOptions) Apply(_ *App, r *Release) error {
	next := r.Rollout
	if o.MaxSurge {
		next.MaxSurge = ""
	}
	if o.MaxUnavailable {
		next.MaxUnavailable = ""
	}
	if o.GracePeriod {
		next.GracePeriod = 0
	}
	if o.History {
		next.History = 0
	}
	if o.DeployTimeout {
		next.DeployTimeout = 0
	}
	if err := next.Validate(); err != nil {
		return err
	}
	r.Rollout = next
	return nil
}

// RolloutView is `tug app settings list -o json`: each setting as it
// applies, and which of them are tug's defaults.
type RolloutView struct {
	MaxSurge       string `json:"maxSurge"`
	MaxUnavailable string `json:"maxUnavailable"`
	// GracePeriod and DeployTimeout as durations ("30s", "10m"); the
	// *Seconds fields hold the same as numbers.
	GracePeriod          string `json:"gracePeriod"`
	GracePeriodSeconds   int64  `json:"gracePeriodSeconds"`
	History              int    `json:"history"`
	DeployTimeout        string `json:"deployTimeout"`
	DeployTimeoutSeconds int64  `json:"deployTimeoutSeconds"`
	// Defaults names the settings the release leaves to tug, by flag name
	// without dashes ("max-surge").
	Defaults []string `json:"defaults"`
}

// RolloutSettingNames are the settings, by flag name, in the order shown.
var RolloutSettingNames = []string{"max-surge", "max-unavailable", "grace-period", "history", "deploy-timeout"}

// View is r as it applies, defaults filled in and named.
func (r Rollout) View() RolloutView {
	eff := r.WithDefaults()
	v := RolloutView{MaxSurge: eff.MaxSurge, MaxUnavailable: eff.MaxUnavailable,
		GracePeriod: FormatSeconds(eff.GracePeriod), GracePeriodSeconds: eff.GracePeriod, History: eff.History,
		DeployTimeout: FormatSeconds(eff.DeployTimeout), DeployTimeoutSeconds: eff.DeployTimeout, Defaults: []string{}}
	for i, unset := range []bool{r.MaxSurge == "", r.MaxUnavailable == "", r.GracePeriod == 0, r.History == 0, r.DeployTimeout == 0} {
		if unset {
			v.Defaults = append(v.Defaults, RolloutSettingNames[i])
		}
	}
	return v
}

// Values are the view's settings as text, in RolloutSettingNames' order.
func (v RolloutView) Values() []string {
	return []string{v.MaxSurge, v.MaxUnavailable, v.GracePeriod, strconv.Itoa(v.History), v.DeployTimeout}
}

// String is the settings on one line: "max-surge 25%, max-unavailable 0, ...".
func (v RolloutView) String() string {
	parts := make([]string, len(RolloutSettingNames))
	for i, val := range v.Values() {
		parts[i] = RolloutSettingNames[i] + " " + val
	}
	return strings.Join(parts, ", ")
}
