package rollout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
)

func deleting(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

func TestRolledOut(t *testing.T) {
	three := int32(3)
	tests := []struct {
		name string
		d    *appsv1.Deployment
		gen  int64
		want bool
	}{
		{"done", dep("web", 3, 2, done(3, 2)), 2, true},
		{"controller has not seen the spec", dep("web", 3, 2, done(3, 1)), 2, false},
		{"controller saw a later spec", dep("web", 3, 3, done(3, 3)), 2, true},
		{"new units not all updated", dep("web", 3, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 3}), 2, false},
		{"old units remain", dep("web", 3, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3}), 2, false},
		{"not all available", dep("web", 3, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}), 2, false},
		{"scaled to zero", dep("web", 0, 2, appsv1.DeploymentStatus{ObservedGeneration: 2}), 2, true},
		{"nil replicas means 1", func() *appsv1.Deployment { d := dep("web", 1, 1, done(1, 1)); d.Spec.Replicas = nil; return d }(), 1, true},
		{"nil replicas, 3 running", func() *appsv1.Deployment { d := dep("web", 1, 1, done(three, 1)); d.Spec.Replicas = nil; return d }(), 1, false},
	}
	for _, tt := range tests {
		if got := rolledOut(tt.d, tt.gen); got != tt.want {
			t.Errorf("%s: rolledOut = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func newRollout(c *fake.Clientset, release int, gens map[string]int64, deps []*appsv1.Deployment, pods []*corev1.Pod) *Watch {
	r := &Watch{Client: c, Namespace: ns, App: "shop", Release: release, Generations: gens,
		Idle: time.Minute, Progress: progress.Nop{},
		deployments: map[string]*appsv1.Deployment{}}
	for _, d := range deps {
		r.deployments[d.Name] = d
	}
	r.setPods(nil)
	for _, p := range pods {
		r.setPod(p, false)
	}
	return r
}

func TestRolloutSummary(t *testing.T) {
	c := fakeClient()
	tests := []struct {
		name string
		gens map[string]int64
		deps []*appsv1.Deployment
		pods []*corev1.Pod
		want string
	}{
		{
			name: "rolling web",
			gens: map[string]int64{"shop-web": 2},
			deps: []*appsv1.Deployment{dep("web", 3, 2, appsv1.DeploymentStatus{})},
			pods: []*corev1.Pod{
				pod("n1", "web", "7", true), pod("n2", "web", "7", true), pod("n3", "web", "7", false),
				pod("o1", "web", "6", true, deleting),
			},
			want: "web: 2 of 3 new units ready, 1 old unit terminating",
		},
		{
			name: "web and worker, old running, run pods and foreign processes ignored",
			gens: map[string]int64{"shop-worker": 1, "shop-web": 1},
			deps: []*appsv1.Deployment{dep("web", 1, 1, appsv1.DeploymentStatus{}), dep("worker", 2, 1, appsv1.DeploymentStatus{})},
			pods: []*corev1.Pod{
				pod("n1", "web", "7", true),
				pod("o1", "web", "6", true), pod("o2", "web", "6", true), pod("o3", "web", "6", false, deleting),
				pod("w1", "worker", "7", false), pod("w2", "worker", "6", true),
				pod("run1", "web", "6", true, func(p *corev1.Pod) { p.Labels[kube.LabelKind] = "run" }),
				pod("c1", "clock", "6", true), // a process not in this rollout
				pod("d1", "web", "7", true, deleting),
			},
			want: "web: 1 of 1 new unit ready, 2 old units running, 1 old unit terminating; worker: 0 of 2 new units ready, 1 old unit running",
		},
		{
			name: "deployment not seen yet",
			gens: map[string]int64{"shop-web": 1},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRollout(c, 7, tt.gens, tt.deps, tt.pods)
			if got := r.summary(); got != tt.want {
				t.Errorf("summary =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

func TestRolloutCheck(t *testing.T) {
	crashing := func(rel string) *corev1.Pod {
		return pod("c-"+rel, "web", rel, false, func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = waiting("CrashLoopBackOff", "")
			p.Status.ContainerStatuses[0].RestartCount = 3
		})
	}
	deadline := appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: "ReplicaSet \"shop-web-x\" has timed out progressing.",
	}}}
	tests := []struct {
		name      string
		gens      map[string]int64
		deps      []*appsv1.Deployment
		pods      []*corev1.Pod
		wantDone  bool
		wantClass Class
	}{
		{"all rolled out", map[string]int64{"shop-web": 2, "shop-worker": 1},
			[]*appsv1.Deployment{dep("web", 2, 2, done(2, 2)), dep("worker", 1, 1, done(1, 1))}, nil, true, ""},
		{"one still rolling", map[string]int64{"shop-web": 2, "shop-worker": 1},
			[]*appsv1.Deployment{dep("web", 2, 2, done(2, 2)), dep("worker", 1, 1, done(1, 0))}, nil, false, ""},
		{"deployment not seen yet", map[string]int64{"shop-web": 2}, nil, nil, false, ""},
		{"crash of a new unit", map[string]int64{"shop-web": 2},
			[]*appsv1.Deployment{dep("web", 2, 2, done(2, 1))}, []*corev1.Pod{crashing("7")}, true, ClassCrash},
		{"crash of an old unit is not this release's failure", map[string]int64{"shop-web": 2},
			[]*appsv1.Deployment{dep("web", 1, 2, done(1, 2))}, []*corev1.Pod{crashing("6")}, true, ""},
		{"crash of a terminating new unit is ignored", map[string]int64{"shop-web": 2},
			[]*appsv1.Deployment{dep("web", 1, 2, done(1, 2))},
			[]*corev1.Pod{func() *corev1.Pod { p := crashing("7"); deleting(p); return p }()}, true, ""},
		{"progress deadline", map[string]int64{"shop-web": 2},
			[]*appsv1.Deployment{dep("web", 2, 2, deadline)}, nil, true, ClassTimeout},
		{"progress deadline of the previous spec", map[string]int64{"shop-web": 3},
			[]*appsv1.Deployment{dep("web", 2, 3, deadline)}, nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRollout(fakeClient(), 7, tt.gens, tt.deps, tt.pods)
			gotDone, err := r.check(context.Background(), time.Now())
			if gotDone != tt.wantDone {
				t.Errorf("done = %v, want %v (err %v)", gotDone, tt.wantDone, err)
			}
			if tt.wantClass == "" {
				if err != nil {
					t.Errorf("err = %v, want nil", err)
				}
				return
			}
			var f *Failure
			if !errors.As(err, &f) || f.Class != tt.wantClass {
				t.Fatalf("err = %v, want a %s failure", err, tt.wantClass)
			}
			if f.Process != "web" {
				t.Errorf("failure process = %q", f.Process)
			}
		})
	}
}

// A crash is explained with the last lines of the previous container's log.
func TestRolloutExplainCrashLogs(t *testing.T) {
	c := fakeClient()
	var opts []*corev1.PodLogOptions
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g, ok := a.(k8stesting.GenericAction)
		if !ok || a.GetSubresource() != "log" {
			return false, nil, nil
		}
		o := g.GetValue().(*corev1.PodLogOptions)
		opts = append(opts, o)
		return true, &runtime.Unknown{Raw: []byte("starting\npanic: no DATABASE_URL\n")}, nil
	})
	p := pod("c1", "web", "7", false, func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = waiting("CrashLoopBackOff", "")
		p.Status.ContainerStatuses[0].RestartCount = 2
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = terminated("Error", 2, "")
	})
	r := newRollout(c, 7, map[string]int64{"shop-web": 1}, []*appsv1.Deployment{dep("web", 1, 1, appsv1.DeploymentStatus{})}, []*corev1.Pod{p})
	_, err := r.check(context.Background(), time.Now())
	var f *Failure
	if !errors.As(err, &f) || f.Class != ClassCrash {
		t.Fatalf("check = %v, want a crash", err)
	}
	if !slices.Equal(f.Logs, []string{"starting", "panic: no DATABASE_URL"}) {
		t.Errorf("logs = %q", f.Logs)
	}
	if len(opts) == 0 || !opts[0].Previous || opts[0].TailLines == nil || *opts[0].TailLines != crashLogLines {
		t.Errorf("log options = %+v, want the previous container's last %d lines", opts, crashLogLines)
	}
}

