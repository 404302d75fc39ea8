package session

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

func size(w, h uint16) remotecommand.TerminalSize {
	return remotecommand.TerminalSize{Width: w, Height: h}
}

func TestSizeQueuePushNeverBlocksAndKeepsTheLatest(t *testing.T) {
	q := NewSizeQueue(size(80, 24))
	done := make(chan struct{})
	go func() {
		// nobody reads: a blocking Push would hang here
		for i := uint16(1); i <= 100; i++ {
			q.Push(size(100+i, 50))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Push blocked with nobody reading")
	}
	var last *remotecommand.TerminalSize
	for len(q.ch) > 0 {
		last = q.Next()
	}
	if last == nil || *last != size(200, 50) {
		t.Fatalf("after a burst the last size must be the newest, got %v", last)
	}
}

func TestSizeQueueKeepsInitialSizesInOrder(t *testing.T) {
	q := NewSizeQueue(size(81, 25), size(80, 24))
	if s := q.Next(); *s != size(81, 25) {
		t.Fatalf("first %v", s)
	}
	if s := q.Next(); *s != size(80, 24) {
		t.Fatalf("second %v", s)
	}
}

func TestSizeQueueIgnoresZeroSizes(t *testing.T) {
	q := NewSizeQueue(size(0, 24), size(80, 0))
	if len(q.ch) != 0 {
		t.Fatalf("zero sizes were queued: %d", len(q.ch))
	}
}

func TestSizeQueueStopEndsNext(t *testing.T) {
	q := NewSizeQueue()
	got := make(chan *remotecommand.TerminalSize)
	go func() { got <- q.Next() }()
	q.Stop()
	q.Stop() // twice is fine
	select {
	case s := <-got:
		if s != nil {
			t.Fatalf("Next after Stop = %v, want nil", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after Stop")
	}
	q.Push(size(80, 24)) // after Stop: must not block or panic
	if s := q.Next(); s != nil {
		t.Fatalf("Next on a stopped queue = %v", s)
	}
}

func TestSizeQueueFollowSendsChangesAndEnds(t *testing.T) {
	q := NewSizeQueue()
	changed := make(chan struct{})
	sizes := make(chan remotecommand.TerminalSize, 1)
	current := func() (remotecommand.TerminalSize, bool) { return <-sizes, true }
	ended := make(chan struct{})
	go func() {
		q.follow(changed, current, size(80, 24))
		close(ended)
	}()
	// an unchanged size is not sent again; a new one is
	sizes <- size(80, 24)
	changed <- struct{}{}
	sizes <- size(132, 40)
	changed <- struct{}{}
	if s := q.Next(); s == nil || *s != size(132, 40) {
		t.Fatalf("after a resize Next = %v, want 132x40", s)
	}
	if len(q.ch) != 0 {
		t.Fatalf("the unchanged size was queued")
	}
	q.Stop()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end after Stop")
	}
}
