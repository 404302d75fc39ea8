// Package events says what happened to an app: the Kubernetes Events of its
// objects (units, Deployments and ReplicaSets, the autoscaler, the Service
// and routes, one-off runs) merged with tug's own records (its releases)
// and what its units' status still tells (a crash's exit code, an OOM
// kill, an eviction), oldest first.
//
// Kubernetes keeps Events for an hour by default (the apiserver's
// --event-ttl) and a pod's status only its containers' last exit: older
// history is gone, which Expiry says for people.
package events

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// Event is one thing that happened. Its JSON shape is documented in
// docs/output.md.
type Event struct {
	Time time.Time `json:"time"`
	// Source is kubernetes (an Event) or tug (a release record, or what a
	// unit's status says).
	Source  string `json:"source"`
	Type    string `json:"type"`   // Normal or Warning
	Object  string `json:"object"` // Kind/name
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Count is how many times Kubernetes saw it (an Event's series).
	Count int32 `json:"count,omitempty"`
}

// Sources of events.
const (
	SourceKubernetes = "kubernetes"
	SourceTug        = "tug"
)

// Expiry says how long the history reaches back.
const Expiry = "Kubernetes keeps events for an hour by default (the API server's --event-ttl) and each unit's last exit only"

// Options select an app's events.
type Options struct {
	App string
	// Processes are the app's process types: their Deployments, ReplicaSets,
	// autoscalers and units are its objects.
	Processes []string
	// Since keeps only what happened in the last Since (0: everything kept).
	Since time.Duration
	// Others are the namespace's other apps whose names start with App's
	// and a dash ("shop-web" beside "shop"), with their process types:
	// their objects' names start like App's, and they are not App's.
	Others map[string][]string
}

// Owns reports whether an object named name is one of the app's: the app
// itself (its record, Service, routes), a process's Deployment or
// autoscaler (<app>-<process>), and what those make (<app>-<process>-...),
// one-off runs included.
func (o Options) Owns(name string) bool {
	if name == o.App {
		return true
	}
	for other, procs := range o.Others {
		if (Options{App: other, Processes: procs}).Owns(name) {
			return false
		}
	}
	for _, p := range append(o.Processes, app.RunProcess) {
		base := o.App + "-" + p
		if name == base || strings.HasPrefix(name, base+"-") {
			return true
		}
	}
	return false
}

// List is the app's events, oldest first: one LIST of the namespace's
// Events, one of its pods, and its release records (releases, already
// read by the caller).
func List(ctx context.Context, client kubernetes.Interface, namespace string, o Options, releases []*app.Release) ([]Event, error) {
	evs, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(o.App)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var out []Event
	for i := range evs.Items {
		if o.Owns(evs.Items[i].InvolvedObject.Name) {
			out = append(out, FromEvent(&evs.Items[i]))
		}
	}
	for i := range pods.Items {
		out = append(out, FromPod(&pods.Items[i])...)
	}
	for _, r := range releases {
		out = append(out, FromRelease(r))
	}
	return Sorted(Since(out, o.Since, time.Now())), nil
}

// FromEvent is a Kubernetes Event as one of ours, its text sanitized.
func FromEvent(e *corev1.Event) Event {
	count := e.Count
	if e.Series != nil {
		count = e.Series.Count
	}
	if count == 1 {
		count = 0
	}
	return Event{
		Time: eventTime(e), Source: SourceKubernetes, Type: clean(e.Type),
		Object: clean(e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name), Reason: clean(e.Reason),
		Message: clean(e.Message), Count: count,
	}
}

// eventTime is when an Event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// FromPod is what a unit's status still tells: each container's last exit
// (a crash's exit code, an OOM kill past the memory limit) and an eviction.
func FromPod(p *corev1.Pod) []Event {
	var out []Event
	obj := "Pod/" + p.Name
	for _, c := range p.Status.ContainerStatuses {
		for _, t := range []*corev1.ContainerStateTerminated{c.LastTerminationState.Terminated, c.State.Terminated} {
			if t == nil || (t.ExitCode == 0 && t.Reason != "OOMKilled") {
				continue
			}
			out = append(out, exitEvent(p, obj, c, t))
		}
	}
	if p.Status.Reason == "Evicted" {
		at := p.CreationTimestamp.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				at = c.LastTransitionTime.Time
			}
		}
		out = append(out, Event{Time: at, Source: SourceTug, Type: corev1.EventTypeWarning, Object: obj,
			Reason: "Evicted", Message: clean("unit " + p.Name + " evicted: " + p.Status.Message)})
	}
	return out
}

