//go:build !windows

package session

import (
	"os"
	"os/signal"
	"syscall"
)

// resizeEvents delivers a value each time the terminal changes size
// (SIGWINCH), without ever blocking the signal handler, until stop is closed.
func resizeEvents(stop <-chan struct{}) <-chan struct{} {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	out := make(chan struct{}, 1)
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-stop:
				return
			case <-sig:
				select {
				case out <- struct{}{}:
				default: // one pending notice is enough: the size is read when it is taken
				}
			}
		}
	}()
	return out
}

// hangupSignals end a session like Ctrl-C does: the terminal went away
// (SIGHUP) or the user asked to quit (SIGQUIT). main handles SIGINT and
// SIGTERM.
var hangupSignals = []os.Signal{syscall.SIGHUP, syscall.SIGQUIT}
