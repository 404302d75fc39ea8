// Package progress is how library packages report long work (a rollout, a
// drain, a build) without knowing who shows it: cli's spinner on a
// terminal, plain lines in a log, or nothing in a Go program using tug as a
// library. Reporter is the one progress interface: every pkg function that
// reports takes one (a nil one reports nothing), and pkg/cli's spinner and
// line writer implement it.
package progress

// Reporter shows the step in progress and how each one ended.
type Reporter interface {
	Update(msg string) // what is being done now
	Done(msg string)   // the step succeeded
	Fail(msg string)   // the step failed
}

// Nop reports nothing: the default when a caller passes no Reporter.
type Nop struct{}

func (Nop) Update(string) {}
func (Nop) Done(string)   {}
func (Nop) Fail(string)   {}
