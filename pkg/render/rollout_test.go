package render

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"tug.dev/tug/pkg/app"
)

func TestRenderRolloutSettings(t *testing.T) {
	tests := []struct {
		name               string
		settings           app.Rollout
		surge, unavailable intstr.IntOrString
		grace              *int64
	}{
		{name: "defaults", surge: intstr.FromString("25%"), unavailable: intstr.FromInt32(0)},
		{name: "numbers", settings: app.Rollout{MaxSurge: "0", MaxUnavailable: "1", GracePeriod: 5},
			surge: intstr.FromInt32(0), unavailable: intstr.FromInt32(1), grace: new(int64(5))},
		{name: "percentages", settings: app.Rollout{MaxSurge: "50%", MaxUnavailable: "10%"},
			surge: intstr.FromString("50%"), unavailable: intstr.FromString("10%")},
		{name: "history and timeout leave the spec alone", settings: app.Rollout{History: 3, DeployTimeout: 20},
			surge: intstr.FromString("25%"), unavailable: intstr.FromInt32(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, r, cfg := renderFixture()
			r.Rollout = tt.settings
			objs := Release(a, r, cfg)
			if len(objs.Deployments) != 3 {
				t.Fatalf("%d deployments", len(objs.Deployments))
			}
			for _, d := range objs.Deployments {
				ru := d.Spec.Strategy.RollingUpdate
				if ru == nil || *ru.MaxSurge != tt.surge || *ru.MaxUnavailable != tt.unavailable {
					t.Errorf("%s: strategy %+v, want surge %s unavailable %s", d.Name, ru, tt.surge.String(), tt.unavailable.String())
				}
				g := d.Spec.Template.Spec.TerminationGracePeriodSeconds
				if (g == nil) != (tt.grace == nil) || g != nil && *g != *tt.grace {
					t.Errorf("%s: grace period %v, want %v", d.Name, g, tt.grace)
				}
			}
		})
	}
	// Only the strategy differs: the pod templates are the same, so a
	// Deployment would start no new ReplicaSet for it.
	a, r, cfg := renderFixture()
	before := Release(a, r, cfg)
	r.Rollout = app.Rollout{MaxSurge: "0", MaxUnavailable: "1", History: 3, DeployTimeout: 20}
	after := Release(a, r, cfg)
	for i := range before.Deployments {
		if !equalJSON(before.Deployments[i].Spec.Template, after.Deployments[i].Spec.Template) {
			t.Errorf("%s: pod template changed with the strategy", before.Deployments[i].Name)
		}
	}
}

// The shortest grace period a user may set must leave room for the web
// units' preStop sleep, or the API server refuses the pods.
func TestMinGracePeriodCoversWebStopDelay(t *testing.T) {
	if app.MinGracePeriod < WebStopDelaySeconds*time.Second {
		t.Errorf("app.MinGracePeriod %s is below the web stop delay of %ds", app.MinGracePeriod, WebStopDelaySeconds)
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
