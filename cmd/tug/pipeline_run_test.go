package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/promote"
)

// pipeline set names its stages on each app's record (bad or missing
// stages are refused, nothing changed); status reads each stage's
// release, and a stage it cannot read fails the command after the rows
// that could be read.
func TestRunPipelineSetAndStatus(t *testing.T) {
	ctx := context.Background()
	p := newPrinterFixture(t)
	for _, ns := range []string{"dev", "prod"} {
		if err := (&app.Store{Client: p.cs, Namespace: ns}).CreateApp(ctx, &app.App{Name: "shop", Namespace: ns}); err != nil {
			t.Fatal(err)
		}
	}
	digest := "reg/shop@sha256:" + strings.Repeat("a", 64)
	dev := &app.Store{Client: p.cs, Namespace: "dev"}
	if err := dev.CreateRelease(ctx, &app.Release{App: "shop", Version: 1, Image: digest, Status: app.StatusDeployed}, app.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.UpdateApp(ctx, "shop", func(a *app.App) error { a.Release, a.LastRelease = 1, 1; return nil }); err != nil {
		t.Fatal(err)
	}
	ios, _, out, errOut := cli.TestIOStreams()
	inDev := func() (string, error) { return "dev", nil }
	set := &pipelineSetOptions{IO: ios, Changer: fixtureChanger(p, ios), Namespace: inDev, Name: "shop", Stages: []string{"shop", "prod/shop"}}
	if err := runPipelineSet(ctx, set); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "pipeline shop: dev/shop -> prod/shop") {
		t.Errorf("set: stderr %q", errOut)
	}
	for name, stages := range map[string][]string{"a bad stage": {"shop", "prod/Shop!"}, "a missing stage": {"shop", "qa/shop"}} {
		bad := &pipelineSetOptions{IO: ios, Changer: fixtureChanger(p, ios), Namespace: inDev, Name: "other", Stages: stages}
		if err := runPipelineSet(ctx, bad); !inputerr.Is(err) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	if found, err := promote.FindPipeline(ctx, p.cs, "dev", "shop"); err != nil || len(found) != 2 {
		t.Errorf("the pipeline after refused sets: %v %v", found, err)
	}

	// prod's app removed behind the pipeline's back: its row says so
	if err := (&app.Store{Client: p.cs, Namespace: "prod"}).DeleteAppRecord(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	status := &pipelineStatusOptions{IO: ios, Client: func() (kubernetes.Interface, error) { return p.cs, nil }, Namespace: inDev, Name: "shop",
		Output: cli.OutputOptions{Format: cli.OutputTable}}
	out.Reset()
	err := runPipelineStatus(ctx, status)
	if err == nil || !strings.Contains(err.Error(), `could not read 1 of 2 stages of pipeline "shop" (prod/shop)`) {
		t.Fatalf("status with a stage that runs nothing: %v", err)
	}
	rows := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(rows) != 3 || !strings.HasPrefix(rows[1], "dev/shop") || !strings.Contains(rows[1], "v1") || !strings.Contains(rows[1], "sha256:aaaaaaaaaaaa") ||
		!strings.Contains(rows[1], "? (the next runs none of its images)") || !strings.Contains(rows[2], "error: ") {
		t.Errorf("status:\n%s", out)
	}
	out.Reset()
	status.Output.Format = cli.OutputJSON
	_ = runPipelineStatus(ctx, status)
	var stages []promote.StageStatus
	if err := json.Unmarshal(out.Bytes(), &stages); err != nil || len(stages) != 2 || stages[0].Release != 1 || stages[1].Error == "" {
		t.Errorf("json %v: %s", err, out)
	}
	status.Name = "nope"
	if err := runPipelineStatus(ctx, status); !inputerr.Is(err) {
		t.Errorf("status of a pipeline not set: %v", err)
	}
}
