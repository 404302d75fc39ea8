package deploy

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// Progress is where the rollout says what it is waiting for; cli.Progress
// satisfies it.
type Progress interface {
	Update(msg string)
}

type noProgress struct{}

func (noProgress) Update(string) {}

// rollout is one wait for a release's Deployments to finish rolling out.
type rollout struct {
	client    kubernetes.Interface
	namespace string
	app       string
	release   int
	// generation of each Deployment as applied; a status older than that
	// describes the previous spec.
	generations map[string]int64
	idle        time.Duration // fail when nothing changes for this long
	progress    Progress

	deployments map[string]*appsv1.Deployment
	pods        map[string]*corev1.Pod
	lastLine    string
}

// wait watches the app's Deployments and pods (one LIST and one WATCH each)
// until every Deployment has rolled out, a unit of the new release fails in a
// way waiting will not fix, or nothing has changed for r.idle.
func (r *rollout) wait(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: kube.AppSelector(r.app)}
	deps := r.client.AppsV1().Deployments(r.namespace)
	pods := r.client.CoreV1().Pods(r.namespace)

	events := make(chan watch.Event, 64)
	errs := make(chan error, 2)
	r.deployments = map[string]*appsv1.Deployment{}
	r.pods = map[string]*corev1.Pod{}

	dl, err := deps.List(ctx, sel)
	if err != nil {
		return kube.TranslateError(err)
	}
	for i := range dl.Items {
		r.deployments[dl.Items[i].Name] = &dl.Items[i]
	}
	pl, err := pods.List(ctx, sel)
	if err != nil {
		return kube.TranslateError(err)
	}
	for i := range pl.Items {
		r.pods[pl.Items[i].Name] = &pl.Items[i]
	}
	go pump(ctx, events, errs, dl.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) { return deps.Watch(ctx, o) }, sel)
	go pump(ctx, events, errs, pl.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) }, sel)

	// Time-based rules (a unit unschedulable or unready for too long) need a
	// look now and then even when no event arrives.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	idle := time.NewTimer(r.idle)
	defer idle.Stop()
	for {
		if done, err := r.check(ctx, time.Now()); done || err != nil {
			return err
		}
		if line := r.summary(); line != r.lastLine {
			r.lastLine = line
			r.progress.Update(line)
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(r.idle)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			return kube.TranslateError(err)
		case ev := <-events:
			r.apply(ev)
		case <-tick.C:
		case <-idle.C:
			return &Failure{Class: ClassTimeout, Reason: "Timeout",
				Message: fmt.Sprintf("no progress for %s: %s", r.idle, r.lastLine)}
		}
	}
}

// pump feeds one watch's events into out, resuming from the last seen
// resourceVersion when the server closes the watch (it does, routinely).
func pump(ctx context.Context, out chan<- watch.Event, errs chan<- error, rv string, start func(metav1.ListOptions) (watch.Interface, error), sel metav1.ListOptions) {
	for ctx.Err() == nil {
		opts := sel
		opts.ResourceVersion = rv
		opts.AllowWatchBookmarks = true
		w, err := start(opts)
		if err != nil {
			if ctx.Err() == nil {
				errs <- err
			}
			return
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				w.Stop()
				if ctx.Err() == nil {
					errs <- fmt.Errorf("watch failed: %v", ev.Object)
				}
				return
			}
			if m, ok := ev.Object.(metav1.Object); ok {
				rv = m.GetResourceVersion()
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				w.Stop()
				return
			}
		}
	}
}

func (r *rollout) apply(ev watch.Event) {
	switch o := ev.Object.(type) {
	case *appsv1.Deployment:
		if ev.Type == watch.Deleted {
			delete(r.deployments, o.Name)
		} else {
			r.deployments[o.Name] = o
		}
	case *corev1.Pod:
		if ev.Type == watch.Deleted {
			delete(r.pods, o.Name)
		} else {
			r.pods[o.Name] = o
		}
	case runtime.Object:
	}
}

