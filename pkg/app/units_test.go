package app

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
)

var unitNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// podWith is a scheduled web pod whose status fields are set by mutate.
func podWith(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-web-1", Namespace: testNS},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "web", Image: "shop:1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func waiting(reason string, restarts int32, last *corev1.ContainerStateTerminated) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "web", RestartCount: restarts,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
			LastTerminationState: corev1.ContainerState{Terminated: last},
		}}
	}
}

// runningFor is a running, unready container started d before unitNow,
// with the given readiness probe (nil: none).
func runningFor(d time.Duration, probe *corev1.Probe) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = probe
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  "web",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(unitNow.Add(-d))}},
		}}
	}
}

func TestUnitStatus(t *testing.T) {
	deleted := metav1.NewTime(unitNow)
	probe := &corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 10, FailureThreshold: 3} // window 35s
	tests := []struct {
		name           string
		pod            *corev1.Pod
		status, reason string
	}{
		// stopping
		{"being deleted", podWith(func(p *corev1.Pod) { p.DeletionTimestamp = &deleted }), UnitStopping, ""},
		{"being deleted wins over a crash", podWith(func(p *corev1.Pod) {
			waiting("CrashLoopBackOff", 3, nil)(p)
			p.DeletionTimestamp = &deleted
		}), UnitStopping, ""},
		// stopped
		{"succeeded", podWith(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), UnitStopped, "exited 0"},
		// error
		{"failed with a reason", podWith(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}
		}), UnitError, "Evicted"},
		{"failed with only a message", podWith(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Message: "node shut down"}
		}), UnitError, "node shut down"},
		{"failed with nothing said", podWith(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), UnitError, "failed"},
		{"a run that exited non-zero", podWith(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
				{Name: "side", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}},
			}
		}), UnitStopped, "exit code 3"},
		{"failed with a reason, whatever the exit code", podWith(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", ContainerStatuses: []corev1.ContainerStatus{
				{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}},
			}}
		}), UnitError, "DeadlineExceeded"},
		{"the first container that is not running says why", podWith(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side"})
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "web", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "side", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}},
			}
		}), UnitError, "ErrImagePull"},
		{"a status past the spec's containers has no probe", podWith(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "web", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "extra", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(unitNow.Add(-time.Hour))}}},
			}
		}), UnitStarting, ""},
		{"image pull backoff", podWith(waiting("ImagePullBackOff", 0, nil)), UnitError, "ImagePullBackOff"},
		{"image pull error", podWith(waiting("ErrImagePull", 0, nil)), UnitError, "ErrImagePull"},
		{"bad image name", podWith(waiting("InvalidImageName", 0, nil)), UnitError, "InvalidImageName"},
		{"missing secret", podWith(waiting("CreateContainerConfigError", 0, nil)), UnitError, "CreateContainerConfigError"},
		{"hook failed after restarts", podWith(waiting("PostStartHookError", 2, nil)), UnitError, "PostStartHookError"},
		// pending
		{"unschedulable with the scheduler's message", podWith(func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/3 nodes are available: 3 Insufficient cpu.",
			}}}
		}), UnitPending, "0/3 nodes are available: 3 Insufficient cpu."},
		{"unschedulable with only a reason", podWith(func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated",
			}}}
		}), UnitPending, "SchedulingGated"},
		{"not placed yet", podWith(func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		}), UnitPending, "waiting for the scheduler"},
		// crashed
		{"crash loop with the last exit code", podWith(waiting("CrashLoopBackOff", 5, &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"})),
			UnitCrashed, "exit code 2"},
		{"crash loop out of memory", podWith(waiting("CrashLoopBackOff", 5, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"})),
			UnitCrashed, "OOMKilled"},
		{"crash loop without a last state", podWith(waiting("CrashLoopBackOff", 1, nil)), UnitCrashed, "CrashLoopBackOff"},
		{"restarting after a crash", podWith(waiting("ContainerCreating", 1, &corev1.ContainerStateTerminated{ExitCode: 1})),
			UnitCrashed, "exit code 1"},
		{"terminated, about to restart", podWith(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}}}
		}), UnitCrashed, "exit code 143"},
		// created
		{"container being created", podWith(waiting("ContainerCreating", 0, nil)), UnitCreated, "ContainerCreating"},
		{"no container status yet", podWith(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), UnitCreated, ""},
		// starting
		{"running, probe window not over", podWith(runningFor(30*time.Second, probe)), UnitStarting, ""},
		{"running, no readiness probe", podWith(runningFor(time.Hour, nil)), UnitStarting, ""},
		{"containers ready, pod condition not yet", podWith(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}), UnitStarting, ""},
		// unready
		{"running, probe window over", podWith(runningFor(36*time.Second, probe)), UnitUnready, "readiness check failing"},
		{"running, default probe timings", podWith(runningFor(31*time.Second, &corev1.Probe{})), UnitUnready, "readiness check failing"},
		// started
		{"running and ready", podWith(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}), UnitStarted, ""},
		// lost: the node controller marked it not ready while the kubelet's
		// last word was "running and ready"; or phase Unknown; or NodeLost
		{"node stopped reporting", podWith(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}
		}), UnitLost, "node n1 is not reporting"},
		{"phase unknown", podWith(func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), UnitLost, "node n1 is not reporting"},
		{"deleted on a lost node", podWith(func(p *corev1.Pod) {
			p.DeletionTimestamp = &deleted
			p.Status.Reason = "NodeLost"
		}), UnitLost, "node n1 is not reporting"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, reason := unitStatus(tt.pod, unitNow)
			if status != tt.status || reason != tt.reason {
				t.Errorf("unitStatus = %q, %q; want %q, %q", status, reason, tt.status, tt.reason)
			}
		})
		seen[tt.status] = true
	}
	for _, s := range []string{UnitPending, UnitCreated, UnitStarting, UnitStarted, UnitUnready, UnitStopping, UnitStopped, UnitCrashed, UnitError, UnitLost} {
		if !seen[s] {
			t.Errorf("no case for status %q", s)
		}
	}
}

