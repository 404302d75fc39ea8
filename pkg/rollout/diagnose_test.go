package rollout

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// unit is a pod of process proc with one container in status cs.
func unit(proc string, cs corev1.ContainerStatus, mods ...func(*corev1.Pod)) *corev1.Pod {
	if cs.Name == "" {
		cs.Name = proc
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-" + proc + "-6d4cf56db6-x7k2p", Labels: map[string]string{
			kube.LabelApp: "shop", kube.LabelProcess: proc, kube.LabelRelease: "7",
		}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers:    []corev1.Container{{Name: cs.Name, Image: "shop:7"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{cs}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func withPhase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func withProbe(period, threshold, delay int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds:       period,
			FailureThreshold:    threshold,
			InitialDelaySeconds: delay,
		}
	}
}

func unschedulable(since time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = nil
		p.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message:            "0/3 nodes are available: 3 Insufficient cpu.\n preemption: 0/3 nodes are available",
			LastTransitionTime: metav1.NewTime(since),
		}}
	}
}

func TestDiagnosePod(t *testing.T) {
	type want struct {
		class    Class
		reason   string
		msg      []string // substrings of the message
		exitCode *int32
	}
	code := func(c int32) *int32 { return &c }
	tests := []struct {
		name string
		pod  *corev1.Pod
		now  time.Time
		want *want // nil: no failure (yet)
	}{
		{
			name: "image pull backoff",
			pod: unit("web", corev1.ContainerStatus{Image: "shop:7", State: waiting("ImagePullBackOff",
				`Back-off pulling image "shop:7"`)}),
			want: &want{class: ClassImagePull, reason: "ImagePullBackOff", msg: []string{`image "shop:7" cannot be pulled`, `Back-off pulling image`}},
		},
		{
			name: "err image pull",
			pod: unit("web", corev1.ContainerStatus{Image: "registry.example/nope:1", State: waiting("ErrImagePull",
				"rpc error:\n  not found")}),
			want: &want{class: ClassImagePull, reason: "ErrImagePull", msg: []string{`"registry.example/nope:1"`, "rpc error: not found"}},
		},
		{
			name: "invalid image name",
			pod:  unit("web", corev1.ContainerStatus{Image: "UPPER:x", State: waiting("InvalidImageName", "bad")}),
			want: &want{class: ClassImagePull, reason: "InvalidImageName"},
		},
		{
			name: "crash loop with last exit code 3",
			pod: unit("web", corev1.ContainerStatus{State: waiting("CrashLoopBackOff", "back-off 10s"), RestartCount: 2,
				LastTerminationState: corev1.ContainerState{Terminated: terminated("Error", 3, "")}}),
			want: &want{class: ClassCrash, reason: "Error", msg: []string{"web crashed with exit code 3 (Error)"}, exitCode: code(3)},
		},
		{
			name: "crash loop without a last state",
			pod:  unit("worker", corev1.ContainerStatus{State: waiting("CrashLoopBackOff", ""), RestartCount: 4}),
			want: &want{class: ClassCrash, reason: "CrashLoopBackOff", msg: []string{"worker keeps crashing (restarted 4 times)"}},
		},
		{
			name: "terminated after a restart",
			pod: unit("web", corev1.ContainerStatus{RestartCount: 1,
				State: corev1.ContainerState{Terminated: terminated("Error", 1, "panic: no DATABASE_URL\ngoroutine 1")}}),
			want: &want{class: ClassCrash, reason: "Error", msg: []string{"web crashed with exit code 1 (Error): panic: no DATABASE_URL goroutine 1"}, exitCode: code(1)},
		},
		{
			name: "first termination, not restarted yet",
			pod: unit("web", corev1.ContainerStatus{RestartCount: 0,
				State: corev1.ContainerState{Terminated: terminated("Error", 1, "")}}),
			want: nil,
		},
		{
			name: "terminated with restart policy Never",
			pod: unit("web", corev1.ContainerStatus{State: corev1.ContainerState{Terminated: terminated("Error", 2, "")}},
				func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			want: &want{class: ClassCrash, exitCode: code(2)},
		},
		{
			name: "exit 0",
			pod: unit("worker", corev1.ContainerStatus{State: waiting("CrashLoopBackOff", ""), RestartCount: 3,
				LastTerminationState: corev1.ContainerState{Terminated: terminated("Completed", 0, "")}}),
			want: &want{class: ClassCrash, reason: "Completed", msg: []string{"worker exited with code 0; a process must keep running (restarted 3 times)"}, exitCode: code(0)},
		},
		{
			name: "running again after a crash",
			pod: unit("web", corev1.ContainerStatus{State: running(t0), RestartCount: 1,
				LastTerminationState: corev1.ContainerState{Terminated: terminated("Error", 137, "")}}, withPhase(corev1.PodRunning)),
			now:  t0.Add(time.Second),
			want: &want{class: ClassCrash, exitCode: code(137)},
		},
		{
			name: "one OOM kill is forgiven",
			pod: unit("web", corev1.ContainerStatus{State: running(t0), RestartCount: 1,
				LastTerminationState: corev1.ContainerState{Terminated: terminated("OOMKilled", 137, "")}}, withPhase(corev1.PodRunning)),
			now:  t0.Add(time.Second),
			want: nil,
		},
		{
			name: "two OOM kills",
			pod: unit("web", corev1.ContainerStatus{State: running(t0), RestartCount: 2,
				LastTerminationState: corev1.ContainerState{Terminated: terminated("OOMKilled", 137, "ignored")}}, withPhase(corev1.PodRunning)),
			now:  t0.Add(time.Second),
			want: &want{class: ClassCrash, reason: "OOMKilled", msg: []string{"more memory than its limit (OOMKilled, exit code 137)"}, exitCode: code(137)},
		},
		{
			name: "create container config error",
			pod: unit("web", corev1.ContainerStatus{State: waiting("CreateContainerConfigError",
				`secret "tug-release-shop-v7" not found`)}),
			want: &want{class: ClassConfig, reason: "CreateContainerConfigError", msg: []string{`web cannot start: secret "tug-release-shop-v7" not found`}},
		},
		{
			name: "secret not synced yet is transient",
			pod: unit("web", corev1.ContainerStatus{State: waiting("CreateContainerConfigError",
				"failed to sync secret cache: timed out waiting for the condition")}),
			now:  t0.Add(time.Hour),
			want: nil,
		},
		{
			name: "missing key in the secret",
			pod: unit("web", corev1.ContainerStatus{State: waiting("CreateContainerConfigError",
				`couldn't find key TOKEN in Secret dev/tug-release-shop-v7`)}),
			want: &want{class: ClassConfig, msg: []string{"couldn't find key TOKEN"}},
		},
		{
			name: "run container error",
			pod:  unit("web", corev1.ContainerStatus{State: waiting("RunContainerError", "x")}),
			want: &want{class: ClassConfig, reason: "RunContainerError"},
		},
		{
			name: "start error",
			pod: unit("web", corev1.ContainerStatus{
				State: corev1.ContainerState{Terminated: terminated("StartError", 128, `exec: "./server": stat ./server: no such file or directory`)}}),
			want: &want{class: ClassConfig, reason: "StartError", msg: []string{"web cannot start: exec:", "no such file"}},
		},
		{
			name: "start error in the last state",
			pod: unit("web", corev1.ContainerStatus{State: waiting("ContainerCreating", ""), RestartCount: 1,
				LastTerminationState: corev1.ContainerState{Terminated: terminated("ContainerCannotRun", 127, "not found")}}),
			want: &want{class: ClassConfig, reason: "ContainerCannotRun"},
		},
		{
			name: "unschedulable within the grace",
			pod:  unit("web", corev1.ContainerStatus{}, unschedulable(t0)),
			now:  t0.Add(unschedulableGrace - time.Millisecond),
			want: nil,
		},
		{
			name: "unschedulable after the grace",
			pod:  unit("web", corev1.ContainerStatus{}, unschedulable(t0)),
			now:  t0.Add(unschedulableGrace),
			want: &want{class: ClassUnschedulable, reason: "Unschedulable", msg: []string{"web units cannot be placed on any node: 0/3 nodes are available: 3 Insufficient cpu. preemption"}},
		},
		{
			name: "unready within the readiness grace",
			pod:  unit("web", corev1.ContainerStatus{State: running(t0)}, withPhase(corev1.PodRunning), withProbe(2, 3, 0)),
			now:  t0.Add(18*time.Second - time.Millisecond),
			want: nil,
		},
		{
			name: "unready after the readiness grace",
			pod:  unit("web", corev1.ContainerStatus{State: running(t0)}, withPhase(corev1.PodRunning), withProbe(2, 3, 0)),
			now:  t0.Add(18 * time.Second),
			want: &want{class: ClassUnready, reason: "Unready", msg: []string{"web has run for 18s and its readiness check has not passed"}},
		},
		{
			name: "not ready without a probe is not unready",
			pod:  unit("worker", corev1.ContainerStatus{State: running(t0)}, withPhase(corev1.PodRunning)),
			now:  t0.Add(time.Hour),
			want: nil,
		},
		{
			name: "healthy",
			pod: unit("web", corev1.ContainerStatus{State: running(t0), Ready: true}, withPhase(corev1.PodRunning), withProbe(2, 3, 0),
				func(p *corev1.Pod) {
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				}),
			now:  t0.Add(time.Hour),
			want: nil,
		},
		{
			name: "still creating",
			pod:  unit("web", corev1.ContainerStatus{State: waiting("ContainerCreating", "")}),
			now:  t0.Add(time.Hour),
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = t0
			}
			f := diagnosePod(tt.pod, now)
			if tt.want == nil {
				if f != nil {
					t.Fatalf("diagnosePod = %+v, want nil", f)
				}
				return
			}
			if f == nil {
				t.Fatalf("diagnosePod = nil, want class %s", tt.want.class)
			}
			if f.Class != tt.want.class {
				t.Errorf("class = %s, want %s (%s)", f.Class, tt.want.class, f.Message)
			}
			if tt.want.reason != "" && f.Reason != tt.want.reason {
				t.Errorf("reason = %q, want %q", f.Reason, tt.want.reason)
			}
			for _, m := range tt.want.msg {
				if !strings.Contains(f.Message, m) {
					t.Errorf("message %q lacks %q", f.Message, m)
				}
			}
			if strings.Contains(f.Message, "\n") {
				t.Errorf("message %q is not one line", f.Message)
			}
			if f.Error() != f.Message {
				t.Errorf("Error() = %q, want the message", f.Error())
			}
			if tt.want.exitCode != nil {
				if f.ContainerExitCode == nil || *f.ContainerExitCode != *tt.want.exitCode {
					t.Errorf("ContainerExitCode = %v, want %d", f.ContainerExitCode, *tt.want.exitCode)
				}
			} else if f.Class != ClassCrash && f.ContainerExitCode != nil {
				t.Errorf("ContainerExitCode = %d for class %s", *f.ContainerExitCode, f.Class)
			}
			if f.Process != tt.pod.Labels[kube.LabelProcess] || f.Unit != tt.pod.Name {
				t.Errorf("process %q unit %q, want %q %q", f.Process, f.Unit, tt.pod.Labels[kube.LabelProcess], tt.pod.Name)
			}
		})
	}
}

