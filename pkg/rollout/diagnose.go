package rollout

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// Class is the kind of a failed rollout. Each has its own exit code
// (docs/exit-codes.md), so scripts can tell a bad image from a crash.
type Class string

const (
	ClassImagePull     Class = "image-pull"
	ClassCrash         Class = "crash"
	ClassConfig        Class = "config"
	ClassUnschedulable Class = "unschedulable"
	ClassUnready       Class = "unready"
	ClassTimeout       Class = "timeout"
	// ClassReleasePhase: the release phase (the release's release command,
	// run before anything of the release rolls out) exited non-zero; its
	// exit code is CodeReleasePhase.
	ClassReleasePhase Class = "release-phase"
	// ClassError is the failure class of a move stopped by anything but a
	// failed rollout (an API error, a Service that lists no ready unit).
	ClassError Class = "error"
)

// CodeReleasePhase is the exit code of a rollout whose release phase failed
// (docs/exit-codes.md).
const CodeReleasePhase = 17

var exitCodes = map[Class]int{
	ClassImagePull:     10,
	ClassCrash:         11,
	ClassConfig:        12,
	ClassUnschedulable: 13,
	ClassUnready:       14,
	ClassTimeout:       15,
	ClassReleasePhase:  CodeReleasePhase,
}

// Failure explains why a release's units did not come up.
type Failure struct {
	Class             Class    `json:"class"`
	Process           string   `json:"process,omitempty"`
	Unit              string   `json:"unit,omitempty"`
	Reason            string   `json:"reason,omitempty"`            // Kubernetes' word for it: ImagePullBackOff, CrashLoopBackOff, ...
	Message           string   `json:"message"`                     // one line, for people
	ContainerExitCode *int32   `json:"containerExitCode,omitempty"` // a crashed container's
	Logs              []string `json:"logs,omitempty"`              // last lines of a crashed container's log
}

func (f *Failure) Error() string { return f.Message }

// ExitCode is the process exit code for this class of failure.
func (f *Failure) ExitCode() int {
	if c, ok := exitCodes[f.Class]; ok {
		return c
	}
	return 1
}

// How long a state may last before it counts as a failure rather than a
// step on the way: the scheduler may still find room (old units are
// leaving), and a readiness probe may pass on its next tries.
const (
	unschedulableGrace = 10 * time.Second
	minUnreadyGrace    = 15 * time.Second
)

// diagnosePod looks at one unit of the release being rolled out and says
// whether it has failed in a way that waiting will not fix. It is pure:
// now is passed in, so time-based rules are testable.
func diagnosePod(p *corev1.Pod, now time.Time) *Failure {
	proc := p.Labels[kube.LabelProcess]
	fail := func(class Class, reason, format string, a ...any) *Failure {
		return &Failure{Class: class, Process: proc, Unit: p.Name, Reason: reason, Message: fmt.Sprintf(format, a...)}
	}
	for _, c := range p.Status.ContainerStatuses {
		if f := containerFailure(p, c, fail); f != nil {
			return f
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			if now.Sub(cond.LastTransitionTime.Time) >= unschedulableGrace {
				return fail(ClassUnschedulable, cond.Reason, "%s units cannot be placed on any node: %s", proc, text.Excerpt(cond.Message))
			}
		}
	}
	if f := unready(p, now); f != nil {
		f.Process, f.Unit = proc, p.Name
		return f
	}
	return nil
}

