package text

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// hostile is what a cluster could put in text tug prints: each entry is an
// input and what it must become with colour on and off.
var hostile = []struct {
	name, in, color, plain string
}{
	{"plain", "plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
	{"utf8", "héllo ✓", "héllo ✓", "héllo ✓"},
	{"sgr", "\x1b[31mred\x1b[0m \x1b[1;38;5;208mbold\x1b[m", "\x1b[31mred\x1b[0m \x1b[1;38;5;208mbold\x1b[m", "red bold"},
	{"sgr colon", "\x1b[38:2:1:2:3mx", "\x1b[38:2:1:2:3mx", "x"},
	{"osc 52 clipboard", "a\x1b]52;c;aGk=\x07b", "a^[]52;c;aGk=^Gb", "a^[]52;c;aGk=^Gb"},
	{"osc title st", "\x1b]0;pwned\x1b\\rest", "^[]0;pwned^[\\rest", "^[]0;pwned^[\\rest"},
	{"clear screen", "\x1b[2J\x1b[H", "^[[2J^[[H", "^[[2J^[[H"},
	{"cursor moves", "\x1b[1A\x1b[2K\x1b[10;20Hx\x1b[?25l", "^[[1A^[[2K^[[10;20Hx^[[?25l", "^[[1A^[[2K^[[10;20Hx^[[?25l"},
	{"other esc", "\x1bc\x1b(0\x1b7", "^[c^[(0^[7", "^[c^[(0^[7"},
	{"c1 csi", "c1 \u009b31m \u009d0;t\u009c", `c1 \u009b31m \u009d0;t\u009c`, `c1 \u009b31m \u009d0;t\u009c`},
	{"raw c1 byte", "raw \x9b31m", `raw \ufffd31m`, `raw \ufffd31m`},
	{"nul bel bs", "a\x00b\x07c\x08d", "a^@b^Gc^Hd", "a^@b^Gc^Hd"},
	{"del", "del\x7f", "del^?", "del^?"},
	{"bad utf8", "bad \xff\xfe byte", `bad \ufffd\ufffd byte`, `bad \ufffd\ufffd byte`},
	{"cut rune at end", "end \xe2\x9c", `end \ufffd\ufffd`, `end \ufffd\ufffd`},
	{"esc at end", "end\x1b", "end^[", "end^["},
	{"sgr cut at end", "end\x1b[31", "end^[[31", "end^[[31"},
	{"sgr too long", "\x1b[" + strings.Repeat("1;", 40) + "m", "^[[" + strings.Repeat("1;", 40) + "m", "^[[" + strings.Repeat("1;", 40) + "m"},
	{"sgr with intermediate", "\x1b[31;!mx", "^[[31;!mx", "^[[31;!mx"},
}

func TestSanitizeColor(t *testing.T) {
	for _, tt := range hostile {
		if got := SanitizeColor(tt.in, true); got != tt.color {
			t.Errorf("%s: SanitizeColor(%q, true) = %q, want %q", tt.name, tt.in, got, tt.color)
		}
		if got := SanitizeColor(tt.in, false); got != tt.plain {
			t.Errorf("%s: SanitizeColor(%q, false) = %q, want %q", tt.name, tt.in, got, tt.plain)
		}
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, tabs\tand\nnewlines": "plain text, tabs\tand\nnewlines",
		"héllo ✓":                         "héllo ✓",
		"\x1b[2J\x1b]0;pwned\x07rest":     "^[[2J^[]0;pwned^Grest",
		"\x1b[31mred":                     "^[[31mred", // no colour passes
		"carriage\rreturn":                "carriage^Mreturn",
		"del\x7f":                         "del^?",
		"c1 \u009b31m":                    `c1 \u009b31m`,
		"bad \xff byte":                   `bad \ufffd byte`,
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// No output of the filters may hold an ESC that does not start an SGR
// sequence, a C0 control but tab and newline, DEL, a C1 rune or invalid
// UTF-8, whatever the input.
func assertTerminalSafe(t *testing.T, what, out string, color bool) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		if out[i] != 0x1b {
			continue
		}
		n, ok := sgrLen([]byte(out[i:]))
		if !ok || !color {
			t.Fatalf("%s: output has a raw ESC at %d that is not SGR%s: %q", what, i, map[bool]string{false: " (colour is off)"}[color], out)
		}
		i += n - 1
	}
	if hasBadRune(out) {
		t.Fatalf("%s: output has a control character or invalid UTF-8: %q", what, out)
	}
}

func hasBadRune(s string) bool {
	for _, r := range strings.ToValidUTF8(s, "\x00") {
		if r == 0 || (r < 0x20 && r != '\t' && r != '\n' && r != 0x1b) || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return true
		}
	}
	return false
}

