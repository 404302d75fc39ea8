package deploy

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
)

// settle records how a rollout ended through a short outage (the record's
// read fails with 503 twice), and a record it cannot read at all (403)
// still leaves no release pending.
func TestSettleThroughAnOutageAndAnUnreadableRecord(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fail  error
		times int
		want  app.Status
	}{
		{"the API server restarting", apierrors.NewServiceUnavailable("restarting"), 2, app.StatusDeployed},
		{"a record tug may not read", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "tug-app-shop", errors.New("no")), 100, app.StatusInterrupted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, s := newFake()
			seedApp(t, s, &app.App{Name: "shop", Release: 2, LastRelease: 2})
			seedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Status: app.StatusPending}, nil)
			n := 0
			c.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.(k8stesting.GetAction).GetName() != app.AppRecordName("shop") || n >= tt.times {
					return false, nil, nil
				}
				n++
				return true, nil, tt.fail
			})
			if got := settle(context.Background(), s, "shop", 2, nil); got != tt.want {
				t.Errorf("settle = %q, want %q", got, tt.want)
			}
			if r, _ := getRelease(t, s, 2); r.Status != tt.want {
				t.Errorf("release v2 is %s, want %s", r.Status, tt.want)
			}
		})
	}
}
