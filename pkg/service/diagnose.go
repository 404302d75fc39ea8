package service

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/text"
)

// CreateError is a service that did not come up: why, as a deploy says it
// (rollout.Failure, whose class gives the exit code), and what to do.
type CreateError struct {
	Service string
	*rollout.Failure
}

func (e *CreateError) Error() string {
	return fmt.Sprintf("service %q: %s; what was made is kept: fix the cause and run the create again, or remove it with 'tug service remove %s'", e.Service, e.Message, e.Service)
}

// Unwrap lets errors.As find the Failure (its exit code and logs).
func (e *CreateError) Unwrap() error { return e.Failure }

// diagnose says whether a unit of the service has failed in a way waiting
// will not fix, with the rules a rollout uses for an app's units.
func diagnose(p *corev1.Pod) *rollout.Failure { return rollout.Diagnose(p, time.Now()) }

// explain adds what the unit and its volume say: a crash's last log lines,
// and why a claim is not bound.
func (d Deps) explain(ctx context.Context, rec *Record, p *corev1.Pod, f *rollout.Failure) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	switch f.Class {
	case rollout.ClassCrash, rollout.ClassUnready:
		f.Logs = d.lastLogs(ctx, p)
	case rollout.ClassUnschedulable:
		if why := d.unboundClaim(ctx, p); why != "" {
			f.Message = why
		}
	}
	return &CreateError{Service: rec.Name, Failure: f}
}

func (d Deps) lastLogs(ctx context.Context, p *corev1.Pod) []string {
	tail := int64(20)
	for _, previous := range []bool{true, false} {
		b, err := d.Client.CoreV1().Pods(d.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous, TailLines: &tail}).DoRaw(ctx)
		if err == nil && len(strings.TrimSpace(string(b))) > 0 && !strings.HasPrefix(string(b), "unable to retrieve container logs") {
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			for i := range lines {
				lines[i] = text.Sanitize(lines[i])
			}
			return lines
		}
	}
	return nil
}

// unboundClaim explains a unit that waits for a volume: the claim's last
// event (no StorageClass, no PersistentVolume that fits), "" when the
// unit waits for something else.
func (d Deps) unboundClaim(ctx context.Context, p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		c, err := d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil || c.Status.Phase == corev1.ClaimBound {
			continue
		}
		why := "no PersistentVolume fits it and no StorageClass provisions one"
		sel := fields.Set{"involvedObject.kind": "PersistentVolumeClaim", "involvedObject.name": c.Name}.AsSelector().String()
		if evs, err := d.Client.CoreV1().Events(d.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel}); err == nil && len(evs.Items) > 0 {
			sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp) })
			why = text.Excerpt(evs.Items[len(evs.Items)-1].Message)
		}
		return fmt.Sprintf("its volume (claim %s) cannot be bound: %s; ask an admin for a default StorageClass or a PersistentVolume", c.Name, why)
	}
	return ""
}

// claimBoundSince says whether a unit the scheduler set aside for an
// unbound claim has its claims bound now (a re-run after the cause was
// fixed): the scheduler tries it again, so it is not a failure yet.
func (d Deps) claimBoundSince(ctx context.Context, p *corev1.Pod, f *rollout.Failure) bool {
	if f.Class != rollout.ClassUnschedulable || !strings.Contains(f.Message, "PersistentVolumeClaim") {
		return false
	}
	return d.unboundClaim(ctx, p) == ""
}

// podState is what the unit was doing when a wait ran out.
func podState(p *corev1.Pod) string {
	if p == nil {
		return ": no unit was made (see 'kubectl get statefulset,pod -l " + LabelService + "')"
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting != nil {
			return fmt.Sprintf(" (unit %s: %s)", p.Name, text.Excerpt(c.State.Waiting.Reason+" "+c.State.Waiting.Message))
		}
	}
	return fmt.Sprintf(" (unit %s: %s)", p.Name, p.Status.Phase)
}