// check reports done when every Deployment has rolled out, or the failure
// of a unit of the new release.
func (r *rollout) check(ctx context.Context, now time.Time) (bool, error) {
	for _, p := range r.sortedPods() {
		if p.Labels[kube.LabelRelease] != strconv.Itoa(r.release) || p.DeletionTimestamp != nil || p.Labels[kube.LabelKind] == "run" {
			continue
		}
		if f := diagnosePod(p, now); f != nil {
			r.explain(ctx, p, f)
			return true, f
		}
	}
	for name, gen := range r.generations {
		d, ok := r.deployments[name]
		if !ok {
			return false, nil
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" && d.Status.ObservedGeneration >= gen {
				return true, &Failure{Class: ClassTimeout, Process: d.Labels[kube.LabelProcess], Reason: c.Reason, Message: text.Excerpt(c.Message)}
			}
		}
		if !rolledOut(d, gen) {
			return false, nil
		}
	}
	return true, nil
}

// rolledOut is kubectl rollout status's rule: the controller has seen this
// spec, every unit runs it, none of the old ones remain, all are available.
func rolledOut(d *appsv1.Deployment, gen int64) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= gen && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

// explain adds what the unit itself says: the last log lines of a crash,
// the probe's message for a unit that never gets ready.
func (r *rollout) explain(ctx context.Context, p *corev1.Pod, f *Failure) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch f.Class {
	case ClassCrash:
		f.Logs = r.lastLogs(ctx, p)
	case ClassUnready:
		if msg := r.lastEvent(ctx, p, "Unhealthy"); msg != "" {
			f.Message += ": " + text.Excerpt(msg)
		}
	}
}

const crashLogLines = 20

func (r *rollout) lastLogs(ctx context.Context, p *corev1.Pod) []string {
	var restarts int32
	for _, c := range p.Status.ContainerStatuses {
		restarts += c.RestartCount
	}
	tail := int64(crashLogLines)
	for _, previous := range []bool{restarts > 0, false} {
		b, err := r.client.CoreV1().Pods(r.namespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous, TailLines: &tail}).DoRaw(ctx)
		if err == nil && len(b) > 0 && !kubeletLogError(string(b)) {
			return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		}
	}
	return nil
}

// kubeletLogError recognises the kubelet's answer when a container's log is
// already gone (it comes with status 200, as the log's body): the previous
// container of a crash loop is garbage-collected as soon as the current one
// exits too.
func kubeletLogError(body string) bool {
	return !strings.Contains(strings.TrimRight(body, "\n"), "\n") &&
		(strings.HasPrefix(body, "unable to retrieve container logs for ") || strings.HasPrefix(body, "failed to try resolving symlinks"))
}

func (r *rollout) lastEvent(ctx context.Context, p *corev1.Pod, reason string) string {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": p.Name, "reason": reason}.AsSelector().String()
	evs, err := r.client.CoreV1().Events(r.namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	sort.Slice(evs.Items, func(i, j int) bool { return eventTime(evs.Items[i]).Before(eventTime(evs.Items[j])) })
	return evs.Items[len(evs.Items)-1].Message
}

func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

func (r *rollout) sortedPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(r.pods))
	for _, p := range r.pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// summary is the progress line: per process, new units ready out of wanted,
// and old units still running or terminating.
func (r *rollout) summary() string {
	type count struct{ want, ready, old, terminating int }
	counts := map[string]*count{}
	var procs []string
	for name := range r.generations {
		d := r.deployments[name]
		if d == nil {
			continue
		}
		proc := d.Labels[kube.LabelProcess]
		c := &count{want: 1}
		if d.Spec.Replicas != nil {
			c.want = int(*d.Spec.Replicas)
		}
		counts[proc] = c
		procs = append(procs, proc)
	}
	for _, p := range r.pods {
		c := counts[p.Labels[kube.LabelProcess]]
		if c == nil || p.Labels[kube.LabelKind] == "run" {
			continue
		}
		switch {
		case p.Labels[kube.LabelRelease] != strconv.Itoa(r.release):
			if p.DeletionTimestamp != nil {
				c.terminating++
			} else {
				c.old++
			}
		case p.DeletionTimestamp == nil && kube.PodReady(p):
			c.ready++
		}
	}
	sortProcs(procs)
	parts := make([]string, 0, len(procs))
	for _, proc := range procs {
		c := counts[proc]
		s := fmt.Sprintf("%s: %d of %d new %s ready", proc, c.ready, c.want, text.Plural(c.want, "unit", "units"))
		if c.old > 0 {
			s += fmt.Sprintf(", %d old %s running", c.old, text.Plural(c.old, "unit", "units"))
		}
		if c.terminating > 0 {
			s += fmt.Sprintf(", %d old %s terminating", c.terminating, text.Plural(c.terminating, "unit", "units"))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
