package logs

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// follower follows every selected unit's log, and, through a watch on the
// app's pods, the units that start later and the containers that restart.
// A stream ends when its container does; a unit that is gone is let go.
type follower struct {
	d   Deps
	o   Options
	out *printer
	app string
	rv  string // of the pod list Show made

	pods    map[string]*corev1.Pod // latest state of the app's pods
	streams map[string]*stream
	ended   chan streamEnd
	wg      sync.WaitGroup
}

// stream is one unit's log stream, as the follower knows it.
type stream struct {
	instance int32     // the container's restart count when the stream opened
	active   bool      // a stream is open
	last     time.Time // of the last line printed
	retries  int       // reopened after errors, for this instance
}

type streamEnd struct {
	unit     string
	instance int32
	last     time.Time
	err      error
}

// maxRetries bounds how often a stream that fails (not one whose container
// ended) is reopened.
const maxRetries = 5

func (f *follower) run(ctx context.Context, initial []*corev1.Pod, last map[string]time.Time) error {
	f.pods = map[string]*corev1.Pod{}
	f.streams = map[string]*stream{}
	f.ended = make(chan streamEnd)
	defer f.wg.Wait()

	for _, p := range initial {
		f.pods[p.Name] = p
		cs := status(p)
		if notStarted(p, false) != "" {
			continue // started later: reconcile opens it from its first line
		}
		st := &stream{instance: cs.RestartCount, last: last[p.Name]}
		f.streams[p.Name] = st
		opts := &corev1.PodLogOptions{Container: kube.ProcessContainer(p), Follow: true, Timestamps: true}
		if st.last.IsZero() {
			// The backlog showed nothing: keep to what was asked for.
			if o := logOptions(f.o, p); o.SinceSeconds != nil || o.SinceTime != nil {
				opts.SinceSeconds, opts.SinceTime = o.SinceSeconds, o.SinceTime
			}
			if f.o.Tail == 0 {
				zero := int64(0)
				opts.TailLines = &zero
			}
		} else {
			f.resumeFrom(opts, st.last)
		}
		f.start(ctx, p, st, opts)
	}

	events := make(chan watch.Event)
	errs := make(chan error, 1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.watch(ctx, events, errs)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return kube.TranslateError(err)
		case ev := <-events:
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(f.pods, p.Name)
				if st := f.streams[p.Name]; st != nil && !st.active {
					delete(f.streams, p.Name)
				}
				continue
			}
			f.pods[p.Name] = p
			f.reconcile(ctx, p)
		case e := <-f.ended:
			f.onEnd(ctx, e)
		}
	}
}

// resumeFrom makes opts start at t: the API takes whole seconds, so lines
// up to t are skipped when read (see start).
func (f *follower) resumeFrom(opts *corev1.PodLogOptions, t time.Time) {
	since := metav1.NewTime(t)
	opts.SinceTime = &since
	opts.TailLines, opts.SinceSeconds = nil, nil
}

// reconcile opens a stream for a unit whose container has started and is
// not being followed: a new unit, or a new container after a restart, from
// its first line.
func (f *follower) reconcile(ctx context.Context, p *corev1.Pod) {
	if !f.o.selects(p) || notStarted(p, false) != "" {
		return
	}
	cs := status(p)
	st := f.streams[p.Name]
	switch {
	case st == nil:
		st = &stream{instance: cs.RestartCount}
		f.streams[p.Name] = st
	case !st.active && cs.RestartCount > st.instance:
		st.instance, st.last, st.retries = cs.RestartCount, time.Time{}, 0
	default:
		return
	}
	f.out.width(p.Name)
	f.start(ctx, p, st, &corev1.PodLogOptions{Container: kube.ProcessContainer(p), Follow: true, Timestamps: true})
}

