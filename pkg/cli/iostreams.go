package cli

import (
	"bytes"
	"io"
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// IOStreams is where a command reads and writes, and what it knows about the
// terminal on the other end. Commands never touch os.Stdin/Stdout/Stderr.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool

	// colorEnv is false when the environment forbids colour (NO_COLOR,
	// TERM=dumb); noColorFlag is --no-color, colorOff is SetColorDisabled.
	// They are checked at use time because flags are parsed after the
	// streams are built.
	colorEnv    bool
	noColorFlag bool
	colorOff    bool

	// width overrides the detected terminal width (tests); 0 means detect.
	width int
	// term is $TERM, read once with the environment.
	term string
}

// System returns streams bound to the process's stdin, stdout and stderr.
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),
		colorEnv:  colorAllowedByEnv(os.Getenv),
		term:      os.Getenv("TERM"),
	}
}

// TestIOStreams returns streams backed by buffers, none of them a terminal.
// Use the Set* methods to pretend otherwise.
func TestIOStreams() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, colorEnv: true, width: 80}, in, out, errOut
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// colorAllowedByEnv follows https://no-color.org: any non-empty NO_COLOR
// disables colour; so does a terminal that declares itself dumb.
func colorAllowedByEnv(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// AddFlags registers --no-color on fs.
func (s *IOStreams) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&s.noColorFlag, "no-color", false, "Disable colour in output (also NO_COLOR=1)")
}

// Stdin, Stdout and Stderr return In, Out and ErrOut, for library packages
// that take the streams through an interface of their own.
func (s *IOStreams) Stdin() io.Reader  { return s.In }
func (s *IOStreams) Stdout() io.Writer { return s.Out }
func (s *IOStreams) Stderr() io.Writer { return s.ErrOut }

func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// TermType is the terminal's type, $TERM ("" for TestIOStreams).
func (s *IOStreams) TermType() string  { return s.term }
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

func (s *IOStreams) SetStdinTTY(v bool)  { s.stdinTTY = v }
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = v }

// SetColorDisabled turns colour off as --no-color does.
func (s *IOStreams) SetColorDisabled(v bool) { s.colorOff = v }

func (s *IOStreams) colorAllowed() bool { return s.colorEnv && !s.noColorFlag && !s.colorOff }

// SetTerminalWidth fixes the width TerminalWidth reports (tests).
func (s *IOStreams) SetTerminalWidth(w int) { s.width = w }

// ColorEnabled reports whether stdout may carry ANSI colour.
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && s.colorAllowed() }

// ErrColorEnabled reports whether stderr may carry ANSI colour.
func (s *IOStreams) ErrColorEnabled() bool { return s.stderrTTY && s.colorAllowed() }

// CanPrompt reports whether a person can answer a question: we need to read
// their keys and show them the question.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stdoutTTY }

// TerminalWidth is the width of the terminal on stdout (or stderr), 80 when
// neither is a terminal.
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	for _, w := range []io.Writer{s.Out, s.ErrOut} {
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
				return w
			}
		}
	}
	return 80
}

// Colors returns the palette for stdout: plain strings when colour is off.
func (s *IOStreams) Colors() Palette { return Palette{enabled: s.ColorEnabled()} }

// ErrColors returns the palette for stderr.
func (s *IOStreams) ErrColors() Palette { return Palette{enabled: s.ErrColorEnabled()} }

// Palette wraps text in ANSI colour when enabled, and returns it unchanged otherwise.
type Palette struct{ enabled bool }

func (p Palette) wrap(code, s string) string {
	if !p.enabled || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p Palette) Bold(s string) string   { return p.wrap("1", s) }
func (p Palette) Red(s string) string    { return p.wrap("31", s) }
func (p Palette) Green(s string) string  { return p.wrap("32", s) }
func (p Palette) Yellow(s string) string { return p.wrap("33", s) }
func (p Palette) Gray(s string) string   { return p.wrap("90", s) }