func TestReadinessWindow(t *testing.T) {
	for _, tt := range []struct {
		probe corev1.Probe
		want  time.Duration
	}{
		{corev1.Probe{}, 30 * time.Second},
		{corev1.Probe{InitialDelaySeconds: 10}, 40 * time.Second},
		{corev1.Probe{PeriodSeconds: 2, FailureThreshold: 5}, 10 * time.Second},
		{corev1.Probe{InitialDelaySeconds: 1, PeriodSeconds: 1, FailureThreshold: 1}, 2 * time.Second},
	} {
		if got := readinessWindow(&tt.probe); got != tt.want {
			t.Errorf("readinessWindow(%+v) = %v, want %v", tt.probe, got, tt.want)
		}
	}
}

func TestUnitOf(t *testing.T) {
	created := metav1.NewTime(unitNow.Add(-time.Hour))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-web-1", Namespace: testNS, CreationTimestamp: created,
			Labels: map[string]string{kube.LabelApp: "shop", kube.LabelProcess: "web", kube.LabelRelease: "7"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			{Name: "web", Image: "shop:7", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}, {Name: "http", ContainerPort: 8080}}},
			{Name: "sidecar", Image: "proxy:1"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "web", Ready: true, RestartCount: 2, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}},
				{Name: "sidecar", Ready: true, RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}},
	}
	u := UnitOf(p, unitNow)
	want := Unit{Name: "shop-web-1", App: "shop", Process: "web", Release: 7, Status: UnitStarted, Ready: true, Restarts: 3,
		Node: "n1", IP: "10.1.2.3", Address: "10.1.2.3:8080", Image: "shop:7", CreatedAt: created.Time}
	if u.LastExitCode == nil || *u.LastExitCode != 137 {
		t.Errorf("LastExitCode = %v, want 137", u.LastExitCode)
	}
	u.LastExitCode = nil
	if u != want {
		t.Errorf("UnitOf =\n%+v\nwant\n%+v", u, want)
	}

	// No IP yet: no address; a bad release label reads as 0; a container
	// that has terminated gives its exit code.
	p.Status.PodIP = ""
	p.Labels[kube.LabelRelease] = "x"
	p.Status.ContainerStatuses[1].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 9}}
	u = UnitOf(p, unitNow)
	if u.Address != "" || u.Release != 0 || u.LastExitCode == nil || *u.LastExitCode != 9 {
		t.Errorf("UnitOf without IP = %+v (exit %v)", u, u.LastExitCode)
	}

	// A pod without containers still describes itself.
	u = UnitOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, Spec: corev1.PodSpec{NodeName: "n1"}}, unitNow)
	if u.Image != "" || u.Status != UnitCreated || u.LastExitCode != nil {
		t.Errorf("UnitOf(bare) = %+v", u)
	}
}