func (f *follower) onEnd(ctx context.Context, e streamEnd) {
	st := f.streams[e.unit]
	if st == nil {
		return
	}
	st.active = false
	if !e.last.IsZero() {
		st.last = e.last
	}
	p, exists := f.pods[e.unit]
	if !exists {
		delete(f.streams, e.unit) // the unit is gone: let go of it
		return
	}
	if e.err != nil && !isCanceled(ctx, e.err) && e.instance == st.instance {
		if st.retries >= maxRetries {
			f.out.note(e.unit, "error: stopped following: "+text.OneLine(kube.TranslateError(e.err).Error()))
			return
		}
		st.retries++
		opts := &corev1.PodLogOptions{Container: kube.ProcessContainer(p), Follow: true, Timestamps: true}
		if !st.last.IsZero() {
			f.resumeFrom(opts, st.last)
		}
		f.start(ctx, p, st, opts)
		return
	}
	f.reconcile(ctx, p)
}

// start opens one follow stream in the background; its end comes back on
// f.ended.
func (f *follower) start(ctx context.Context, p *corev1.Pod, st *stream, opts *corev1.PodLogOptions) {
	st.active = true
	unit, instance, skipUntil := p.Name, st.instance, time.Time{}
	if opts.SinceTime != nil {
		skipUntil = st.last
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		last := time.Time{}
		rc, err := f.d.Client.CoreV1().Pods(f.d.Namespace).GetLogs(unit, opts).Stream(ctx)
		if err == nil {
			err = readLines(rc, unit, func(l line) bool {
				if !skipUntil.IsZero() && !l.ts.IsZero() && !l.ts.After(skipUntil) {
					return true // printed before this stream opened
				}
				if kubeletLogError(l) {
					return true
				}
				last = l.ts
				f.out.print(l)
				return true
			})
			rc.Close()
		}
		select {
		case f.ended <- streamEnd{unit: unit, instance: instance, last: last, err: err}:
		case <-ctx.Done():
		}
	}()
}

// watch feeds the app's pod events to events, resuming from the last
// resourceVersion when the server ends the watch and listing again (with
// the differences sent as events) when that version is too old.
func (f *follower) watch(ctx context.Context, events chan<- watch.Event, errs chan<- error) {
	pods := f.d.Client.CoreV1().Pods(f.d.Namespace)
	sel := kube.AppSelector(f.app)
	rv := f.rv
	known := map[string]bool{}
	for name := range f.pods {
		known[name] = true
	}
	send := func(ev watch.Event) bool {
		select {
		case events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		if rv == "" {
			list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				if ctx.Err() == nil {
					errs <- err
				}
				return
			}
			seen := map[string]bool{}
			for i := range list.Items {
				p := &list.Items[i]
				seen[p.Name] = true
				if !send(watch.Event{Type: watch.Modified, Object: p}) {
					return
				}
			}
			for name := range known {
				if !seen[name] {
					gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.d.Namespace}}
					if !send(watch.Event{Type: watch.Deleted, Object: gone}) {
						return
					}
				}
			}
			known, rv = seen, list.ResourceVersion
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				errs <- err
			}
			return
		}
		f.drain(ctx, w, &rv, known, send)
		w.Stop()
	}
}

// drain passes one watch's events on until it ends, noting the last
// resourceVersion (rv becomes "" when the watch fails: list again).
func (f *follower) drain(ctx context.Context, w watch.Interface, rv *string, known map[string]bool, send func(watch.Event) bool) {
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.ResultChan():
			if !ok {
				return
			}
			ev = e
		}
		if ev.Type == watch.Error {
			*rv = "" // too old (410 Gone) or failing: list again
			return
		}
		if m, ok := ev.Object.(metav1.Object); ok {
			*rv = m.GetResourceVersion()
			if ev.Type == watch.Deleted {
				delete(known, m.GetName())
			} else if ev.Type != watch.Bookmark {
				known[m.GetName()] = true
			}
		}
		if ev.Type == watch.Bookmark {
			continue
		}
		if !send(ev) {
			return
		}
	}
}
