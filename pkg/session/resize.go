package session

import (
	"sync"

	"k8s.io/client-go/tools/remotecommand"
)

// SizeQueue hands terminal sizes to a session (remotecommand's
// TerminalSizeQueue). Whoever reports sizes never waits: when the session
// has not taken the previous size yet, the newer one replaces it, since only
// the latest size matters. Stop makes Next return nil, which ends the
// session's resize loop.
type SizeQueue struct {
	ch   chan remotecommand.TerminalSize
	done chan struct{}
	once sync.Once
}

// NewSizeQueue returns a queue primed with initial sizes (at most 4).
func NewSizeQueue(initial ...remotecommand.TerminalSize) *SizeQueue {
	q := &SizeQueue{ch: make(chan remotecommand.TerminalSize, 4), done: make(chan struct{})}
	for _, s := range initial {
		q.Push(s)
	}
	return q
}

// Push queues a size without blocking, dropping the oldest queued size
// when the queue is full.
func (q *SizeQueue) Push(s remotecommand.TerminalSize) {
	if s.Width == 0 || s.Height == 0 {
		return // not a size a terminal can have; the remote side would reject it
	}
	for {
		select {
		case q.ch <- s:
			return
		default:
		}
		select {
		case <-q.ch:
		default:
		}
	}
}

// Next blocks until there is a size to send, or returns nil once the queue
// is stopped.
func (q *SizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case <-q.done:
		return nil
	default:
	}
	select {
	case s := <-q.ch:
		return &s
	case <-q.done:
		return nil
	}
}

// Stop ends the queue; it is safe to call more than once.
func (q *SizeQueue) Stop() { q.once.Do(func() { close(q.done) }) }

// Done is closed when the queue is stopped.
func (q *SizeQueue) Done() <-chan struct{} { return q.done }

// follow pushes size() each time changed delivers, until the queue stops.
// Sizes that did not change are not sent again.
func (q *SizeQueue) follow(changed <-chan struct{}, size func() (remotecommand.TerminalSize, bool), last remotecommand.TerminalSize) {
	for {
		select {
		case <-q.done:
			return
		case <-changed:
			s, ok := size()
			if !ok || s == last {
				continue
			}
			last = s
			q.Push(s)
		}
	}
}
