package main

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewAppScaleCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		wantOps int
		check   func(*testing.T, *appScaleOptions)
		wantErr string
	}{
		{name: "counts", argv: []string{"shop", "web=3", "worker+1"}, wantOps: 2},
		{name: "rollout flags", argv: []string{"shop", "web-1", "--no-rollback", "--timeout", "2m", "--no-wait", "-o", "json"}, wantOps: 1,
			check: func(t *testing.T, o *appScaleOptions) {
				if !o.Rollout.NoRollback || !o.Rollout.NoWait || o.Rollout.Timeout != 2*time.Minute || o.Rollout.Output != cli.OutputJSON {
					t.Errorf("rollout %+v", o.Rollout)
				}
			}},
		{name: "no count", argv: []string{"shop"}, wantErr: "missing PROCESS=N"},
		{name: "bad count", argv: []string{"shop", "web=abc"}, wantErr: "web=abc"},
		{name: "bad app", argv: []string{"Shop", "web=1"}, wantErr: `invalid app name "Shop"`},
		{name: "zero timeout", argv: []string{"shop", "web=1", "--timeout", "0s"}, wantErr: "--timeout must be positive"},
		{name: "bad flag", argv: []string{"shop", "web=1", "--replicas", "2"}, wantErr: "unknown flag: --replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppScaleCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil {
				t.Fatalf("error %v, options %v", err, o)
			}
			if o.App != "shop" || len(o.Ops) != tt.wantOps {
				t.Errorf("app %q, ops %+v", o.App, o.Ops)
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}

func TestNewAppLifecycleCmd(t *testing.T) {
	for _, verb := range []string{"restart", "stop", "start"} {
		newCmd := func(f *cli.Factory, runF func(context.Context, *appLifecycleOptions) error) *cobra.Command {
			return newAppLifecycleCmd(f, runF, verb)
		}
		t.Run(verb, func(t *testing.T) {
			o, err := parseCmd(t, newCmd, "shop", "-p", "worker", "--wait-lock", "1m")
			if err != nil || o == nil || o.Verb != verb || o.App != "shop" || o.Process != "worker" {
				t.Fatalf("error %v, options %+v", err, o)
			}
			o, err = parseCmd(t, newCmd, "shop", "-p", "Web_1")
			wantParseError(t, o, err, "Web_1")
			o, err = parseCmd(t, newCmd, "shop", "worker")
			wantParseError(t, o, err, "worker")
			o, err = parseCmd(t, newCmd, "shop", "--dry-run")
			wantParseError(t, o, err, "unknown flag: --dry-run")
		})
	}
}

// A formation change that cannot reach the cluster returns why, and
// prints neither a result nor a progress line.
func TestRunAppScaleFails(t *testing.T) {
	ios, _, out, errOut := cli.TestIOStreams()
	o := &appScaleOptions{Changer: failingChanger(ios, errors.New("forbidden")), App: "shop"}
	if err := runAppScale(context.Background(), o); err == nil || err.Error() != "forbidden" {
		t.Fatalf("error %v", err)
	}
	if out.Len() != 0 || errOut.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
}

// stop scales the process to 0 and remembers its count; start puts the
// count back: the app record says so, and so does the Deployment.
func TestRunAppLifecycleStopsAndStarts(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 1, LastRelease: 1, Image: "shop:1",
		Processes: map[string]app.Process{"web": {Replicas: 2}, "worker": {Replicas: 1}}})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: app.KindDeploy, Status: app.StatusDeployed,
		Processes: map[string]string{"web": "./serve", "worker": "./work"}}, nil)
	p.add(t, deploymentOf("shop", "web", 2), deploymentOf("shop", "worker", 1))
	ctx := context.Background()
	for _, c := range []struct {
		verb string
		want int32
	}{{"stop", 0}, {"start", 1}} {
		ios, _, _, errOut := cli.TestIOStreams()
		o := &appLifecycleOptions{Changer: fixtureChanger(p, ios), Now: time.Now, Verb: c.verb, App: "shop", Process: "worker",
			Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
		if err := runAppLifecycle(ctx, o); err != nil {
			t.Fatalf("%s: %v; stderr %q", c.verb, err, errOut)
		}
		d, err := p.cs.AppsV1().Deployments("dev").Get(ctx, "shop-worker", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != c.want {
			t.Errorf("after %s: shop-worker runs %d, want %d", c.verb, *d.Spec.Replicas, c.want)
		}
		web, _ := p.cs.AppsV1().Deployments("dev").Get(ctx, "shop-web", metav1.GetOptions{})
		if *web.Spec.Replicas != 2 {
			t.Errorf("after %s of worker: web runs %d, want 2", c.verb, *web.Spec.Replicas)
		}
	}
}
