package deploy

import (
	"slices"
	"testing"

	"tug.dev/tug/pkg/app"
)

func TestPlanJobs(t *testing.T) {
	r := &app.Release{App: "shop", Version: 7, Image: "registry.example/shop:1", Processes: map[string]string{"web": "serve"},
		Jobs: map[string]app.Job{
			"report": {Command: "./report --all", Schedule: "0 6 * * *", TimeZone: "Europe/Paris", Concurrency: "forbid", TimeoutSeconds: 600, Retries: 2},
			"ping":   {Command: "ping", Schedule: "@hourly", Limits: app.Limits{CPU: "100m"}},
		}}
	next := app.Next(&app.App{}, r, app.KindJob, "")
	next.SetJob("report", app.Job{Command: "./report --all", Schedule: "@daily"})
	next.SetJob("clean", app.Job{Command: "c", Schedule: "@weekly"})
	_ = next.RemoveJob("shop", "ping")
	got := planJobs(r, next)
	want := []string{"job clean: new, schedule @weekly", "job report: schedule 0 6 * * * -> @daily", "job ping: removed"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan %q, want %q", got, want)
	}
	if got := planJobs(r, app.Next(&app.App{}, r, app.KindDeploy, "")); len(got) != 0 {
		t.Fatalf("an unchanged job is planned: %q", got)
	}
}
