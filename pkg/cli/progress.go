package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/text"
)

// NewProgress is the progress.Reporter every pkg function reports to: a
// spinner when stderr is a terminal and timestamped lines otherwise (CI
// logs, files), where a spinner's carriage returns would be noise. It
// writes to stderr, so stdout stays clean for data (`-o json | jq`).
func NewProgress(ios *IOStreams) progress.Reporter {
	if ios.IsStderrTTY() {
		return &spinner{w: ios.ErrOut, width: ios.TerminalWidth(), colors: ios.ErrColors(), interval: 100 * time.Millisecond}
	}
	return &lineProgress{w: ios.ErrOut, now: time.Now}
}

// lineProgress writes "15:04:05 message" lines, skipping repeats. In a CI
// log nothing marks a line as good or bad the way a spinner's ✓ and ✗ do,
// so a failure line says "failed:" in words: a step's wording alone (what a
// command was doing) must never read as its success.
type lineProgress struct {
	w    io.Writer
	now  func() time.Time
	mu   sync.Mutex
	last string
}

func (p *lineProgress) write(msg string, force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if msg == "" || (msg == p.last && !force) {
		return
	}
	p.last = msg
	fmt.Fprintf(p.w, "%s %s\n", p.now().Format("15:04:05"), progressText(msg, false))
}

func (p *lineProgress) Update(msg string) { p.write(msg, false) }
func (p *lineProgress) Done(msg string)   { p.write(msg, false); p.reset() }
func (p *lineProgress) Fail(msg string)   { p.write(p.failLine(msg), true); p.reset() }
func (p *lineProgress) reset()            { p.mu.Lock(); p.last = ""; p.mu.Unlock() }

// failLine is msg marked as a failure; an empty msg repeats the step in
// progress, as the spinner does. A message that already ends in "failed"
// is left as it is.
func (p *lineProgress) failLine(msg string) string {
	if msg == "" {
		p.mu.Lock()
		msg = p.last
		p.mu.Unlock()
	}
	if msg == "" || strings.HasSuffix(msg, "failed") {
		return msg
	}
	return "failed: " + msg
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// spinner redraws one line of stderr in place from a small goroutine that
// runs only while a step is in progress.
type spinner struct {
	w        io.Writer
	width    int
	colors   Palette
	interval time.Duration

	mu      sync.Mutex
	msg     string
	frame   int
	stop    chan struct{} // nil when not spinning
	stopped chan struct{}
}

func (s *spinner) Update(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msg = progressText(msg, s.colors.enabled)
	s.drawLocked()
	if s.stop == nil {
		s.stop, s.stopped = make(chan struct{}), make(chan struct{})
		go s.spin(s.stop, s.stopped)
	}
}

func (s *spinner) spin(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.mu.Lock()
			s.frame = (s.frame + 1) % len(spinnerFrames)
			s.drawLocked()
			s.mu.Unlock()
		}
	}
}

// drawLocked rewrites the line; the message is cut to the terminal width
// because a wrapped line cannot be erased with a carriage return.
func (s *spinner) drawLocked() {
	fmt.Fprintf(s.w, "\r\x1b[K%s %s", spinnerFrames[s.frame], text.Truncate(s.msg, s.width-3))
}

func (s *spinner) finish(mark, msg string) {
	s.mu.Lock()
	stop, stopped := s.stop, s.stopped
	s.stop, s.stopped = nil, nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped // the goroutine must not draw after the final line
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg == "" {
		msg = s.msg
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s %s\n", mark, progressText(msg, s.colors.enabled))
	s.msg = ""
}

// clear stops the spinner and erases its line, leaving nothing behind: for
// a notice that is over, not a step that ended.
func (s *spinner) clear() {
	s.mu.Lock()
	stop, stopped := s.stop, s.stopped
	s.stop, s.stopped = nil, nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprint(s.w, "\r\x1b[K")
	s.msg = ""
}

func (s *spinner) Done(msg string) { s.finish(s.colors.Green("✓"), msg) }
func (s *spinner) Fail(msg string) { s.finish(s.colors.Red("✗"), msg) }

// progressText is a step's message as a progress writer prints it: safe
// for a terminal whoever wrote its parts (a Lease holder, a cluster's
// name, a builder's image come from the cluster), SGR colour kept only
// where colour is on, and on one line, so it cannot forge a line of its
// own (a "✓ deployed" under a failure) or break the spinner's redraw.
// The writers' own control output (carriage return, erase line) is added
// after this, so it alone reaches the terminal.
func progressText(msg string, color bool) string {
	return strings.ReplaceAll(text.SanitizeColor(msg, color), "\n", " ")
}
