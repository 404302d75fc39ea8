package job

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPastDeadline(t *testing.T) {
	d := int64(15)
	job := func(age time.Duration, conds ...batchv1.JobCondition) *batchv1.Job {
		start := metav1.NewTime(time.Now().Add(-age))
		return &batchv1.Job{Spec: batchv1.JobSpec{ActiveDeadlineSeconds: &d}, Status: batchv1.JobStatus{StartTime: &start, Conditions: conds}}
	}
	cond := func(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason}
	}
	for name, tt := range map[string]struct {
		j    *batchv1.Job
		want bool
	}{
		"failure target":      {job(time.Second, cond(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded)), true},
		"failed":              {job(time.Second, cond(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded)), true},
		"killed, not marked":  {job(20 * time.Second), true},
		"failed otherwise":    {job(time.Second, cond(batchv1.JobFailed, "BackoffLimitExceeded")), false},
		"young, no condition": {job(2 * time.Second), false},
	} {
		if got := pastDeadline(tt.j); got != tt.want {
			t.Errorf("%s: %v, want %v", name, got, tt.want)
		}
	}
}