func exitEvent(p *corev1.Pod, obj string, c corev1.ContainerStatus, t *corev1.ContainerStateTerminated) Event {
	e := Event{Time: t.FinishedAt.Time, Source: SourceTug, Type: corev1.EventTypeWarning, Object: obj}
	if t.Reason == "OOMKilled" {
		e.Reason = "OOMKilled"
		e.Message = fmt.Sprintf("unit %s passed its memory limit%s and was killed (exit code %d)", p.Name, memoryLimit(p, c.Name), t.ExitCode)
	} else {
		e.Reason = "Crashed"
		e.Message = fmt.Sprintf("unit %s exited with code %d", p.Name, t.ExitCode)
		if t.Reason != "" && t.Reason != "Error" {
			e.Message += " (" + t.Reason + ")"
		}
	}
	if c.RestartCount > 0 {
		e.Message += fmt.Sprintf("; restarted %d %s", c.RestartCount, text.Plural(int(c.RestartCount), "time", "times"))
	}
	if e.Time.IsZero() {
		e.Time = t.StartedAt.Time
	}
	e.Message = clean(e.Message)
	return e
}

func memoryLimit(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == container {
			return " (" + q.String() + ")"
		}
	}
	return ""
}

// FromRelease is a release record: what made it, who, and how it ended.
func FromRelease(r *app.Release) Event {
	e := Event{Time: r.CreatedAt, Source: SourceTug, Type: corev1.EventTypeNormal,
		Object: fmt.Sprintf("Release/v%d", r.Version), Reason: "Release"}
	msg := fmt.Sprintf("v%d %s", r.Version, r.Kind)
	if r.Kind == "rollback" && r.RollbackOf > 0 {
		msg += fmt.Sprintf(" to v%d", r.RollbackOf)
	}
	if r.Author != "" {
		msg += " by " + r.Author
	}
	msg += ": " + string(r.Status)
	if r.FailReason != "" {
		msg += ": " + r.FailReason
		e.Type = corev1.EventTypeWarning
	}
	if r.Message != "" {
		msg += " (" + r.Message + ")"
	}
	e.Message = clean(msg)
	return e
}

// Since keeps the events of the last d before now (all with d 0).
func Since(evs []Event, d time.Duration, now time.Time) []Event {
	if d <= 0 {
		return evs
	}
	from := now.Add(-d)
	out := evs[:0]
	for _, e := range evs {
		if !e.Time.Before(from) {
			out = append(out, e)
		}
	}
	return out
}

// Sorted orders events oldest first (ties: by object, then reason).
func Sorted(evs []Event) []Event {
	if evs == nil {
		evs = []Event{}
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].Time.Equal(evs[j].Time) {
			return evs[i].Time.Before(evs[j].Time)
		}
		if evs[i].Object != evs[j].Object {
			return evs[i].Object < evs[j].Object
		}
		return evs[i].Reason < evs[j].Reason
	})
	return evs
}

// clean is cluster text made safe for a terminal and one line: anyone who
// can write the namespace writes Events.
func clean(s string) string { return text.OneLine(text.Sanitize(s)) }

// OthersLike are the apps among apps whose names begin with appName and a
// dash, with their process types: Options.Others.
func OthersLike(appName string, apps []*app.App) map[string][]string {
	out := map[string][]string{}
	for _, a := range apps {
		if strings.HasPrefix(a.Name, appName+"-") {
			out[a.Name] = a.ProcessNames()
		}
	}
	return out
}
