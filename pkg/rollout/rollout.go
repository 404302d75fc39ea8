// Package rollout waits for a release's Deployments to roll out, and says
// why they did not: a Watch follows the app's Deployments and units (one
// list and watch of each) until every Deployment has rolled out, or ends
// with a *Failure whose Class (image-pull, crash, config, unschedulable,
// unready, timeout) has its own exit code (docs/exit-codes.md), diagnosed
// from the units themselves (the last log lines of a crash, a probe's
// message). StartFailure is the part of that diagnosis that applies to any
// pod: one-off runs, release phases and builds use it too. pkg/deploy
// waits through it after every apply.
package rollout

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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/text"
)

// Watch is one wait for a release's Deployments to finish rolling out:
// Wait watches them and the release's units until they run, or fail in a
// way that waiting will not fix (a *Failure says how and why), or make no
// progress for Idle.
type Watch struct {
	Client    kubernetes.Interface
	Namespace string
	App       string
	Release   int
	// Generations are each Deployment's generation as applied; a status
	// older than that describes the previous spec.
	Generations map[string]int64
	Idle        time.Duration // fail when nothing changes for this long
	Progress    progress.Reporter
	// CountsOnly waits for the Deployments alone, diagnosing no unit: for
	// putting back fewer units, when the failed extra ones are still on
	// their way out.
	CountsOnly bool
	// Purpose names the units in the progress line.
	Purpose Purpose

	deployments map[string]*appsv1.Deployment
	pods        map[string]*corev1.Pod // by name
	// What each pod counts as in the progress line, and the counts per
	// process, kept as pods change so an event costs the same at 10 units
	// as at 10,000.
	counted  map[string]unitKind
	counts   map[string]*unitCount
	lastLine string
	// probeLooks is when each unit's container may next have its readiness
	// events read.
	probeLooks map[string]time.Time
}

// Wait watches the app's Deployments and pods (one LIST and one WATCH each,
// resumed or listed again as kube.Until does) until every Deployment has
// rolled out, a unit of the new release fails in a way waiting will not fix,
// or nothing has changed for r.Idle.
//
// A pod's change diagnoses that pod alone; every unit is looked at after a
// list and once a second, when the time-based rules (a unit unschedulable or
// unready for too long) may have come due with no event.
func (r *Watch) Wait(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: kube.AppSelector(r.App)}
	deps := make(chan map[string]*appsv1.Deployment)
	pods := make(chan kube.Change[*corev1.Pod])
	errs := make(chan error, 2)
	go func() { errs <- kube.Until(ctx, kube.Deployments(r.Client, r.Namespace, sel), forward(ctx, deps)) }()
	go func() {
		errs <- kube.UntilChange(ctx, kube.Pods(r.Client, r.Namespace, sel), forwardChanges(ctx, pods))
	}()
	r.deployments, r.pods, r.probeLooks = nil, nil, nil

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	idle := time.NewTimer(r.Idle)
	defer idle.Stop()
	lookAtAll := true
	var changed *corev1.Pod
	for {
		// Both lists first, so the first look sees the whole picture.
		if r.deployments != nil && r.pods != nil {
			done, err := r.look(ctx, lookAtAll, changed, idle)
			lookAtAll = false
			if done || err != nil {
				return err
			}
		}
		changed = nil
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return kube.TranslateError(err)
		case r.deployments = <-deps:
		case c := <-pods:
			if c.Listed {
				r.setPods(c.Objects)
				lookAtAll = true
				break
			}
			r.setPod(c.Object, c.Type == watch.Deleted)
			if c.Type != watch.Deleted {
				changed = c.Object
			}
		case <-tick.C:
			lookAtAll = true
		case <-idle.C:
			return &Failure{Class: ClassTimeout, Reason: "Timeout",
				Message: fmt.Sprintf("no progress for %s: %s", r.Idle, r.lastLine)}
		}
	}
}

// look judges the rollout once: every unit (all, after a list or a tick)
// or only the pod that changed. A new summary line is progress, so it
// goes to the reporter and restarts the idle timer.
func (r *Watch) look(ctx context.Context, all bool, changed *corev1.Pod, idle *time.Timer) (bool, error) {
	var done bool
	var err error
	if all {
		done, err = r.check(ctx, time.Now())
	} else {
		done, err = r.checkChanged(ctx, changed, time.Now())
	}
	if done || err != nil {
		return done, err
	}
	if line := r.summary(); line != r.lastLine {
		r.lastLine = line
		r.Progress.Update(line)
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		idle.Reset(r.Idle)
	}
	return false, nil
}

