package app

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"tug.dev/tug/pkg/inputerr"
)

// Job is a scheduled command of a release: a CronJob whose pod template is
// the release's (pkg/render renders it with the processes), so a deploy
// changes its image and config and a rollback restores them.
type Job struct {
	// Command is a shell command line, as a process's is.
	Command string `json:"command"`
	// Schedule is a cron line as Kubernetes reads it (robfig/cron v3's
	// standard parser: five fields or a @descriptor).
	Schedule string `json:"schedule"`
	// TimeZone is an IANA zone name ("": the controller's, UTC on most
	// clusters).
	TimeZone string `json:"timeZone,omitempty"`
	// Concurrency is what a run due while the last one still runs does:
	// allow, forbid (skip it) or replace (stop the running one).
	Concurrency string `json:"concurrency,omitempty"`
	// TimeoutSeconds stops a run after this long (0: no limit), by the
	// cluster (activeDeadlineSeconds), with or without tug.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
	// Retries is how many times a failed run is tried again (backoffLimit).
	Retries int32 `json:"retries,omitempty"`
	// Limits, when set, are the job's own; else it runs with the limits of
	// the process whose template a run copies (web, else the first).
	Limits Limits `json:"limits,omitzero"`
}

// KindJob is the kind of a release made by a job change (tug job add, remove).
const KindJob = "job"

// Concurrency policies of a job.
const (
	ConcurrencyAllow   = "allow"
	ConcurrencyForbid  = "forbid"
	ConcurrencyReplace = "replace"
)

// MaxJobNameLen keeps "<app>-job-<name>" within a CronJob's 52 characters.
const MaxJobNameLen = 15

// MaxJobRetries is the most retries a job may ask for.
const MaxJobRetries = 10

// ValidateJobName checks a job name: a process name's rules (no '-', so
// "<app>-job-<name>" names one CronJob only).
func ValidateJobName(name string) error {
	switch {
	case name == "":
		return inputerr.Errorf("job name is empty")
	case len(name) > MaxJobNameLen:
		return inputerr.Errorf("job name %q is %d characters; the limit is %d", name, len(name), MaxJobNameLen)
	case !processNameRE.MatchString(name):
		return inputerr.Errorf("invalid job name %q: use lower-case letters and digits, starting with a letter", name)
	case name == WebProcess:
		return inputerr.Errorf("job name %q is reserved for the web process; choose another", name)
	}
	return nil
}

// ValidateSchedule checks a cron schedule as the Kubernetes API server does
// (robfig/cron v3, ParseStandard), and refuses a TZ= or CRON_TZ= prefix,
// which Kubernetes refuses too: the time zone is a field of its own.
func ValidateSchedule(s string) error {
	if strings.TrimSpace(s) == "" {
		return inputerr.Errorf("the schedule is empty: give a cron line such as '*/5 * * * *' or @hourly")
	}
	if strings.Contains(s, "TZ") {
		return inputerr.Errorf("invalid schedule %q: give the time zone with --time-zone (timeZone in tug.yaml), not TZ= in the schedule", s)
	}
	if _, err := cron.ParseStandard(s); err != nil {
		return inputerr.Errorf("invalid schedule %q: %v (want five fields, minute hour day-of-month month day-of-week, or @hourly, @daily, @every 1h...)", s, err)
	}
	return nil
}

// ValidateTimeZone checks an IANA time zone name as Kubernetes does: one the
// time zone database knows, and not "Local" (which differs per machine).
func ValidateTimeZone(tz string) error {
	if tz == "" {
		return nil
	}
	if strings.EqualFold(tz, "local") {
		return inputerr.Errorf("invalid time zone %q: name a zone such as Europe/Paris or UTC", tz)
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return inputerr.Errorf("unknown time zone %q: name one of the IANA database, such as Europe/Paris, America/New_York or UTC", tz)
	}
	return nil
}

