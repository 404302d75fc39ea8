package logs

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

	changes := make(chan map[string]*corev1.Pod)
	errs := make(chan error, 1)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if err := f.watch(ctx, initial, changes); err != nil && ctx.Err() == nil {
			errs <- err
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return kube.TranslateError(err)
		case pods := <-changes:
			f.update(ctx, pods)
		case e := <-f.ended:
			f.onEnd(ctx, e)
		}
	}
}

// update takes in the app's pods as the watch now sees them: a unit that
// is gone is let go once its stream has ended, a new or changed one is
// reconciled.
func (f *follower) update(ctx context.Context, pods map[string]*corev1.Pod) {
	for name := range f.pods {
		if _, ok := pods[name]; !ok {
			delete(f.pods, name)
			if st := f.streams[name]; st != nil && !st.active {
				delete(f.streams, name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		if p := pods[name]; f.pods[name] != p {
			f.pods[name] = p
			f.reconcile(ctx, p)
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

// watch sends the app's pods, keyed by name, to out each time they change:
// from the pod list Show made (its pods and resourceVersion), then as
// kube.Until keeps them.
func (f *follower) watch(ctx context.Context, initial []*corev1.Pod, out chan<- map[string]*corev1.Pod) error {
	lw := kube.Pods(f.d.Client, f.d.Namespace, metav1.ListOptions{LabelSelector: kube.AppSelector(f.app)})
	list, listed := lw.List, true
	lw.List = func(ctx context.Context, opts metav1.ListOptions) ([]*corev1.Pod, string, error) {
		if listed { // by Show, just now
			listed = false
			return initial, f.rv, nil
		}
		return list(ctx, opts)
	}
	return kube.Until(ctx, lw, func(pods map[string]*corev1.Pod) (bool, error) {
		byName := make(map[string]*corev1.Pod, len(pods))
		for _, p := range pods {
			byName[p.Name] = p
		}
		select {
		case out <- byName:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	})
}
