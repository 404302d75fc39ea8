package text

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Text from the cluster (server messages, events, records another user
// stored, a build's or a release phase's output) may carry terminal
// escapes: OSC 52 writes the user's clipboard, OSC 0 retitles the window,
// CSI sequences move the cursor or clear the screen and so hide or forge
// what tug printed. The functions here let through only what cannot do
// that: printable text, tab, newline and, where colour is on, SGR colour
// sequences (ESC [ digits m). Every other control character (C0 but tab
// and newline, DEL, C1 as runes U+0080-U+009F) is shown in caret or \u
// notation instead of being sent, so what remains of a sequence is plain
// text the user can see; invalid UTF-8 is shown as \ufffd. Like kubectl's
// EscapeTerminal, with colour kept.

// Sanitize makes s safe to print on a terminal: every control character
// but tab and newline, ESC included (so SGR colour too), is shown in caret
// or \u notation.
func Sanitize(s string) string { return sanitizeString(s, sgrShow) }

// SanitizeColor is Sanitize that lets SGR colour sequences through when
// color is true and drops them when it is false (a pipe, NO_COLOR): for
// text whose colour may be meant, such as a table cell tug coloured.
func SanitizeColor(s string, color bool) string {
	if color {
		return sanitizeString(s, sgrKeep)
	}
	return sanitizeString(s, sgrStrip)
}

func sanitizeString(s string, mode sgrMode) string {
	if !needsWork(s) {
		return s
	}
	f := filter{sgr: mode}
	return string(f.feed(nil, []byte(s), true))
}

// needsWork is false for text that comes out of the filter unchanged, the
// common case, so it is returned without a copy.
func needsWork(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c == 0x7f || (c < 0x20 && c != '\t' && c != '\n') {
			return true
		}
	}
	return false
}

// Writer is an io.Writer that passes what it is given through the same
// filter as SanitizeColor, for output streamed from the cluster (a build's
// log, a release phase's output, app logs). An escape sequence or a UTF-8
// rune split across two Writes is judged whole: its first bytes are held
// back until the rest arrives (at most maxSGR bytes). A carriage return
// becomes a newline (CR LF one newline): a line cannot be overwritten, and
// a progress bar drawn with CR reads as successive lines. Safe for
// concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	f   filter
	out []byte
}

// NewWriter returns a Writer to w that keeps SGR colour when color is
// true and drops it otherwise.
func NewWriter(w io.Writer, color bool) *Writer {
	mode := sgrStrip
	if color {
		mode = sgrKeep
	}
	return &Writer{w: w, f: filter{sgr: mode, stream: true}}
}

// Write filters p and writes the result to the underlying writer in one
// call. It reports len(p) when that write succeeds, whatever it held back.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out = w.f.feed(w.out[:0], p, false)
	if len(w.out) == 0 {
		return len(p), nil
	}
	if _, err := w.w.Write(w.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what Write held back (the start of a sequence or rune that
// never ended), shown as text. Call it when the stream ends.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out = w.f.feed(w.out[:0], nil, true)
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.w.Write(w.out)
	return err
}

type sgrMode int

const (
	sgrShow  sgrMode = iota // ESC is a control like any other: shown as ^[
	sgrKeep                 // SGR sequences pass unchanged
	sgrStrip                // SGR sequences are dropped
)

// maxSGR bounds an SGR sequence (and so what a Writer holds back); a
// longer run of parameters is not colour anyone meant.
const maxSGR = 64

type filter struct {
	sgr    sgrMode
	stream bool   // CR is a line end
	held   []byte // the start of an SGR sequence or of a rune, from the last feed
	skipLF bool   // the last byte was a CR, already written as a newline
}

// feed appends to dst what p (after what was held) becomes. With final,
// nothing more follows, so nothing is held.
func (f *filter) feed(dst, p []byte, final bool) []byte {
	in := p
	if len(f.held) > 0 {
		in = append(append(make([]byte, 0, len(f.held)+len(p)), f.held...), p...)
		f.held = f.held[:0]
	}
	for i := 0; i < len(in); {
		c := in[i]
		if f.skipLF {
			f.skipLF = false
			if c == '\n' {
				i++
				continue
			}
		}
		switch {
		case c == '\t' || c == '\n' || (c >= 0x20 && c < 0x7f):
			j := i + 1
			for j < len(in) && (in[j] == '\t' || in[j] == '\n' || (in[j] >= 0x20 && in[j] < 0x7f)) {
				j++
			}
			dst = append(dst, in[i:j]...)
			i = j
		case c == '\r' && f.stream:
			dst = append(dst, '\n')
			f.skipLF = true
			i++
		case c == 0x1b && f.sgr != sgrShow:
			n, complete := sgrLen(in[i:])
			switch {
			case complete:
				if f.sgr == sgrKeep {
					dst = append(dst, in[i:i+n]...)
				}
				i += n
			case n > 0 && !final:
				f.held = append(f.held, in[i:]...)
				return dst
			default:
				dst = append(dst, '^', '[')
				i++
			}
		case c < 0x20:
			dst = append(dst, '^', c+'@')
			i++
		case c == 0x7f:
			dst = append(dst, '^', '?')
			i++
		default:
			if !final && !utf8.FullRune(in[i:]) {
				f.held = append(f.held, in[i:]...)
				return dst
			}
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) {
				dst = fmt.Appendf(dst, "\\u%04x", r)
			} else {
				dst = append(dst, in[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// sgrLen looks at b, which starts with ESC, for an SGR sequence: ESC [,
// parameters (digits, ';', ':') and 'm'. complete says one was found, n
// long. Otherwise n > 0 says b could still become one with more bytes,
// and n == 0 that it cannot.
func sgrLen(b []byte) (n int, complete bool) {
	if len(b) < 2 {
		return 1, false
	}
	if b[1] != '[' {
		return 0, false
	}
	for j := 2; j < len(b) && j < maxSGR; j++ {
		switch c := b[j]; {
		case c == 'm':
			return j + 1, true
		case (c >= '0' && c <= '9') || c == ';' || c == ':':
		default:
			return 0, false
		}
	}
	if len(b) >= maxSGR {
		return 0, false
	}
	return len(b), false
}

// Truncate cuts s to width runes as a terminal shows them, the last one
// "…"; SGR sequences take no room and are never cut in two, and a cut
// string that carried colour ends with a reset. A width of 1 or less
// keeps s whole.
func Truncate(s string, width int) string {
	if width <= 1 {
		return s
	}
	var b strings.Builder
	seen, coloured := 0, false
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			if n, ok := sgrLen([]byte(s[i:min(len(s), i+maxSGR)])); ok {
				b.WriteString(s[i : i+n])
				coloured = true
				i += n
				continue
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		if seen == width-1 && visibleRunes(s[i:]) > 1 {
			b.WriteString("…")
			if coloured {
				b.WriteString("\x1b[0m")
			}
			return b.String()
		}
		b.WriteString(s[i : i+size])
		seen++
		i += size
	}
	return b.String()
}

// visibleRunes counts the runes of s outside SGR sequences.
func visibleRunes(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			if l, ok := sgrLen([]byte(s[i:min(len(s), i+maxSGR)])); ok {
				i += l
				continue
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		n++
		i += size
	}
	return n
}
