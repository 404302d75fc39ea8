package logs

import (
	"container/heap"
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// showBacklog prints the lines the units have now (as --tail, --since and
// --previous select them), fetched from every unit at once and merged in
// time order: each unit's lines are in order already, so the merge only
// ever compares the next line of each. It returns the time of each unit's
// last line, where following picks up, and how many units failed.
func showBacklog(ctx context.Context, d Deps, o Options, out *printer, pods []*corev1.Pod) (last map[string]time.Time, failed int) {
	last = map[string]time.Time{}
	if len(pods) == 0 {
		return last, 0
	}
	srcs := make([]*source, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		s := &source{unit: p.Name, lines: make(chan line, 256)}
		srcs[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.fetch(ctx, d, o, p)
		}()
	}
	h := &heads{}
	for i, s := range srcs {
		if l, ok := <-s.lines; ok {
			heap.Push(h, head{l: l, src: i})
		}
	}
	for h.Len() > 0 {
		top := heap.Pop(h).(head)
		s := srcs[top.src]
		if kubeletLogError(top.l) {
			s.gone = errGone(top.l)
		} else {
			out.print(top.l)
			if !top.l.ts.IsZero() {
				last[s.unit] = top.l.ts
			}
		}
		if l, ok := <-s.lines; ok {
			heap.Push(h, head{l: l, src: top.src})
		}
	}
	wg.Wait()
	for _, s := range srcs {
		err := s.err
		if err == nil {
			err = s.gone
		}
		if err != nil && !isCanceled(ctx, err) {
			failed++
			out.note(s.unit, "error: "+text.OneLine(kube.TranslateError(err).Error()))
		}
	}
	return last, failed
}

type source struct {
	unit  string
	lines chan line
	err   error // set by the reading goroutine before it closes lines
	gone  error // set by the merge: the kubelet says the log is gone
}

// fetch reads unit p's log into s.lines, one line at a time as the merge
// takes them, and closes s.lines at its end; s.err is why it ended early.
func (s *source) fetch(ctx context.Context, d Deps, o Options, p *corev1.Pod) {
	defer close(s.lines)
	rc, err := d.Client.CoreV1().Pods(d.Namespace).GetLogs(p.Name, logOptions(o, p)).Stream(ctx)
	if err != nil {
		s.err = err
		return
	}
	defer rc.Close()
	s.err = readLines(rc, p.Name, func(l line) bool {
		select {
		case s.lines <- l:
			return true
		case <-ctx.Done():
			return false
		}
	})
}

type head struct {
	l   line
	src int
}

// heads is a min-heap of each source's next line, by time, then unit.
type heads []head

func (h heads) Len() int { return len(h) }
func (h heads) Less(i, j int) bool {
	if !h[i].l.ts.Equal(h[j].l.ts) {
		return h[i].l.ts.Before(h[j].l.ts)
	}
	return h[i].src < h[j].src
}
func (h heads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heads) Push(x any)   { *h = append(*h, x.(head)) }
func (h *heads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type goneError string

func (e goneError) Error() string { return string(e) }

func errGone(l line) error { return goneError(string(trimNL(l.raw))) }

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
