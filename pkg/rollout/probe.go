package rollout

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// readinessFailed fails a unit as soon as its readiness probe has shown it
// is not ready by the probe's own rule: the container has run for the
// initial delay plus failureThreshold periods, still not ready, and the
// kubelet has reported at least failureThreshold failed readiness checks
// (its Unhealthy events). readinessGrace's rule (three times as long, with
// no event needed) stays for a cluster whose events do not come.
//
// It reads events, so it looks at one unit at most once a probe period.
func (r *Watch) readinessFailed(ctx context.Context, p *corev1.Pod, now time.Time) *Failure {
	if p.Status.Phase != corev1.PodRunning {
		return nil
	}
	for i, c := range p.Status.ContainerStatuses {
		if c.Ready || c.State.Running == nil || i >= len(p.Spec.Containers) || (c.Started != nil && !*c.Started) {
			continue
		}
		probe := p.Spec.Containers[i].ReadinessProbe
		if probe == nil {
			continue
		}
		period, threshold := app.ProbeTiming(probe.PeriodSeconds, probe.FailureThreshold)
		window := time.Duration(probe.InitialDelaySeconds+period*threshold) * time.Second
		if tugsWebProbe(probe) {
			// tug's own check of a web unit, not the user's: an app that
			// boots slowly (a JVM, Rails) keeps the time it always had
			window *= unreadyGraceFactor
		}
		if now.Sub(c.State.Running.StartedAt.Time) < window {
			continue
		}
		key := p.Name + "/" + c.Name
		if next, ok := r.probeLooks[key]; ok && now.Before(next) {
			continue
		}
		if r.probeLooks == nil {
			r.probeLooks = map[string]time.Time{}
		}
		r.probeLooks[key] = now.Add(time.Duration(period) * time.Second)
		failures, last := r.readinessFailures(ctx, p, c.State.Running.StartedAt.Time)
		if failures < int(threshold) {
			continue
		}
		// A unit that only starts slowly is told apart by the user, not
		// by waiting: say how to give it the time.
		return &Failure{Class: ClassUnready, Reason: "Unready",
			Message: fmt.Sprintf("%s is not ready: its readiness check failed %d times (failure threshold %d): %s; a unit that only starts slowly needs a startup check or an initial delay ('tug app healthcheck set %s -p %s --startup CHECK' or '--initial-delay SECONDS')",
				c.Name, failures, threshold, text.Excerpt(last), r.App, p.Labels[kube.LabelProcess])}
	}
	return nil
}

// unreadyGraceFactor is how many probe windows tug's own web check gets
// before a unit that is not ready fails the rollout (readinessGrace's).
const unreadyGraceFactor = 3

// tugsWebProbe says whether probe is the readiness check tug gives every
// web unit (a TCP connection to its port, app.WebProbePeriod), or gave
// before (app.FormerWebProbePeriod), not one the user set.
func tugsWebProbe(probe *corev1.Probe) bool {
	timing := [2]int32{probe.PeriodSeconds, probe.FailureThreshold}
	return probe.TCPSocket != nil && probe.TCPSocket.Port.StrVal == "http" && probe.HTTPGet == nil && probe.Exec == nil &&
		probe.InitialDelaySeconds == 0 &&
		(timing == [2]int32{app.WebProbePeriod, app.WebProbeFailures} || timing == [2]int32{app.FormerWebProbePeriod, app.FormerWebProbeFailures})
}

// readinessFailures counts the unit's failed readiness checks the kubelet
// reported since the container started, and gives the newest one's message
// (the probe's own output).
func (r *Watch) readinessFailures(ctx context.Context, p *corev1.Pod, since time.Time) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": p.Name, "reason": "Unhealthy"}.AsSelector().String()
	evs, err := r.Client.CoreV1().Events(r.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return 0, ""
	}
	n := 0
	var last string
	var lastAt time.Time
	for _, e := range evs.Items {
		if e.InvolvedObject.Name != p.Name || e.Reason != "Unhealthy" || !strings.HasPrefix(e.Message, "Readiness probe failed") {
			continue
		}
		at := eventTime(e)
		// a second's slack: event times are whole seconds; an event whose
		// count began with an earlier container counts failures of that
		// one too, so it is left out
		first := e.FirstTimestamp.Time
		if first.IsZero() {
			first = at
		}
		if first.Before(since.Add(-time.Second)) {
			continue
		}
		n += max(int(e.Count), 1)
		if last == "" || !at.Before(lastAt) {
			last, lastAt = e.Message, at
		}
	}
	return n, last
}
