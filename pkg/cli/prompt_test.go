package cli

import (
	"context"
	"errors"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func TestConfirmOrFlag(t *testing.T) {
	c := Confirmation{Action: `remove app "web"`}
	cases := []struct {
		name      string
		yesFlag   bool
		tty       bool
		answers   []FakeAnswer
		wantErr   error
		wantUsage bool
		wantAsked []string
	}{
		{name: "flag skips the question", yesFlag: true, tty: true},
		{name: "flag works without a terminal", yesFlag: true},
		{name: "no terminal and no flag", wantErr: ErrNoPrompt, wantUsage: true},
		{name: "answered yes", tty: true, answers: []FakeAnswer{{Confirm: yes()}}, wantAsked: []string{`Remove app "web"?`}},
		{name: "answered no", tty: true, answers: []FakeAnswer{{Confirm: no()}}, wantErr: ErrCancelled, wantAsked: []string{`Remove app "web"?`}},
		{name: "prompt interrupted", tty: true, answers: []FakeAnswer{{Err: ErrInterrupted}}, wantErr: ErrInterrupted, wantAsked: []string{`Remove app "web"?`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _, _ := TestIOStreams()
			ios.SetStdinTTY(tc.tty)
			ios.SetStdoutTTY(tc.tty)
			p := &FakePrompter{Answers: tc.answers}
			err := ConfirmOrFlag(context.Background(), ios, p, tc.yesFlag, c)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if inputerr.Is(err) != tc.wantUsage {
				t.Errorf("usage error = %v, want %v", inputerr.Is(err), tc.wantUsage)
			}
			if len(p.Asked) != len(tc.wantAsked) || (len(p.Asked) > 0 && p.Asked[0] != tc.wantAsked[0]) {
				t.Errorf("asked %q, want %q", p.Asked, tc.wantAsked)
			}
		})
	}
}

func TestNoPromptErrorNamesTheFlag(t *testing.T) {
	ios, _, _, _ := TestIOStreams()
	ios.SetStdinTTY(true) // stdout piped: still nobody to show the question to
	err := ConfirmOrFlag(context.Background(), ios, &FakePrompter{}, false, Confirmation{Action: "remove node n1", Flag: "--force"})
	if want := "refusing to remove node n1 without confirmation: pass --force"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestFakePrompterRejectsUnexpectedQuestions(t *testing.T) {
	p := &FakePrompter{Answers: []FakeAnswer{{Select: "b"}}}
	if _, err := p.Confirm(context.Background(), "sure?", false); err == nil {
		t.Error("a confirm answered with a select answer must fail")
	}
	if _, err := p.Input(context.Background(), "name?", ""); err == nil {
		t.Error("running out of answers must fail")
	}
	p = &FakePrompter{Answers: []FakeAnswer{{Select: "b"}}}
	got, err := p.Select(context.Background(), "which?", []string{"a", "b"}, "a")
	if err != nil || got != "b" {
		t.Errorf("select got %q, %v; want b", got, err)
	}
}
