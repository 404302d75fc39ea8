package canary

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/kube"
)

// On a cleanup context (deploy.Detached: a failed canary's abort, a start
// cut short) the wait for the canary's units to stop must end while
// there is time left for the rest of the abort: units still stopping are
// fine (they left the Services' endpoints at SIGTERM), a deadline spent
// waiting for them is not. It was: the wait took the whole context, and
// the abort failed with "context deadline exceeded" whenever the units
// took longer to stop than deploy's cleanup timeout (10s), leaving the
// split and the release's status to the next command.
func TestRemoveCanaryUnitsLeavesTimeForTheRest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stopping bool // the unit's pod is being deleted (it got SIGTERM)
	}{
		{"a unit still stopping", true},
		{"a unit not stopping yet (slow garbage collector): it still serves", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d, cl := splitApp(t, 1, &app.Canary{Release: 2, Phase: app.CanaryRunning, Weight: 25, Units: 1, Strategy: app.StrategyCanary})
			ctx := context.Background()
			pod := canaryPod() // it never goes away
			if tc.stopping {
				pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			if _, err := cl.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			txn, err := deploy.Begin(ctx, d, "shop", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer txn.End()
			cleanup, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			err = removeCanaryUnits(txn.Within(cleanup))
			switch {
			case tc.stopping && err != nil:
				t.Fatalf("removeCanaryUnits on a cleanup context = %v; want nil (the unit is stopping)", err)
			case !tc.stopping && (err == nil || !strings.Contains(err.Error(), pod.Name)):
				t.Fatalf("removeCanaryUnits with a unit not stopping = %v; want an error naming it", err)
			}
			if _, err := cl.AppsV1().Deployments(ns).Get(ctx, "shop-web-canary", metav1.GetOptions{}); err == nil {
				t.Error("the canary's Deployment is left")
			}
		})
	}
}

// canaryPod is a unit of the canary's track that crashes (its release
// left unsaid, so only the watch between steps judges it).
func canaryPod() *corev1.Pod {
	p := deploytest.CrashPod("2")
	p.Name = "shop-web-canary-x1"
	delete(p.Labels, kube.LabelRelease)
	p.Labels[kube.LabelTrack] = "canary"
	return p
}
