package cli

import "testing"

func TestColorAllowedByEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true},
		{map[string]string{"NO_COLOR": "1"}, false},
		{map[string]string{"TERM": "dumb"}, false},
		{map[string]string{"TERM": "xterm-256color"}, true},
	} {
		if got := colorAllowedByEnv(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: got %v, want %v", c.env, got, c.want)
		}
	}
}

func TestColorNeedsTerminalAndNoFlag(t *testing.T) {
	ios, _, _, _ := TestIOStreams()
	if ios.ColorEnabled() {
		t.Error("colour on a pipe")
	}
	ios.SetStdoutTTY(true)
	if !ios.ColorEnabled() {
		t.Error("no colour on a terminal")
	}
	if got := ios.Colors().Green("ok"); got != "\x1b[32mok\x1b[0m" {
		t.Errorf("green = %q", got)
	}
	ios.SetColorDisabled(true)
	if ios.ColorEnabled() || ios.Colors().Green("ok") != "ok" {
		t.Error("--no-color ignored")
	}
}

func TestCanPromptNeedsStdinAndStdout(t *testing.T) {
	ios, _, _, _ := TestIOStreams()
	ios.SetStdinTTY(true)
	if ios.CanPrompt() {
		t.Error("stdout piped, yet CanPrompt")
	}
	ios.SetStdoutTTY(true)
	if !ios.CanPrompt() {
		t.Error("both terminals, yet not CanPrompt")
	}
}

func TestSystemStreamsReadTheTermType(t *testing.T) {
	t.Setenv("TERM", "screen-256color")
	if got := System().TermType(); got != "screen-256color" {
		t.Errorf("TermType = %q", got)
	}
	if ios, _, _, _ := TestIOStreams(); ios.TermType() != "" {
		t.Errorf("test streams' TermType = %q, want none", ios.TermType())
	}
}
