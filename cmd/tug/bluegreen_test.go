package main

import (
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
)

// blueGreenFixture: shop v1 deployed, v2 running beside it blue-green,
// taking every request.
func blueGreenFixture(t *testing.T) *printerFixture {
	p := newPrinterFixture(t)
	started := p.ago("canary-started", 90*time.Second)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 1, LastRelease: 2, Image: "registry.example/shop:1", CreatedAt: p.ago("app-created", time.Hour+30*time.Minute),
		Processes: map[string]app.Process{"web": {Replicas: 1}, "worker": {Replicas: 1}},
		Canary:    &app.Canary{Release: 2, Strategy: "blue-green", Phase: "running", Weight: 100, Units: 1, StartedAt: started, Exact: true}})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "registry.example/shop:1", Kind: app.KindDeploy, Status: app.StatusDeployed,
		Author: "alice", CreatedAt: p.ago("v1-created", time.Hour+30*time.Second), Processes: map[string]string{"web": "", "worker": "./w"}}, nil)
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 2, Image: "registry.example/shop:2", Kind: app.KindDeploy, Status: app.StatusCanary,
		Author: "alice", CreatedAt: p.ago("v2-created", 2*time.Minute+30*time.Second), Processes: map[string]string{"web": "", "worker": "./w"}}, nil)
	return p
}

// A blue-green release says which release takes the requests and which is
// kept, and that the processes other than web stay on the kept one until
// promote: release list (role), app info (the Release line; canary.serving
// and canary.otherProcesses).
func TestBlueGreenSaysWhichReleaseServes(t *testing.T) {
	p := blueGreenFixture(t)
	p.golden(t, "release-list-blue-green", []string{"tty", "json"}, "release", "list", "shop")
	p.golden(t, "app-info-blue-green", []string{"tty", "json"}, "app", "info", "shop")
}