// A stream may cut an escape sequence or a rune anywhere: every split of
// every hostile input into two writes (and into single bytes) gives what
// the whole does.
func TestWriterSplitAcrossWrites(t *testing.T) {
	for _, tt := range hostile {
		for _, color := range []bool{true, false} {
			want := tt.plain
			if color {
				want = tt.color
			}
			for cut := 0; cut <= len(tt.in); cut++ {
				var b bytes.Buffer
				w := NewWriter(&b, color)
				for _, part := range []string{tt.in[:cut], tt.in[cut:]} {
					if n, err := w.Write([]byte(part)); n != len(part) || err != nil {
						t.Fatalf("Write = %d, %v", n, err)
					}
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				if b.String() != want {
					t.Errorf("%s (colour %v), cut at %d: %q, want %q", tt.name, color, cut, b.String(), want)
				}
				assertTerminalSafe(t, tt.name, b.String(), color)
			}
			var b bytes.Buffer
			w := NewWriter(&b, color)
			for i := range len(tt.in) {
				_, _ = w.Write([]byte{tt.in[i]})
			}
			_ = w.Flush()
			if b.String() != want {
				t.Errorf("%s (colour %v), byte by byte: %q, want %q", tt.name, color, b.String(), want)
			}
		}
	}
}

// The writer holds back the start of what may be colour, never more: an
// ESC [ 3 at the end of one write is not shown until the next says what it
// was, while the text before it is written at once.
func TestWriterHoldsOnlyAnUnfinishedSequence(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, true)
	_, _ = w.Write([]byte("step 1\x1b[3"))
	if b.String() != "step 1" {
		t.Fatalf("after the first write: %q", b.String())
	}
	_, _ = w.Write([]byte("2mok\x1b[0m\n"))
	if b.String() != "step 1\x1b[32mok\x1b[0m\n" {
		t.Fatalf("after the second write: %q", b.String())
	}
	_, _ = w.Write([]byte("\x1b]52;c;aGk="))
	_, _ = w.Write([]byte("\x07\n"))
	if got := b.String(); strings.Contains(got, "\x1b]") || !strings.HasSuffix(got, "^[]52;c;aGk=^G\n") {
		t.Fatalf("an OSC 52 split across writes: %q", got)
	}
}

// A carriage return cannot take the cursor back over a line: in a stream
// it ends the line, and CR LF is one line end even when split.
func TestWriterCarriageReturn(t *testing.T) {
	for _, parts := range [][]string{
		{"a\r\nb\rc\r", "\nd\n"},
		{"a\r", "\nb\r", "c\r\n", "d\n"},
	} {
		var b bytes.Buffer
		w := NewWriter(&b, false)
		for _, p := range parts {
			_, _ = w.Write([]byte(p))
		}
		if b.String() != "a\nb\nc\nd\n" {
			t.Errorf("%q: %q, want a, b, c, d on lines of their own", parts, b.String())
		}
	}
}

func TestWriterReportsTheUnderlyingError(t *testing.T) {
	w := NewWriter(failingWriter{}, false)
	if n, err := w.Write([]byte("x")); err == nil || n != 0 {
		t.Errorf("Write to a failing writer = %d, %v; want 0 and the error", n, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed pipe") }

// FuzzWriter feeds arbitrary bytes, cut at an arbitrary point, through the
// stream filter and checks nothing unsafe comes out.
func FuzzWriter(f *testing.F) {
	for _, tt := range hostile {
		f.Add([]byte(tt.in), uint(len(tt.in)/2), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint, color bool) {
		c := int(cut % uint(len(in)+1))
		var b bytes.Buffer
		w := NewWriter(&b, color)
		_, _ = w.Write(in[:c])
		_, _ = w.Write(in[c:])
		_ = w.Flush()
		assertTerminalSafe(t, "fuzz", b.String(), color)
		assertTerminalSafe(t, "fuzz string", SanitizeColor(string(in), color), color)
	})
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		in    string
		width int
		want  string
	}{
		{"héllo world", 6, "héllo…"},
		{"short", 80, "short"},
		{"exact", 5, "exact"},
		{"one more", 7, "one mo…"},
		{"x", 1, "x"},
		// colour takes no room and is never cut in two; a cut ends it
		{"\x1b[32m✓\x1b[0m done", 6, "\x1b[32m✓\x1b[0m done"},
		{"\x1b[31mlong red text\x1b[0m", 5, "\x1b[31mlong…\x1b[0m"},
	} {
		if got := Truncate(tt.in, tt.width); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}

// BenchmarkWriter measures the filter on log-like text (ASCII, some UTF-8,
// colour): go test ./pkg/text -bench Writer
func BenchmarkWriter(b *testing.B) {
	line := []byte("2026-01-02T15:04:05Z GET /shop/héllo 200 \x1b[32mok\x1b[0m 1.2ms user-agent=curl/8.5\n")
	chunk := bytes.Repeat(line, 32<<10/len(line))
	w := NewWriter(io.Discard, true)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
}