// Validate checks every field of a job.
func (j Job) Validate() error {
	if strings.TrimSpace(j.Command) == "" {
		return inputerr.Errorf("the job has no command: give it after --, e.g. -- ./report")
	}
	if err := ValidateSchedule(j.Schedule); err != nil {
		return err
	}
	if err := ValidateTimeZone(j.TimeZone); err != nil {
		return err
	}
	switch j.Concurrency {
	case "", ConcurrencyAllow, ConcurrencyForbid, ConcurrencyReplace:
	default:
		return inputerr.Errorf("invalid concurrency %q: want allow, forbid or replace", j.Concurrency)
	}
	if j.TimeoutSeconds < 0 {
		return inputerr.Errorf("the timeout must not be negative")
	}
	if j.Retries < 0 || j.Retries > MaxJobRetries {
		return inputerr.Errorf("retries must be from 0 to %d, not %d", MaxJobRetries, j.Retries)
	}
	return j.Limits.Validate()
}

// NextRun is when a job's schedule next fires after now, in its time zone;
// zero when the schedule or zone cannot be read.
func (j Job) NextRun(now time.Time) time.Time {
	s, err := cron.ParseStandard(j.Schedule)
	if err != nil {
		return time.Time{}
	}
	loc := time.UTC
	if j.TimeZone != "" {
		if l, err := time.LoadLocation(j.TimeZone); err == nil {
			loc = l
		}
	}
	return s.Next(now.In(loc))
}

// JobNames lists a release's jobs by name.
func (r *Release) JobNames() []string {
	names := slices.Collect(maps.Keys(r.Jobs))
	sort.Strings(names)
	return names
}

// SetJob adds or replaces a job of the release.
func (r *Release) SetJob(name string, j Job) {
	if r.Jobs == nil {
		r.Jobs = map[string]Job{}
	}
	r.Jobs[name] = j
}

// RemoveJob drops a job from the release; an unknown one is an input error
// that names the jobs there are.
func (r *Release) RemoveJob(appName, name string) error {
	if _, ok := r.Jobs[name]; !ok {
		return NoJobError(appName, name, r)
	}
	delete(r.Jobs, name)
	if len(r.Jobs) == 0 {
		r.Jobs = nil
	}
	return nil
}

// NoJobError says the app has no such job, and which it has.
func NoJobError(appName, name string, r *Release) error {
	have := "no jobs"
	if r != nil && len(r.Jobs) > 0 {
		have = "jobs " + strings.Join(r.JobNames(), ", ")
	}
	return inputerr.Errorf("app %q has no job %q (it has %s); see 'tug job list %s'", appName, name, have, appName)
}

// JobSuspended says whether the app's job is suspended (tug job suspend):
// part of the app's record, not of a release, as a process's stopped
// state is, so a deploy or rollback leaves it as it is.
func (a *App) JobSuspended(name string) bool { return slices.Contains(a.SuspendedJobs, name) }

// SetJobSuspended suspends or resumes a job in the record; it reports
// whether that changed anything.
func (a *App) SetJobSuspended(name string, suspended bool) bool {
	if a.JobSuspended(name) == suspended {
		return false
	}
	if suspended {
		a.SuspendedJobs = append(a.SuspendedJobs, name)
		sort.Strings(a.SuspendedJobs)
	} else {
		a.SuspendedJobs = slices.DeleteFunc(a.SuspendedJobs, func(n string) bool { return n == name })
		if len(a.SuspendedJobs) == 0 {
			a.SuspendedJobs = nil
		}
	}
	return true
}

// FormatJobTimeout spells a job's timeout as a duration without zero
// units ("10m", "1h30m", "90s" stays "1m30s"; "" for none).
func FormatJobTimeout(secs int64) string {
	if secs <= 0 {
		return ""
	}
	var b strings.Builder
	for _, u := range []struct {
		n    int64
		unit string
	}{{3600, "h"}, {60, "m"}, {1, "s"}} {
		if v := secs / u.n; v > 0 {
			fmt.Fprintf(&b, "%d%s", v, u.unit)
			secs -= v * u.n
		}
	}
	return b.String()
}

// JobSummary is a job as 'tug app info' lists it.
type JobSummary struct {
	Name      string `json:"name"`
	Schedule  string `json:"schedule"`
	TimeZone  string `json:"timeZone,omitempty"`
	Suspended bool   `json:"suspended"`
}

func jobSummaries(a *App, r *Release) []JobSummary {
	var out []JobSummary
	for _, n := range r.JobNames() {
		j := r.Jobs[n]
		out = append(out, JobSummary{Name: n, Schedule: j.Schedule, TimeZone: j.TimeZone, Suspended: a.JobSuspended(n)})
	}
	return out
}