func TestReadinessGrace(t *testing.T) {
	tests := []struct {
		probe corev1.Probe
		want  time.Duration
	}{
		{corev1.Probe{PeriodSeconds: 2, FailureThreshold: 3}, 18 * time.Second},
		{corev1.Probe{}, 90 * time.Second}, // Kubernetes' defaults: 10 s period, 3 failures
		{corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1}, minUnreadyGrace},
		{corev1.Probe{PeriodSeconds: 5, FailureThreshold: 2, InitialDelaySeconds: 20}, 50 * time.Second},
	}
	for _, tt := range tests {
		if got := readinessGrace(&tt.probe); got != tt.want {
			t.Errorf("readinessGrace(period %d, threshold %d, delay %d) = %s, want %s",
				tt.probe.PeriodSeconds, tt.probe.FailureThreshold, tt.probe.InitialDelaySeconds, got, tt.want)
		}
	}
}

func TestFailureExitCode(t *testing.T) {
	for class, want := range map[Class]int{
		ClassImagePull: 10, ClassCrash: 11, ClassConfig: 12, ClassUnschedulable: 13, ClassUnready: 14, ClassTimeout: 15,
		Class("something-new"): 1,
	} {
		if got := (&Failure{Class: class}).ExitCode(); got != want {
			t.Errorf("ExitCode(%s) = %d, want %d", class, got, want)
		}
	}
	// codes 0-2 belong to success and the generic failures; classes must differ
	seen := map[int]Class{}
	for class, c := range exitCodes {
		if c <= 2 {
			t.Errorf("class %s has exit code %d, which collides with the generic ones", class, c)
		}
		if other, dup := seen[c]; dup {
			t.Errorf("classes %s and %s share exit code %d", class, other, c)
		}
		seen[c] = class
	}
}

// tug's own web check, as render makes it now and as it made it before
// 2026-12-08, gets the slow-boot grace (a JVM keeps the time it had); a
// user's check of the same shape but other timings does not.
func TestTugsWebProbeKnowsItsOwnCheck(t *testing.T) {
	web := func(period, failures int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 1}
	}
	for _, tc := range []struct {
		probe *corev1.Probe
		want  bool
	}{
		{web(app.WebProbePeriod, app.WebProbeFailures), true},
		{web(app.FormerWebProbePeriod, app.FormerWebProbeFailures), true},
		{web(5, 4), false},
		{web(1, 3), false},
	} {
		if got := tugsWebProbe(tc.probe); got != tc.want {
			t.Errorf("probe every %ds, %d failures: tug's own %v, want %v", tc.probe.PeriodSeconds, tc.probe.FailureThreshold, got, tc.want)
		}
	}
}
