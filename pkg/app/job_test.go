package app

import (
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/inputerr"
)

// Schedules are read as the API server reads them; what it refuses is an
// input error before any request.
func TestValidateScheduleAsKubernetes(t *testing.T) {
	for _, ok := range []string{"* * * * *", "*/5 * * * *", "0 6 * * 1-5", "@hourly", "@every 1h30m", "0 0 1 jan *"} {
		if err := ValidateSchedule(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "* * *", "61 * * * *", "* * * * * *", "@fortnightly", "TZ=UTC * * * * *", "CRON_TZ=Europe/Paris @daily"} {
		err := ValidateSchedule(bad)
		if err == nil || !inputerr.Is(err) {
			t.Errorf("%q: %v, want an input error", bad, err)
		}
	}
}

func TestValidateTimeZone(t *testing.T) {
	for _, ok := range []string{"", "UTC", "Europe/Paris", "America/New_York"} {
		if err := ValidateTimeZone(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"Local", "Mars/Olympus", "Europe/Pariss", "+02:00"} {
		if err := ValidateTimeZone(bad); err == nil || !inputerr.Is(err) {
			t.Errorf("%q: %v, want an input error", bad, err)
		}
	}
}

func TestJobValidate(t *testing.T) {
	good := Job{Command: "./report", Schedule: "@daily"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Job)
		want string
	}{
		{func(j *Job) { j.Command = " " }, "no command"},
		{func(j *Job) { j.Concurrency = "sometimes" }, "invalid concurrency"},
		{func(j *Job) { j.Retries = 11 }, "retries must be from 0 to 10"},
		{func(j *Job) { j.TimeoutSeconds = -1 }, "must not be negative"},
		{func(j *Job) { j.Limits.Memory = "lots" }, "invalid --memory"},
	} {
		j := good
		c.edit(&j)
		if err := j.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", j, err, c.want)
		}
	}
	for _, name := range []string{"", "web", "a-b", "Report", "averyveryverylongname"} {
		if err := ValidateJobName(name); err == nil {
			t.Errorf("job name %q accepted", name)
		}
	}
}

func TestNextRunInTheJobsTimeZone(t *testing.T) {
	now := time.Date(2026, 7, 1, 3, 0, 0, 0, time.UTC) // 05:00 in Paris (CEST)
	next := Job{Schedule: "30 6 * * *", TimeZone: "Europe/Paris"}.NextRun(now)
	if want := time.Date(2026, 7, 1, 4, 30, 0, 0, time.UTC); !next.Equal(want) {
		t.Fatalf("next run %s, want %s", next.UTC(), want)
	}
}

// Suspension belongs to the record: a release made after keeps it, and the
// record's copy is separate.
func TestJobSuspendedInTheRecord(t *testing.T) {
	a := &App{}
	if !a.SetJobSuspended("report", true) || a.SetJobSuspended("report", true) || !a.JobSuspended("report") {
		t.Fatal("suspend")
	}
	c := a.Copy()
	c.SetJobSuspended("report", false)
	if !a.JobSuspended("report") || c.JobSuspended("report") {
		t.Fatal("Copy shares the suspended jobs")
	}
	base := &Release{Jobs: map[string]Job{"report": {Command: "x", Schedule: "@daily"}}}
	next := Next(a, base, KindDeploy, "")
	next.SetJob("ping", Job{Command: "y", Schedule: "@hourly"})
	if len(base.Jobs) != 1 || len(next.Jobs) != 2 {
		t.Fatalf("Next shares the jobs map: base %v next %v", base.Jobs, next.Jobs)
	}
	if err := next.RemoveJob("shop", "nope"); err == nil || !strings.Contains(err.Error(), "jobs ping, report") {
		t.Fatalf("removing an unknown job: %v", err)
	}
}

func TestFormatJobTimeout(t *testing.T) {
	for secs, want := range map[int64]string{0: "", 90: "1m30s", 600: "10m", 3600: "1h", 5400: "1h30m", 3601: "1h1s"} {
		if got := FormatJobTimeout(secs); got != want {
			t.Errorf("%d: %q, want %q", secs, got, want)
		}
	}
}
