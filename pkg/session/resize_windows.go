//go:build windows

package session

import (
	"os"
	"time"
)

// pollInterval is how often the size is checked: Windows sends no signal
// on resize.
const pollInterval = 250 * time.Millisecond

// resizeEvents delivers a value every pollInterval: Windows consoles send no
// signal on resize, so the size is polled (follow skips unchanged sizes).
func resizeEvents(stop <-chan struct{}) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

var hangupSignals = []os.Signal{}
