package session

import (
	"bytes"
	"io"
	"sync"
)

// SyncWriter writes whole lines from many goroutines to one writer, so
// lines from different units never mix.
type SyncWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func NewSyncWriter(w io.Writer) *SyncWriter { return &SyncWriter{w: w} }

// WriteLine writes prefix and line (which should end with "\n") in one Write.
func (s *SyncWriter) WriteLine(prefix string, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(append(s.buf[:0], prefix...), line...)
	_, err := s.w.Write(s.buf)
	return err
}

// maxPartialLine bounds what a PrefixWriter holds while waiting for the end
// of a line (a progress bar redrawn with "\r" never sends one).
const maxPartialLine = 64 << 10

// PrefixWriter writes every line of its input to a SyncWriter with a
// prefix. A last line without "\n" is written, with one, by Close.
type PrefixWriter struct {
	out    *SyncWriter
	prefix string
	buf    []byte
	err    error
}

func NewPrefixWriter(out *SyncWriter, prefix string) *PrefixWriter {
	return &PrefixWriter{out: out, prefix: prefix}
}

func (p *PrefixWriter) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	p.buf = append(p.buf, b...)
	start := 0
	for {
		i := bytes.IndexByte(p.buf[start:], '\n')
		if i < 0 {
			break
		}
		if err := p.out.WriteLine(p.prefix, p.buf[start:start+i+1]); err != nil {
			p.err = err
			return 0, err
		}
		start += i + 1
	}
	p.buf = append(p.buf[:0], p.buf[start:]...)
	if len(p.buf) >= maxPartialLine {
		return len(b), p.flush()
	}
	return len(b), nil
}

func (p *PrefixWriter) flush() error {
	if len(p.buf) == 0 || p.err != nil {
		return p.err
	}
	line := append(p.buf, '\n')
	p.buf = p.buf[:0]
	p.err = p.out.WriteLine(p.prefix, line)
	return p.err
}

// Close writes what is left of a last, unterminated line.
func (p *PrefixWriter) Close() error { return p.flush() }

// unitColors are the colours units' prefixes cycle through on a terminal:
// no red, which means errors, and nothing too dark to read.
var unitColors = []string{"36", "33", "32", "35", "34", "96", "93", "92", "95", "94"}

// Colorizer gives each name its own colour, in the order names are first
// seen, when enabled.
type Colorizer struct {
	enabled bool
	mu      sync.Mutex
	seen    map[string]string
}

func NewColorizer(enabled bool) *Colorizer {
	return &Colorizer{enabled: enabled, seen: map[string]string{}}
}

// Paint returns text in name's colour.
func (c *Colorizer) Paint(name, text string) string {
	if !c.enabled {
		return text
	}
	c.mu.Lock()
	code, ok := c.seen[name]
	if !ok {
		code = unitColors[len(c.seen)%len(unitColors)]
		c.seen[name] = code
	}
	c.mu.Unlock()
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// UnitPrefix is how a unit's lines start: its name, padded to width, then
// " | ", coloured on a terminal.
func (c *Colorizer) UnitPrefix(unit string, width int) string {
	pad := ""
	if n := width - len(unit); n > 0 {
		pad = string(bytes.Repeat([]byte{' '}, n))
	}
	return c.Paint(unit, unit+pad+" |") + " "
}
