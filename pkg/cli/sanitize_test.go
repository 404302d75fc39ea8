package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/cli/clitest"
)

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
		{"héllo ✓", "héllo ✓"},
		{"\x1b[2J\x1b]0;pwned\x07rest", "^[[2J^[]0;pwned^Grest"},
		{"carriage\rreturn", "carriage^Mreturn"},
		{"del\x7f", "del^?"},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bad \xff byte", `bad \ufffd byte`},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTableCellsAreSanitized(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	tbl := NewTable("message")
	tbl.AddRow("\x1b]0;title\x07ok")
	if err := tbl.Render(ios, true); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "^[]0;title^Gok\n" {
		t.Fatalf("table = %q", got)
	}
}

// hostileMessage is a progress step whose parts came from the cluster (a
// Lease holder, a cluster's name): a clipboard write, a retitle, a screen
// clear, cursor moves, C1 CSI, NUL and BEL, colour, and a newline that
// would forge a success line of its own.
const hostileMessage = "shop: waiting for \x1b]52;c;aGk=\x07alice\x1b]0;title\x07 \x1b[2J\x1b[1A\x1b[31mred\x1b[0m \u009b2J\x00\x07\n15:04:05 ✓ deployed release 9"

// quotedLines is out with each line Go-quoted, so a golden file shows
// every escape byte.
func quotedLines(out string) []byte {
	var b strings.Builder
	for _, l := range strings.SplitAfter(out, "\n") {
		if l != "" {
			b.WriteString(strconv.Quote(l) + "\n")
		}
	}
	return []byte(b.String())
}

func TestLineProgressSanitizesMessages(t *testing.T) {
	ios, _, _, errOut := TestIOStreams()
	p := NewProgress(ios).(*lineProgress)
	p.now = func() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC) }
	p.Update(hostileMessage)
	p.Fail("")
	got := errOut.String()
	if strings.Contains(got, "\x1b") || strings.Contains(got, "\u009b") || strings.ContainsAny(got, "\x00\x07") {
		t.Errorf("a piped progress line carries an escape or control: %q", got)
	}
	if n := strings.Count(got, "\n"); n != 2 {
		t.Errorf("two steps must be two lines, got %d: %q", n, got)
	}
	clitest.Golden(t, "progress-lines-hostile", quotedLines(got))
}

func TestSpinnerSanitizesMessagesButNotItsOwnControls(t *testing.T) {
	ios, _, _, errOut := TestIOStreams()
	ios.SetStderrTTY(true)
	ios.SetTerminalWidth(200)
	p := NewProgress(ios).(*spinner)
	p.interval = time.Hour // one draw per Update: the output is fixed
	p.Update(hostileMessage)
	p.Done("built \x1b]8;;http://evil\x07image\x1b]8;;\x07")
	got := errOut.String()
	// What may remain raw: the spinner's own line clear and colour.
	rest := strings.ReplaceAll(got, "\r\x1b[K", "")
	rest = regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(rest, "")
	if strings.ContainsAny(rest, "\x1b\r\x00\x07") || strings.Contains(rest, "\u009b") {
		t.Errorf("spinner output carries an escape that is not its own or colour: %q", got)
	}
	if !strings.HasPrefix(got, "\r\x1b[K") || !strings.Contains(got, "\x1b[32m✓\x1b[0m") {
		t.Errorf("the spinner's own controls and colour must stay: %q", got)
	}
	if !strings.Contains(got, "\x1b[31mred\x1b[0m") {
		t.Errorf("colour in a message passes where colour is on: %q", got)
	}
	clitest.Golden(t, "progress-spinner-hostile", quotedLines(got))
}

func TestPipedTableDropsColor(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	tbl := NewTable("status")
	tbl.AddRow("\x1b[31mcrashed\x1b[0m")
	if err := tbl.Render(ios, true); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "crashed\n" {
		t.Fatalf("piped table = %q", got)
	}
}