// containerFailure is diagnosePod's verdict on one container: an image
// that cannot be pulled, a configuration it cannot start with, or a crash
// (an OOM kill gets one more try). nil while waiting may still fix it.
func containerFailure(p *corev1.Pod, c corev1.ContainerStatus, fail func(Class, string, string, ...any) *Failure) *Failure {
	proc := p.Labels[kube.LabelProcess]
	if w := c.State.Waiting; w != nil {
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
			return fail(ClassImagePull, w.Reason, "image %q cannot be pulled: %s", c.Image, text.Excerpt(w.Message))
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
			// The kubelet fetches a new release's Secret on its own
			// schedule; until then it reports a config error that fixes
			// itself. A missing Secret or key does not.
			if !transientConfigError(w.Message) {
				return fail(ClassConfig, w.Reason, "%s cannot start: %s", proc, text.Excerpt(w.Message))
			}
		case "CrashLoopBackOff":
			return crashed(fail, c)
		}
	}
	if t := c.State.Terminated; t != nil {
		if t.Reason == "StartError" || t.Reason == "ContainerCannotRun" {
			return fail(ClassConfig, t.Reason, "%s cannot start: %s", proc, text.Excerpt(t.Message))
		}
		if c.RestartCount >= 1 || p.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return crashed(fail, c)
		}
	}
	if c.RestartCount >= 1 && c.LastTerminationState.Terminated != nil {
		t := c.LastTerminationState.Terminated
		if t.Reason == "StartError" || t.Reason == "ContainerCannotRun" {
			return fail(ClassConfig, t.Reason, "%s cannot start: %s", proc, text.Excerpt(t.Message))
		}
		if t.Reason != "OOMKilled" || c.RestartCount >= 2 {
			return crashed(fail, c)
		}
	}
	return nil
}

func transientConfigError(msg string) bool {
	return strings.Contains(msg, "failed to sync secret cache") || strings.Contains(msg, "failed to sync configmap cache")
}

func crashed(fail func(Class, string, string, ...any) *Failure, c corev1.ContainerStatus) *Failure {
	t := c.State.Terminated
	if t == nil {
		t = c.LastTerminationState.Terminated
	}
	if t == nil {
		return fail(ClassCrash, "CrashLoopBackOff", "%s keeps crashing (restarted %d times)", c.Name, c.RestartCount)
	}
	f := fail(ClassCrash, t.Reason, "%s crashed with exit code %d (%s)", c.Name, t.ExitCode, t.Reason)
	if t.ExitCode == 0 {
		f.Message = fmt.Sprintf("%s exited with code 0; a process must keep running (restarted %d times)", c.Name, c.RestartCount)
	}
	if t.Reason == "OOMKilled" {
		f.Message = fmt.Sprintf("%s was killed for using more memory than its limit (OOMKilled, exit code %d)", c.Name, t.ExitCode)
	}
	if t.Message != "" && t.Reason != "OOMKilled" {
		f.Message += ": " + text.Excerpt(t.Message)
	}
	code := t.ExitCode
	f.ContainerExitCode = &code
	return f
}

// unready fails a unit whose container has been running for longer than its
// readiness probe could take to pass. The probe's own message comes from the
// unit's events, which the caller adds.
func unready(p *corev1.Pod, now time.Time) *Failure {
	if p.Status.Phase != corev1.PodRunning {
		return nil
	}
	for i, c := range p.Status.ContainerStatuses {
		if c.Ready || c.State.Running == nil || i >= len(p.Spec.Containers) {
			continue
		}
		probe := p.Spec.Containers[i].ReadinessProbe
		if probe == nil {
			continue
		}
		grace := readinessGrace(probe)
		if now.Sub(c.State.Running.StartedAt.Time) >= grace {
			return &Failure{Class: ClassUnready, Reason: "Unready",
				Message: fmt.Sprintf("%s has run for %s and its readiness check has not passed", c.Name, grace)}
		}
	}
	return nil
}

// readinessGrace is three times what the probe needs to fail once (the
// initial delay plus failureThreshold periods), and never under 15 s.
func readinessGrace(p *corev1.Probe) time.Duration {
	period, threshold := app.ProbeTiming(p.PeriodSeconds, p.FailureThreshold)
	g := time.Duration(p.InitialDelaySeconds+3*period*threshold) * time.Second
	if g < minUnreadyGrace {
		g = minUnreadyGrace
	}
	return g
}
