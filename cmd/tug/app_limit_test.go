package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewLimitSetCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		want    app.Limits
		wantErr string
	}{
		{name: "all four", argv: []string{"shop", "-p", "web", "--cpu", "500m", "--memory", "256Mi", "--cpu-request", "100m", "--memory-request", "128Mi"},
			want: app.Limits{CPU: "500m", Memory: "256Mi", CPURequest: "100m", MemoryRequest: "128Mi"}},
		{name: "no process", argv: []string{"shop", "--cpu", "1"}, wantErr: "-p"},
		{name: "bad quantity", argv: []string{"shop", "-p", "web", "--memory", "lots"}, wantErr: "lots"},
		{name: "bad app", argv: []string{"Shop", "-p", "web", "--cpu", "1"}, wantErr: `"Shop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newLimitSetCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" || o.Process != "web" || o.Limits != tt.want {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}
}

func TestNewLimitUnsetCmd(t *testing.T) {
	o, err := parseCmd(t, newLimitUnsetCmd, "shop", "-p", "worker", "--memory", "--no-rollback")
	if err != nil || o == nil || o.App != "shop" || o.Process != "worker" || !o.Memory || o.CPU || !o.Rollout.NoRollback {
		t.Fatalf("error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newLimitUnsetCmd, "shop")
	wantParseError(t, o, err, "-p")
}

// limit set is a release of kind limits whose Deployment carries them;
// limit list shows them, and limit unset removes them in the next release.
func TestRunLimitSetListUnset(t *testing.T) {
	p := phaseFixture(t, 0)
	ctx := context.Background()
	ios, _, _, errOut := cli.TestIOStreams()
	set := &limitSetOptions{Changer: fixtureChanger(p, ios), Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
	set.App, set.Process, set.Limits = "shop", "web", app.Limits{CPU: "500m", Memory: "256Mi"}
	if err := runLimitSet(ctx, set); err != nil {
		t.Fatalf("%v; stderr %q", err, errOut)
	}
	if !strings.Contains(errOut.String(), "limits changed") {
		t.Errorf("stderr %q", errOut)
	}
	if r := p.run(t, false, "app", "limit", "list", "shop"); !strings.Contains(r.stdout, "web\t500m\t256Mi\t-\t-") {
		t.Errorf("limit list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	unset := &limitUnsetOptions{Changer: fixtureChanger(p, ios), Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
	unset.App, unset.Process, unset.CPU, unset.Memory = "shop", "web", true, true
	if err := runLimitUnset(ctx, unset); err != nil {
		t.Fatal(err)
	}
	if r := p.run(t, false, "app", "limit", "list", "shop"); !strings.Contains(r.stdout, "web\t-\t-\t-\t-") {
		t.Errorf("limit list after unset: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