// An unready unit is explained with the newest Unhealthy event's message.
func TestRolloutExplainUnready(t *testing.T) {
	ev := func(name, msg string, at time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "u1"}, Reason: "Unhealthy", Message: msg,
			LastTimestamp: metav1.NewTime(at)}
	}
	start := time.Now().Add(-time.Hour)
	c := fakeClient(
		ev("e2", "Readiness probe failed: dial tcp 10.0.0.9:8080: connect: connection refused", start.Add(2*time.Minute)),
		ev("e1", "Readiness probe failed: old", start.Add(time.Minute)),
	)
	p := pod("u1", "web", "7", false, func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = running(start)
	}, withProbe(2, 3, 0))
	r := newRollout(c, 7, map[string]int64{"shop-web": 1}, []*appsv1.Deployment{dep("web", 1, 1, appsv1.DeploymentStatus{})}, []*corev1.Pod{p})
	_, err := r.check(context.Background(), time.Now())
	var f *Failure
	if !errors.As(err, &f) || f.Class != ClassUnready {
		t.Fatalf("check = %v, want unready", err)
	}
	if !strings.HasSuffix(f.Message, ": Readiness probe failed: dial tcp 10.0.0.9:8080: connect: connection refused") {
		t.Errorf("message = %q, want the newest probe event", f.Message)
	}
}

