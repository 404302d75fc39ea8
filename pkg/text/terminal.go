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
//
// The filter is a state machine: its state is what it carries between
// bytes and between feeds (held, skipLF); each step reads what starts
// the rest of the input, appends what that becomes and says how many
// bytes it used, or 0 to hold the rest until more comes.
func (f *filter) feed(dst, p []byte, final bool) []byte {
	in := p
	if len(f.held) > 0 {
		in = append(append(make([]byte, 0, len(f.held)+len(p)), f.held...), p...)
		f.held = f.held[:0]
	}
	for i := 0; i < len(in); {
		if f.skipLF {
			f.skipLF = false
			if in[i] == '\n' {
				i++
				continue
			}
		}
		var n int
		if plain(in[i]) { // most text: no call for it
			dst, n = appendPlain(dst, in[i:])
		} else {
			dst, n = f.step(dst, in[i:], final)
		}
		if n == 0 {
			f.held = append(f.held, in[i:]...)
			return dst
		}
		i += n
	}
	return dst
}

// step handles what starts b (never empty, and not plain) by the kind of
// its first byte.
func (f *filter) step(dst, b []byte, final bool) ([]byte, int) {
	switch c := b[0]; {
	case c == '\r' && f.stream:
		f.skipLF = true // a CR LF is one line end
		return append(dst, '\n'), 1
	case c == 0x1b && f.sgr != sgrShow:
		return f.escape(dst, b, final)
	case c < 0x20:
		return append(dst, '^', c+'@'), 1
	case c == 0x7f:
		return append(dst, '^', '?'), 1
	default:
		return appendRune(dst, b, final)
	}
}

// plain: the bytes that pass as they are.
func plain(c byte) bool {
	return c == '\t' || c == '\n' || (c >= 0x20 && c < 0x7f)
}

// appendPlain passes the run of plain bytes b starts with, in one append.
func appendPlain(dst, b []byte) ([]byte, int) {
	j := 1
	for j < len(b) && plain(b[j]) {
		j++
	}
	return append(dst, b[:j]...), j
}

// escape handles an ESC where SGR colour may pass: a whole SGR sequence is
// kept or dropped by the mode, the start of one is held (unless final),
// and any other ESC is shown as ^[, which leaves the rest of the sequence
// as plain text.
func (f *filter) escape(dst, b []byte, final bool) ([]byte, int) {
	n, complete := sgrLen(b)
	switch {
	case complete:
		if f.sgr == sgrKeep {
			dst = append(dst, b[:n]...)
		}
		return dst, n
	case n > 0 && !final:
		return dst, 0
	default:
		return append(dst, '^', '['), 1
	}
}

// appendRune passes one UTF-8 rune, or shows it in \u notation when it is
// invalid or a C1 control (which some terminals obey like ESC sequences).
// A rune cut at the end of b is held, unless final.
func appendRune(dst, b []byte, final bool) ([]byte, int) {
	if !final && !utf8.FullRune(b) {
		return dst, 0
	}
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) {
		return fmt.Appendf(dst, "\\u%04x", r), size
	}
	return append(dst, b[:size]...), size
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