// unitPod is a scheduled, ready pod of app's process.
func unitPod(appName, proc, name string) *corev1.Pod {
	l := kube.AppLabels(appName)
	l[kube.LabelProcess] = proc
	l[kube.LabelRelease] = "1"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: l},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: proc, Image: appName + ":1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: proc, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

func unitNames(us []Unit) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.App + "/" + u.Name
	}
	return out
}

// runPod is a one-off run pod as pkg/session makes it: kind run, no process
// or release label, its release in an annotation.
func runPod(appName, name string) *corev1.Pod {
	p := unitPod(appName, "web", name)
	delete(p.Labels, kube.LabelProcess)
	delete(p.Labels, kube.LabelRelease)
	p.Labels[kube.LabelKind] = "run"
	p.Annotations = map[string]string{kube.LabelRelease: "4", "tug.dev/run-process": "web"}
	return p
}

func TestListUnits(t *testing.T) {
	run := runPod("shop", "shop-run-x")
	notUnit := unitPod("shop", "web", "shop-stray")
	delete(notUnit.Labels, kube.LabelProcess)
	other := unitPod("shop", "web", "elsewhere")
	other.Namespace = "prod"
	_, c := newStore(t,
		unitPod("shop", "worker", "shop-worker-b"),
		unitPod("shop", "web", "shop-web-z"),
		unitPod("shop", "clock", "shop-clock-a"),
		unitPod("shop", "web", "shop-web-a"),
		unitPod("blog", "web", "blog-web-a"),
		run, notUnit, other,
	)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		o    ListUnitsOptions
		want []string
	}{
		{"one app, web first", ListUnitsOptions{App: "shop"},
			[]string{"shop/shop-web-a", "shop/shop-web-z", "shop/shop-clock-a", "shop/shop-worker-b"}},
		{"one process", ListUnitsOptions{App: "shop", Process: "web"}, []string{"shop/shop-web-a", "shop/shop-web-z"}},
		{"every app", ListUnitsOptions{All: true},
			[]string{"blog/blog-web-a", "shop/shop-web-a", "shop/shop-web-z", "shop/shop-clock-a", "shop/shop-worker-b"}},
		{"no such app", ListUnitsOptions{App: "nope"}, []string{}},
		{"with runs, after the units", ListUnitsOptions{App: "shop", Runs: true},
			[]string{"shop/shop-web-a", "shop/shop-web-z", "shop/shop-clock-a", "shop/shop-worker-b", "shop/shop-run-x"}},
		{"runs alone", ListUnitsOptions{App: "shop", Process: RunProcess}, []string{"shop/shop-run-x"}},
		{"every app with runs", ListUnitsOptions{All: true, Runs: true},
			[]string{"blog/blog-web-a", "shop/shop-web-a", "shop/shop-web-z", "shop/shop-clock-a", "shop/shop-worker-b", "shop/shop-run-x"}},
		{"one process with runs has no runs", ListUnitsOptions{App: "shop", Process: "clock", Runs: true}, []string{"shop/shop-clock-a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			units, err := ListUnits(ctx, c, testNS, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := unitNames(units); !slices.Equal(got, tt.want) {
				t.Errorf("units = %v, want %v", got, tt.want)
			}
		})
	}
	units, _ := ListUnits(ctx, c, testNS, ListUnitsOptions{App: "shop", Process: "web"})
	if len(units) == 0 || units[0].Status != UnitStarted || !units[0].Ready || units[0].Release != 1 {
		t.Errorf("unit = %+v", units)
	}
	units, _ = ListUnits(ctx, c, testNS, ListUnitsOptions{App: "shop", Process: RunProcess})
	if len(units) != 1 || units[0].Process != RunProcess || units[0].Release != 4 || units[0].Status != UnitStarted {
		t.Errorf("run = %+v", units)
	}
}