func TestRolloutWait(t *testing.T) {
	t.Run("already rolled out", func(t *testing.T) {
		c := fakeClient(dep("web", 2, 3, done(2, 3)), pod("n1", "web", "7", true), pod("n2", "web", "7", true))
		rec := &recorder{}
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 3}, Idle: time.Minute, Progress: rec}
		if err := r.Wait(context.Background()); err != nil {
			t.Fatalf("wait = %v", err)
		}
	})
	t.Run("a failing unit ends the wait", func(t *testing.T) {
		bad := pod("n1", "web", "7", false, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses[0].State = waiting("ErrImagePull", "not found")
		})
		c := fakeClient(dep("web", 1, 1, done(1, 0)), bad)
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 1}, Idle: time.Minute, Progress: progress.Nop{}}
		var f *Failure
		if err := r.Wait(context.Background()); !errors.As(err, &f) || f.Class != ClassImagePull {
			t.Fatalf("wait = %v, want an image pull failure", err)
		}
	})
	t.Run("events finish the rollout", func(t *testing.T) {
		c := fakeClient(dep("web", 1, 2, done(1, 1)))
		lines := make(chan string, 16)
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 2}, Idle: time.Minute, Progress: chanProgress(lines)}
		errc := make(chan error, 1)
		go func() { errc <- r.Wait(context.Background()) }()

		// The first progress line comes after the LIST; the fake's watch
		// starts from the LIST's resourceVersion, so the writes below reach
		// the rollout even if they land before its WATCH starts.
		select {
		case l := <-lines:
			if l != "web: 0 of 1 new unit ready" {
				t.Errorf("first progress line = %q", l)
			}
		case err := <-errc:
			t.Fatalf("wait returned %v before anything happened", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no progress line")
		}
		ctx := context.Background()
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod("n1", "web", "7", true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppsV1().Deployments(ns).Update(ctx, dep("web", 1, 2, done(1, 2)), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("wait = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("wait did not return after the rollout finished")
		}
	})
	t.Run("watches that fail to start or close early are resumed", func(t *testing.T) {
		// Before kube.Until, a 429 or 503 when a watch started ended the
		// wait at once, and Roll left the release pending.
		c := fakeClient(dep("web", 1, 2, done(1, 1)))
		var depWatches, podWatches atomic.Int32
		c.PrependWatchReactor("deployments", func(k8stesting.Action) (bool, watch.Interface, error) {
			switch depWatches.Add(1) {
			case 1:
				return true, nil, apierrors.NewServiceUnavailable("the server is shutting down")
			case 2:
				w := watch.NewRaceFreeFake()
				w.Stop() // closed early, having said nothing
				return true, w, nil
			}
			return false, nil, nil // the fake's own watch, from the LIST's resourceVersion
		})
		c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			if podWatches.Add(1) == 1 {
				return true, nil, apierrors.NewTooManyRequests("too many requests", 0)
			}
			return false, nil, nil
		})
		lines := make(chan string, 16)
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 2}, Idle: time.Minute, Progress: chanProgress(lines)}
		errc := make(chan error, 1)
		go func() { errc <- r.Wait(context.Background()) }()
		select {
		case <-lines:
		case err := <-errc:
			t.Fatalf("wait returned %v before anything happened", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no progress line")
		}
		ctx := context.Background()
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod("n1", "web", "7", true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppsV1().Deployments(ns).Update(ctx, dep("web", 1, 2, done(1, 2)), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("wait = %v, want the rollout to finish", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("wait did not return after the rollout finished")
		}
		if d, p := depWatches.Load(), podWatches.Load(); d < 3 || p < 2 {
			t.Errorf("%d deployment and %d pod watches, want at least 3 and 2", d, p)
		}
	})
	t.Run("a forbidden watch ends the wait", func(t *testing.T) {
		c := fakeClient(dep("web", 1, 2, done(1, 1)))
		c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
		})
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 2}, Idle: time.Minute, Progress: progress.Nop{}}
		if err := r.Wait(context.Background()); !apierrors.IsForbidden(err) {
			t.Fatalf("wait = %v, want the 403", err)
		}
	})
	t.Run("no progress times out", func(t *testing.T) {
		c := fakeClient(dep("web", 1, 2, done(1, 1)))
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 2}, Idle: 30 * time.Millisecond, Progress: progress.Nop{}}
		var f *Failure
		err := r.Wait(context.Background())
		if !errors.As(err, &f) || f.Class != ClassTimeout {
			t.Fatalf("wait = %v, want a timeout", err)
		}
		if want := "no progress for 30ms: web: 0 of 1 new unit ready"; f.Message != want {
			t.Errorf("message = %q, want %q", f.Message, want)
		}
		if f.ExitCode() != 15 {
			t.Errorf("exit code %d", f.ExitCode())
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		c := fakeClient(dep("web", 1, 2, done(1, 1)))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 2}, Idle: time.Minute, Progress: progress.Nop{}}
		if err := r.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("wait = %v, want context.Canceled", err)
		}
	})
	t.Run("list fails", func(t *testing.T) {
		c := fakeClient()
		c.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("boom")
		})
		r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
			Generations: map[string]int64{"shop-web": 2}, Idle: time.Minute, Progress: progress.Nop{}}
		if err := r.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("wait = %v, want the list error", err)
		}
	})
}

