package deploy

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/rollout"
)

// StartFailure is rollout.StartFailure, for pkg/build, which another
// branch edits now; it goes once that calls rollout.StartFailure.
func StartFailure(p *corev1.Pod, now time.Time) *rollout.Failure { return rollout.StartFailure(p, now) }
