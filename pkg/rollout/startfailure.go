package rollout

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// StartFailure is the part of a rollout's diagnosis that applies to any pod
// of an app, one-off runs included: why its container cannot start in a
// way that waiting will not fix (the image cannot be pulled, the container
// cannot be created as configured, no node can take it). It is nil while
// the pod may still start, and for what happens after a start (a crash, a
// failing probe), which only a rollout judges.
func StartFailure(p *corev1.Pod, now time.Time) *Failure {
	f := diagnosePod(p, now)
	if f == nil {
		return nil
	}
	switch f.Class {
	case ClassImagePull, ClassConfig, ClassUnschedulable:
		return f
	}
	return nil
}

// Diagnose is a rollout's whole diagnosis of one unit, for a unit watched
// after it started (a canary between its steps): why it failed in a way
// that waiting will not fix, nil while it may still run.
func Diagnose(p *corev1.Pod, now time.Time) *Failure { return diagnosePod(p, now) }