// forward is a kube.Until condition that never ends the watch: it hands
// each new state, keyed by name, to the rollout's loop.
func forward[T kube.Object](ctx context.Context, out chan<- map[string]T) func(map[string]T) (bool, error) {
	return func(objs map[string]T) (bool, error) {
		select {
		case out <- keyedByName(objs):
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// forwardChanges is a kube.UntilChange condition that never ends the watch:
// it hands each change to the rollout's loop, with the whole set (keyed by
// name, a copy: the watch goes on changing its own) only after a list.
// Resync ticks are not forwarded; the loop has its own.
func forwardChanges[T kube.Object](ctx context.Context, out chan<- kube.Change[T]) func(kube.Change[T]) (bool, error) {
	return func(c kube.Change[T]) (bool, error) {
		if !c.Listed && c.Type == "" {
			return false, nil
		}
		all := c.Objects
		c.Objects = nil
		if c.Listed {
			c.Objects = keyedByName(all)
		}
		select {
		case out <- c:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

func keyedByName[T kube.Object](objs map[string]T) map[string]T {
	out := make(map[string]T, len(objs))
	for _, o := range objs {
		out[o.GetName()] = o
	}
	return out
}

// check reports done when every Deployment has rolled out, or the failure
// of a unit of the new release, looking at every unit (in name order, so
// the same state always names the same unit).
func (r *Watch) check(ctx context.Context, now time.Time) (bool, error) {
	for _, p := range r.sortedPods() {
		if done, err := r.checkUnit(ctx, p, now); done {
			return done, err
		}
	}
	return r.checkDeployments()
}

// checkChanged is check after one pod changed (nil: none did, only a
// Deployment): that unit alone can have newly failed.
func (r *Watch) checkChanged(ctx context.Context, p *corev1.Pod, now time.Time) (bool, error) {
	if p != nil {
		if done, err := r.checkUnit(ctx, p, now); done {
			return done, err
		}
	}
	return r.checkDeployments()
}

// checkUnit reports the failure of p when it is a unit of the new release
// that failed in a way waiting will not fix.
func (r *Watch) checkUnit(ctx context.Context, p *corev1.Pod, now time.Time) (bool, error) {
	if r.CountsOnly || p.Labels[kube.LabelRelease] != strconv.Itoa(r.Release) || p.DeletionTimestamp != nil || p.Labels[kube.LabelKind] == "run" {
		return false, nil
	}
	if f := diagnosePod(p, now); f != nil {
		r.explain(ctx, p, f)
		return true, f
	}
	if f := r.readinessFailed(ctx, p, now); f != nil {
		f.Process, f.Unit = p.Labels[kube.LabelProcess], p.Name
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		f.Logs = r.lastLogs(ctx, p)
		return true, f
	}
	return false, nil
}

// checkDeployments reports done when every Deployment has rolled out, and
// a Deployment's own verdict that it cannot.
func (r *Watch) checkDeployments() (bool, error) {
	for name, gen := range r.Generations {
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
// RolledOut reports whether Deployment d finished rolling out its spec
// (kubectl rollout status's rule).
func RolledOut(d *appsv1.Deployment) bool { return rolledOut(d, d.Generation) }

func rolledOut(d *appsv1.Deployment, gen int64) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= gen && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

// explain adds what the unit itself says: the last log lines of a crash or
// of a unit that never gets ready (why it does not listen is often there),
// and the probe's message for the latter.
func (r *Watch) explain(ctx context.Context, p *corev1.Pod, f *Failure) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch f.Class {
	case ClassCrash:
		f.Logs = r.lastLogs(ctx, p)
	case ClassUnready:
		if msg := r.lastEvent(ctx, p, "Unhealthy"); msg != "" {
			f.Message += ": " + text.Excerpt(msg)
		}
		f.Logs = r.lastLogs(ctx, p)
	}
}

const crashLogLines = 20

func (r *Watch) lastLogs(ctx context.Context, p *corev1.Pod) []string {
	var restarts int32
	for _, c := range p.Status.ContainerStatuses {
		restarts += c.RestartCount
	}
	tail := int64(crashLogLines)
	for _, previous := range []bool{restarts > 0, false} {
		b, err := r.Client.CoreV1().Pods(r.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous, TailLines: &tail}).DoRaw(ctx)
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

func (r *Watch) lastEvent(ctx context.Context, p *corev1.Pod, reason string) string {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": p.Name, "reason": reason}.AsSelector().String()
	evs, err := r.Client.CoreV1().Events(r.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
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

func (r *Watch) sortedPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(r.pods))
	for _, p := range r.pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// unitKind is what a pod counts as in the progress line.
type unitKind struct {
	process string
	state   unitState
}

type unitState int

const (
	uncounted  unitState = iota // a one-off run, or a new unit not ready yet
	newReady                    // of this release, ready
	oldRunning                  // of an earlier release
	oldTerminating
)

type unitCount struct{ ready, old, terminating int }

func (r *Watch) kindOf(p *corev1.Pod) unitKind {
	k := unitKind{process: p.Labels[kube.LabelProcess]}
	switch {
	case p.Labels[kube.LabelKind] == "run":
	case p.Labels[kube.LabelRelease] != strconv.Itoa(r.Release):
		k.state = oldRunning
		if p.DeletionTimestamp != nil {
			k.state = oldTerminating
		}
	case p.DeletionTimestamp == nil && kube.PodReady(p):
		k.state = newReady
	}
	return k
}

// setPods replaces every pod (after a list), keyed by name.
func (r *Watch) setPods(pods map[string]*corev1.Pod) {
	r.pods = make(map[string]*corev1.Pod, len(pods))
	r.counted = make(map[string]unitKind, len(pods))
	r.counts = map[string]*unitCount{}
	for _, p := range pods {
		r.setPod(p, false)
	}
}

// setPod records p's new state, or that it is gone, and moves it between
// the counts.
func (r *Watch) setPod(p *corev1.Pod, deleted bool) {
	if r.pods == nil {
		r.setPods(nil)
	}
	if old, ok := r.counted[p.Name]; ok {
		r.count(old, -1)
		delete(r.counted, p.Name)
	}
	if deleted {
		delete(r.pods, p.Name)
		return
	}
	r.pods[p.Name] = p
	k := r.kindOf(p)
	r.counted[p.Name] = k
	r.count(k, 1)
}

func (r *Watch) count(k unitKind, n int) {
	c := r.counts[k.process]
	if c == nil {
		c = &unitCount{}
		r.counts[k.process] = c
	}
	switch k.state {
	case newReady:
		c.ready += n
	case oldRunning:
		c.old += n
	case oldTerminating:
		c.terminating += n
	}
}

// Purpose is what a rollout is for, which says what its units are called:
// a deploy's are new and old; a scale's are the release's own units (none
// is new: scaling 1 -> 3 is not "1 of 3 new units ready"); a rollback
// after a failure restores units and replaces the failed release's.
type Purpose int

const (
	PurposeDeploy Purpose = iota
	PurposeScale
	PurposeRestore
)

// words are the adjectives for the release's units and the others.
func (p Purpose) words() (ours, others string) {
	switch p {
	case PurposeScale:
		return "", "old "
	case PurposeRestore:
		return "restored ", "failed "
	}
	return "new ", "old "
}

// summary is the progress line: per process, units of the release ready
// out of wanted, and other units still running or terminating.
func (r *Watch) summary() string {
	var procs []string
	want := map[string]int{}
	for name := range r.Generations {
		d := r.deployments[name]
		if d == nil {
			continue
		}
		proc := d.Labels[kube.LabelProcess]
		want[proc] = 1
		if d.Spec.Replicas != nil {
			want[proc] = int(*d.Spec.Replicas)
		}
		procs = append(procs, proc)
	}
	app.SortProcesses(procs)
	ours, others := r.Purpose.words()
	parts := make([]string, 0, len(procs))
	for _, proc := range procs {
		c := r.counts[proc]
		if c == nil {
			c = &unitCount{}
		}
		s := fmt.Sprintf("%s: %d of %d %s%s ready", proc, c.ready, want[proc], ours, text.Plural(want[proc], "unit", "units"))
		if c.old > 0 {
			s += fmt.Sprintf(", %d %s%s running", c.old, others, text.Plural(c.old, "unit", "units"))
		}
		if c.terminating > 0 {
			s += fmt.Sprintf(", %d %s%s terminating", c.terminating, others, text.Plural(c.terminating, "unit", "units"))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// ImageID is what the runtime reports the release's units run (their
// containers' status imageID, normalized by app.NormalizeImageID) when
// every unit that reports one agrees; "" otherwise. The watch may end on
// the Deployment's status before it has seen the units' latest state:
// when it knows none, the units are read once more.
func (r *Watch) ImageID(ctx context.Context) string {
	if id := imageIDOf(r.pods, r.Release); id != "" {
		return id
	}
	l, err := r.Client.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(r.App)})
	if err != nil {
		return ""
	}
	pods := map[string]*corev1.Pod{}
	for i := range l.Items {
		pods[l.Items[i].Name] = &l.Items[i]
	}
	return imageIDOf(pods, r.Release)
}

// imageIDOf is ImageID over pods.
func imageIDOf(pods map[string]*corev1.Pod, release int) string {
	id := ""
	for _, p := range pods {
		if p.Labels[kube.LabelRelease] != strconv.Itoa(release) || p.DeletionTimestamp != nil || p.Labels[kube.LabelKind] == "run" {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			got := app.NormalizeImageID(c.ImageID)
			switch {
			case got == "":
				continue
			case id == "":
				id = got
			case id != got:
				return ""
			}
		}
	}
	return id
}