// The kubelet answers a request for a log that is already gone with status
// 200 and an error sentence as the body; that is not the unit's log, so the
// current container's log is used instead.
func TestRolloutExplainCrashPreviousLogGone(t *testing.T) {
	c := fakeClient()
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g, ok := a.(k8stesting.GenericAction)
		if !ok || a.GetSubresource() != "log" {
			return false, nil, nil
		}
		if g.GetValue().(*corev1.PodLogOptions).Previous {
			return true, &runtime.Unknown{Raw: []byte("unable to retrieve container logs for containerd://4f2a\n")}, nil
		}
		return true, &runtime.Unknown{Raw: []byte("current line 1\ncurrent line 2")}, nil
	})
	p := pod("c1", "web", "7", false, func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = waiting("CrashLoopBackOff", "")
		p.Status.ContainerStatuses[0].RestartCount = 5
	})
	r := newRollout(c, 7, map[string]int64{"shop-web": 1}, nil, []*corev1.Pod{p})
	_, err := r.check(context.Background(), time.Now())
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("check = %v", err)
	}
	if !slices.Equal(f.Logs, []string{"current line 1", "current line 2"}) {
		t.Errorf("logs = %q", f.Logs)
	}
}

func TestKubeletLogError(t *testing.T) {
	for body, want := range map[string]bool{
		"unable to retrieve container logs for containerd://abc\n":       true,
		"failed to try resolving symlinks in path \"/var/log/pods/x\"":   true,
		"unable to retrieve container logs for x\nbut a second line too": false,
		"panic: boom\n": false,
		"":              false,
	} {
		if got := kubeletLogError(body); got != want {
			t.Errorf("kubeletLogError(%q) = %v, want %v", body, got, want)
		}
	}
}

