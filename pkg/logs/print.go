package logs

import (
	"bufio"
	"fmt"
	"io"
	"sync"

	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// printer writes lines from every unit's stream to stdout from one
// goroutine, through a buffer flushed whenever no line is waiting: whole
// lines, never mixed, and one write for a burst of them.
type printer struct {
	lines  chan line
	done   chan struct{}
	w      *bufio.Writer
	errOut io.Writer
	colors *session.Colorizer
	errCol *session.Colorizer
	prefix bool // false with --unit: one unit needs no name on each line
	stamps bool

	mu     sync.Mutex // guards widest and stderr
	widest int
}

func newPrinter(ios Streams, o Options) *printer {
	// Log lines are whatever the app printed, and so whatever a request it
	// logged carried: made safe for a terminal as they stream.
	out := text.NewWriter(ios.Stdout(), ios.ColorEnabled())
	p := &printer{
		lines:  make(chan line, 1024),
		done:   make(chan struct{}),
		w:      bufio.NewWriterSize(out, 64<<10),
		errOut: text.NewWriter(ios.Stderr(), ios.ErrColorEnabled()), // a note quotes the cluster's reasons
		colors: session.NewColorizer(ios.ColorEnabled()),
		errCol: session.NewColorizer(ios.ErrColorEnabled()),
		prefix: o.Unit == "",
		stamps: o.Timestamps,
	}
	go p.loop()
	return p
}

// width makes room for unit's name in the prefix column.
func (p *printer) width(unit string) {
	p.mu.Lock()
	p.widest = max(p.widest, len(unit))
	p.mu.Unlock()
}

func (p *printer) prefixOf(c *session.Colorizer, unit string) string {
	if !p.prefix {
		return ""
	}
	p.mu.Lock()
	w := p.widest
	p.mu.Unlock()
	return c.UnitPrefix(unit, w)
}

func (p *printer) print(l line) { p.lines <- l }

func (p *printer) loop() {
	defer close(p.done)
	prefixes := map[string]string{}
	widthAt := map[string]int{}
	for l := range p.lines {
		p.write(l, prefixes, widthAt)
		for n := len(p.lines); n > 0; n-- {
			p.write(<-p.lines, prefixes, widthAt)
		}
		if err := p.w.Flush(); err != nil {
			// stdout is gone (a closed pipe): drain so streams do not block
			for range p.lines {
			}
			return
		}
	}
}

func (p *printer) write(l line, prefixes map[string]string, widthAt map[string]int) {
	p.mu.Lock()
	w := p.widest
	p.mu.Unlock()
	pre, ok := prefixes[l.unit]
	if !ok || widthAt[l.unit] != w {
		pre = p.prefixOf(p.colors, l.unit)
		prefixes[l.unit], widthAt[l.unit] = pre, w
	}
	_, _ = p.w.WriteString(pre)
	if p.stamps {
		_, _ = p.w.Write(l.raw)
	} else {
		_, _ = p.w.Write(l.text)
	}
}

// note tells the user something about one unit, on stderr.
func (p *printer) note(unit, msg string) {
	pre := p.prefixOf(p.errCol, unit)
	if !p.prefix {
		pre = unit + ": "
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.errOut, "%s(%s)\n", pre, msg)
}

// say writes a line about the logs, not about one unit, on stderr.
func (p *printer) say(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.errOut, msg)
}

// close prints what is left and stops the printer. No print may follow.
func (p *printer) close() {
	close(p.lines)
	<-p.done
	_ = p.w.Flush()
}
