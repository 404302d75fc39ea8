package render

import (
	"testing"

	"tug.dev/tug/pkg/app"
)

// A stopping web unit keeps serving while kube-proxies and ingresses stop
// sending it traffic; without this, node removal and rollouts refuse
// requests for a moment (test/e2e TestNodeRemoveMovesUnitsWithoutDowntime).
func TestWebUnitsKeepServingBrieflyWhenStopped(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "ns", Processes: map[string]app.Process{"web": {Replicas: 1}, "worker": {Replicas: 1}}}
	r := &app.Release{App: "shop", Version: 1, Image: "img", Processes: map[string]string{"web": "", "worker": "work"}}
	for _, d := range Release(a, r, nil).Deployments {
		c := d.Spec.Template.Spec.Containers[0]
		isWeb := c.Name == app.WebProcess
		hasSleep := c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil
		if isWeb != hasSleep {
			t.Errorf("%s: preStop sleep %v, want %v", c.Name, hasSleep, isWeb)
		}
		if hasSleep && c.Lifecycle.PreStop.Sleep.Seconds != WebStopDelaySeconds {
			t.Errorf("sleep %ds, want %d", c.Lifecycle.PreStop.Sleep.Seconds, WebStopDelaySeconds)
		}
	}
}
