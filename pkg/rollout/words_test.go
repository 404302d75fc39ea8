package rollout

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// The progress line names units for what the rollout does: a scale's
// units are not new, a rollback's are restored and the others failed.
func TestRolloutSummaryWords(t *testing.T) {
	c := fakeClient()
	for _, tt := range []struct {
		name    string
		purpose Purpose
		release int
		pods    []*corev1.Pod
		want    string
	}{
		{"a deploy", PurposeDeploy, 7,
			[]*corev1.Pod{pod("n1", "web", "7", true), pod("o1", "web", "6", true), pod("o2", "web", "6", true, deleting)},
			"web: 1 of 3 new units ready, 1 old unit running, 1 old unit terminating"},
		{"scaling 1 to 3", PurposeScale, 7,
			[]*corev1.Pod{pod("n1", "web", "7", true), pod("n2", "web", "7", false)},
			"web: 1 of 3 units ready"},
		{"scaling 1 to 3, at the start", PurposeScale, 7,
			[]*corev1.Pod{pod("n1", "web", "7", true)},
			"web: 1 of 3 units ready"},
		{"restoring v6 after v7 failed", PurposeRestore, 6,
			[]*corev1.Pod{pod("r1", "web", "6", true), pod("f1", "web", "7", false), pod("f2", "web", "7", false, deleting)},
			"web: 1 of 3 restored units ready, 1 failed unit running, 1 failed unit terminating"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRollout(c, tt.release, map[string]int64{"shop-web": 2}, []*appsv1.Deployment{dep("web", 3, 2, appsv1.DeploymentStatus{})}, tt.pods)
			r.Purpose = tt.purpose
			if got := r.summary(); got != tt.want {
				t.Errorf("summary =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

// A unit that never gets ready is explained with its last log lines too,
// as a crash is: why it does not listen is often there.
func TestRolloutExplainUnreadyLogs(t *testing.T) {
	c := fakeClient()
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		return true, &runtime.Unknown{Raw: []byte("listening on 127.0.0.1:3000\n")}, nil
	})
	p := pod("u1", "web", "7", false, func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = running(time.Now().Add(-time.Hour))
	}, withProbe(2, 3, 0))
	r := newRollout(c, 7, map[string]int64{"shop-web": 1}, []*appsv1.Deployment{dep("web", 1, 1, appsv1.DeploymentStatus{})}, []*corev1.Pod{p})
	_, err := r.check(context.Background(), time.Now())
	var f *Failure
	if !errors.As(err, &f) || f.Class != ClassUnready {
		t.Fatalf("check = %v, want unready", err)
	}
	if !slices.Equal(f.Logs, []string{"listening on 127.0.0.1:3000"}) {
		t.Errorf("logs = %q, want the unit's last lines", f.Logs)
	}
}