// summary() leaves out one-off run pods (tug.dev/kind=run); check() should
// too: a `tug run` that exits 1 with the new release's label is not a crash
// of the release.
func TestRolloutCheckIgnoresRunPods(t *testing.T) {
	run := pod("shop-run-x1", "web", "7", false, func(p *corev1.Pod) {
		p.Labels[kube.LabelKind] = "run"
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: terminated("Error", 1, "")}
	})
	r := newRollout(fakeClient(), 7, map[string]int64{"shop-web": 1}, []*appsv1.Deployment{dep("web", 1, 1, done(1, 1))}, []*corev1.Pod{run})
	if !strings.Contains(r.summary(), "web: 0 of 1 new unit ready") {
		t.Fatalf("summary = %q", r.summary())
	}
	finished, err := r.check(context.Background(), time.Now())
	if err != nil {
		t.Fatalf("check() diagnoses one-off run pods (tug.dev/kind=run) that summary() skips: a failed `tug run` pod carrying the new release's label fails the deploy: %v", err)
	}
	if !finished {
		t.Error("rollout not done although its Deployment rolled out")
	}
}

// The counts a rollout keeps as pods change agree with counting every pod
// afresh, whatever the order of the changes.
func TestRolloutCountsFollowChanges(t *testing.T) {
	gens := map[string]int64{"shop-web": 2, "shop-worker": 2}
	deps := []*appsv1.Deployment{dep("web", 3, 2, appsv1.DeploymentStatus{}), dep("worker", 2, 2, appsv1.DeploymentStatus{})}
	states := []func(name, proc string) *corev1.Pod{
		func(n, p string) *corev1.Pod { return pod(n, p, "7", false) },
		func(n, p string) *corev1.Pod { return pod(n, p, "7", true) },
		func(n, p string) *corev1.Pod { return pod(n, p, "7", true, deleting) },
		func(n, p string) *corev1.Pod { return pod(n, p, "6", true) },
		func(n, p string) *corev1.Pod { return pod(n, p, "6", false, deleting) },
		func(n, p string) *corev1.Pod {
			return pod(n, p, "6", true, func(p *corev1.Pod) { p.Labels[kube.LabelKind] = "run" })
		},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	r := newRollout(fakeClient(), 7, gens, deps, nil)
	now := map[string]*corev1.Pod{}
	for i := range 2000 {
		name := fmt.Sprintf("u%d", rnd.IntN(12))
		proc := []string{"web", "worker", "clock"}[rnd.IntN(3)]
		if old := now[name]; old != nil {
			proc = old.Labels[kube.LabelProcess] // a pod keeps its process
		}
		if rnd.IntN(5) == 0 {
			if old := now[name]; old != nil {
				r.setPod(old, true)
				delete(now, name)
			}
		} else {
			p := states[rnd.IntN(len(states))](name, proc)
			r.setPod(p, false)
			now[name] = p
		}
		afresh := newRollout(fakeClient(), 7, gens, deps, slices.Collect(maps.Values(now)))
		if got, want := r.summary(), afresh.summary(); got != want {
			t.Fatalf("after change %d: summary\n %q\nwant\n %q", i, got, want)
		}
	}
}

// After the list, a pod's change is what is diagnosed: a new unit that
// fails is reported as soon as its event arrives, and the progress line
// follows each change.
func TestRolloutWaitPerEvent(t *testing.T) {
	c := fakeClient(dep("web", 2, 2, done(2, 1)), pod("o1", "web", "6", true), pod("o2", "web", "6", true))
	lines := make(chan string, 16)
	r := &Watch{Client: c, Namespace: ns, App: "shop", Release: 7,
		Generations: map[string]int64{"shop-web": 2}, Idle: time.Minute, Progress: chanProgress(lines)}
	errc := make(chan error, 1)
	go func() { errc <- r.Wait(context.Background()) }()
	next := func(want string) {
		t.Helper()
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("progress line %q, want %q", l, want)
			}
		case err := <-errc:
			t.Fatalf("wait returned %v, want progress %q", err, want)
		case <-time.After(10 * time.Second):
			t.Fatalf("no progress line %q", want)
		}
	}
	ctx := context.Background()
	pods := c.CoreV1().Pods(ns)
	next("web: 0 of 2 new units ready, 2 old units running")
	if _, err := pods.Create(ctx, pod("n1", "web", "7", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web: 1 of 2 new units ready, 2 old units running")
	if _, err := pods.Update(ctx, pod("o1", "web", "6", true, deleting), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web: 1 of 2 new units ready, 1 old unit running, 1 old unit terminating")
	if err := pods.Delete(ctx, "o1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next("web: 1 of 2 new units ready, 1 old unit running")
	bad := pod("n2", "web", "7", false, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses[0].State = waiting("ErrImagePull", "not found")
	})
	if _, err := pods.Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		var f *Failure
		if !errors.As(err, &f) || f.Class != ClassImagePull || f.Unit != "n2" {
			t.Fatalf("wait = %v (%+v), want n2's image pull failure", err, f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failing unit did not end the wait")
	}
}

// BenchmarkRolloutPodEvent is the rollout's cost for one pod event, at a
// few sizes: it should not grow with the units.
func BenchmarkRolloutPodEvent(b *testing.B) {
	for _, n := range []int{20, 200, 2000} {
		b.Run(fmt.Sprintf("units=%d", n), func(b *testing.B) {
			var pods []*corev1.Pod
			for i := range n {
				pods = append(pods, pod(fmt.Sprintf("u%05d", i), "web", []string{"6", "7"}[i%2], i%3 == 0))
			}
			r := newRollout(fakeClient(), 7, map[string]int64{"shop-web": 2},
				[]*appsv1.Deployment{dep("web", int32(n), 2, appsv1.DeploymentStatus{})}, pods)
			ctx, now := context.Background(), time.Now()
			b.ResetTimer()
			for i := range b.N {
				p := pods[i%n]
				r.setPod(p, false)
				if done, err := r.checkChanged(ctx, p, now); done || err != nil {
					b.Fatal(done, err)
				}
				_ = r.summary()
			}
		})
	}
}

// Units that disagree on what they run (a tag moved mid-rollout on one node)
// record nothing: a redeploy runs the tag, as before.
func TestRolloutImageIDDisagreement(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	b := "sha256:" + strings.Repeat("b", 64)
	r := &Watch{Release: 2, pods: map[string]*corev1.Pod{
		"x": imagePod("x", "2", "r/s@"+a), "y": imagePod("y", "2", "r/s@"+b), "old": imagePod("old", "1", "r/s@"+b),
	}}
	if got := imageIDOf(r.pods, r.Release); got != "" {
		t.Errorf("imageID = %q, want none", got)
	}
	delete(r.pods, "y")
	if got := r.ImageID(context.Background()); got != "r/s@"+a {
		t.Errorf("imageID = %q, want the new release's", got)
	}
}

// A watch that ended on the Deployment's status before it saw its units
// report what they run reads them once more.
func TestRolloutImageIDReadsTheUnitsWhenTheWatchSawNone(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	p := imagePod("x", "2", "r/s@"+a)
	p.Namespace = "dev"
	p.Labels[kube.LabelApp], p.Labels[kube.LabelManagedBy] = "shop", kube.ManagedBy
	seen := p.DeepCopy()
	seen.Status.ContainerStatuses = nil // as the watch last saw it
	r := &Watch{Client: fake.NewClientset(p), Namespace: "dev", App: "shop", Release: 2, pods: map[string]*corev1.Pod{"x": seen}}
	if got := r.ImageID(context.Background()); got != "r/s@"+a {
		t.Errorf("imageID = %q, want what the unit reports now", got)
	}
}

// A unit whose readiness probe has failed failureThreshold times is
// reported at once, with the probe's output, not after the 3x grace; fewer
// failures, or failures from before the container started, wait.
func TestRolloutReportsReadinessFailuresByTheProbesThreshold(t *testing.T) {
	now := time.Now()
	start := now.Add(-10 * time.Second) // past 2 s x 3, within the 18 s grace
	ev := func(count int32, at time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "u1"}, Reason: "Unhealthy",
			Message: "Readiness probe failed: dial tcp 10.0.0.9:8080: connect: connection refused", Count: count,
			LastTimestamp: metav1.NewTime(at)}
	}
	// the user's check (an HTTP path); tug's own TCP check of a web unit
	// gets its 18 s grace (a slow-booting app is not failed at 6 s)
	users := func(p *corev1.Pod) {
		withProbe(2, 3, 0)(p)
		p.Spec.Containers[0].ReadinessProbe.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}
	}
	tests := []struct {
		name    string
		event   *corev1.Event
		probe   func(*corev1.Pod)
		started time.Time
		failed  bool
	}{
		{"threshold reached", ev(3, now.Add(-time.Second)), users, start, true},
		{"below the threshold", ev(2, now.Add(-time.Second)), users, start, false},
		{"before the container started", ev(5, start.Add(-time.Minute)), users, start, false},
		{"tug's own check within its grace", ev(5, now.Add(-time.Second)), withProbe(2, 3, 0), start, false},
		{"tug's own check past its grace", ev(9, now.Add(-time.Second)), withProbe(2, 3, 0), now.Add(-20 * time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod("u1", "web", "7", false, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = running(tt.started)
			}, tt.probe)
			r := newRollout(fakeClient(tt.event), 7, map[string]int64{"shop-web": 1}, []*appsv1.Deployment{dep("web", 1, 1, appsv1.DeploymentStatus{})}, []*corev1.Pod{p})
			done, err := r.check(context.Background(), now)
			if !tt.failed {
				if done || err != nil {
					t.Fatalf("check = %v, %v; want to wait", done, err)
				}
				return
			}
			var f *Failure
			if !errors.As(err, &f) || f.Class != ClassUnready || f.ExitCode() != 14 || f.Unit != "u1" || f.Process != "web" {
				t.Fatalf("check = %v, want unready", err)
			}
			if tt.started != start { // past tug's grace: its rule's message, with the probe's output
				if !strings.Contains(f.Message, "Readiness probe failed: dial tcp") {
					t.Errorf("message = %q, want the probe's last output", f.Message)
				}
				return
			}
			want := "web is not ready: its readiness check failed " + fmt.Sprint(tt.event.Count) + " times (failure threshold 3): Readiness probe failed: dial tcp 10.0.0.9:8080: connect: connection refused; a unit that only starts slowly needs a startup check or an initial delay ('tug app healthcheck set shop -p web --startup CHECK' or '--initial-delay SECONDS')"
			if f.Message != want {
				t.Errorf("message = %q, want %q", f.Message, want)
			}
		})
	}
}