// A run whose command exited non-zero has stopped; it did not fail to start.
func TestRunPodStatus(t *testing.T) {
	p := runPod("shop", "shop-run-x")
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}
	if u := UnitOf(p, unitNow); u.Status != UnitStopped || u.Reason != "exit code 3" {
		t.Errorf("exited 3: %s (%s)", u.Status, u.Reason)
	}
	p.Status.Reason = "DeadlineExceeded"
	if u := UnitOf(p, unitNow); u.Status != UnitError || u.Reason != "DeadlineExceeded" {
		t.Errorf("stopped at its deadline: %s (%s)", u.Status, u.Reason)
	}
}

func TestListUnitsError(t *testing.T) {
	_, c := newStore(t)
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	_, err := ListUnits(context.Background(), c, testNS, ListUnitsOptions{App: "shop"})
	var kerr *kube.Error
	if !errors.As(err, &kerr) || !apierrors.IsForbidden(err) {
		t.Fatalf("ListUnits = %v (%T), want the translated permission error", err, err)
	}
}

func TestKillUnit(t *testing.T) {
	ctx := context.Background()
	t.Run("deletes the unit", func(t *testing.T) {
		_, c := newStore(t, unitPod("shop", "web", "shop-web-a"), unitPod("shop", "web", "shop-web-b"))
		var grace *int64
		c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			grace = a.(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds
			return false, nil, nil
		})
		if _, err := KillUnit(ctx, c, testNS, "shop", "shop-web-a", false); err != nil {
			t.Fatal(err)
		}
		if grace != nil {
			t.Errorf("a plain kill set a grace period of %d", *grace)
		}
		if _, err := c.CoreV1().Pods(testNS).Get(ctx, "shop-web-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("unit still there: %v", err)
		}
		if _, err := KillUnit(ctx, c, testNS, "shop", "shop-web-b", true); err != nil {
			t.Fatal(err)
		}
		if grace == nil || *grace != 0 {
			t.Errorf("--force grace period = %v, want 0", grace)
		}
	})
	for _, tt := range []struct {
		name, app, unit string
		pods            []runtime.Object
		want            string
	}{
		{"unknown unit lists the app's units", "shop", "shop-web-q",
			[]runtime.Object{unitPod("shop", "web", "shop-web-b"), unitPod("shop", "web", "shop-web-a")},
			`unit "shop-web-q" not found in namespace "dev"; units of app "shop": shop-web-a, shop-web-b`},
		{"another app's unit", "shop", "blog-web-a",
			[]runtime.Object{unitPod("blog", "web", "blog-web-a"), unitPod("shop", "web", "shop-web-a")},
			`unit "blog-web-a" not found in namespace "dev"; units of app "shop": shop-web-a`},
		{"app without units", "shop", "shop-web-a", nil,
			`unit "shop-web-a" not found in namespace "dev"; app "shop" has no units`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newStore(t, tt.pods...)
			_, err := KillUnit(ctx, c, testNS, tt.app, tt.unit, false)
			if err == nil || err.Error() != tt.want || !IsNotFound(err) {
				t.Fatalf("KillUnit = %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("stops a run pod, which the listing names", func(t *testing.T) {
		_, c := newStore(t, unitPod("shop", "web", "shop-web-a"), runPod("shop", "shop-run-x"))
		u, err := KillUnit(ctx, c, testNS, "shop", "shop-run-x", false)
		if err != nil || u.Process != RunProcess {
			t.Fatalf("KillUnit(run) = %+v, %v", u, err)
		}
		if _, err := c.CoreV1().Pods(testNS).Get(ctx, "shop-run-x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("run pod still there: %v", err)
		}
		_, err = KillUnit(ctx, c, testNS, "shop", "shop-run-q", false)
		if want := `unit "shop-run-q" not found in namespace "dev"; units of app "shop": shop-web-a`; err == nil || err.Error() != want {
			t.Errorf("KillUnit(missing) = %v, want %q", err, want)
		}
	})
	t.Run("a failed get is not a not-found", func(t *testing.T) {
		_, c := newStore(t)
		c.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "shop-web-a", errors.New("no"))
		})
		_, err := KillUnit(ctx, c, testNS, "shop", "shop-web-a", false)
		if err == nil || IsNotFound(err) {
			t.Fatalf("KillUnit = %v, want the permission error", err)
		}
	})
}
