package cli

import (
	"context"
	"errors"
	"fmt"
)

// Prompter asks the user questions. Commands use it only when
// IOStreams.CanPrompt is true; otherwise they fail with NoPromptError naming
// the flag that supplies the answer, so scripts never hang.
type Prompter interface {
	Confirm(ctx context.Context, question string, defaultYes bool) (bool, error)
	// Select returns one of options.
	Select(ctx context.Context, question string, options []string, defaultOption string) (string, error)
	Input(ctx context.Context, question, defaultValue string) (string, error)
}

// ErrInterrupted is returned when the user abandons a prompt with Ctrl-C or
// Esc; main exits 130 as for any interruption.
var ErrInterrupted = errors.New("interrupted")

// Confirmation describes a destructive action that needs a yes.
type Confirmation struct {
	// Action is what will happen, as a verb phrase: `remove app "web"`.
	Action string
	// Question is asked on a terminal; default "<Action>?".
	Question string
	// Flag answers yes in advance; default "--yes".
	Flag string
}

// ConfirmOrFlag returns nil when the action may go ahead: yes is set (the flag
// was passed) or the user answered yes. It returns ErrCancelled when the user
// said no, and a usage error naming the flag when nobody can be asked.
func ConfirmOrFlag(ctx context.Context, ios *IOStreams, p Prompter, yes bool, c Confirmation) error {
	if yes {
		return nil
	}
	flag := c.Flag
	if flag == "" {
		flag = "--yes"
	}
	if !ios.CanPrompt() {
		return NoPromptError(fmt.Sprintf("refusing to %s without confirmation", c.Action), flag)
	}
	question := c.Question
	if question == "" {
		question = upperFirst(c.Action) + "?"
	}
	ok, err := p.Confirm(ctx, question, false)
	if err != nil {
		return err
	}
	if !ok {
		return ErrCancelled
	}
	return nil
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// FakePrompter answers from a script, for tests. Each call takes the next
// answer; running out of answers, or a question of the wrong kind, is an
// error so a test cannot pass by accident.
type FakePrompter struct {
	Answers []FakeAnswer
	// Asked records every question, in order.
	Asked []string
}

// FakeAnswer is one scripted answer: set the field for the kind of question
// expected, or Err to make the prompt fail.
type FakeAnswer struct {
	Confirm *bool
	Select  string
	Input   *string
	Err     error
}

func (f *FakePrompter) next(question, kind string) (FakeAnswer, error) {
	f.Asked = append(f.Asked, question)
	if len(f.Answers) == 0 {
		return FakeAnswer{}, fmt.Errorf("fake prompter: unexpected %s %q", kind, question)
	}
	a := f.Answers[0]
	f.Answers = f.Answers[1:]
	return a, a.Err
}

func (f *FakePrompter) Confirm(_ context.Context, question string, _ bool) (bool, error) {
	a, err := f.next(question, "confirm")
	if err != nil {
		return false, err
	}
	if a.Confirm == nil {
		return false, fmt.Errorf("fake prompter: %q is a confirm, but the scripted answer is not", question)
	}
	return *a.Confirm, nil
}

func (f *FakePrompter) Select(_ context.Context, question string, options []string, _ string) (string, error) {
	a, err := f.next(question, "select")
	if err != nil {
		return "", err
	}
	for _, o := range options {
		if o == a.Select {
			return o, nil
		}
	}
	return "", fmt.Errorf("fake prompter: answer %q is not among the options %q of %q", a.Select, options, question)
}

func (f *FakePrompter) Input(_ context.Context, question, _ string) (string, error) {
	a, err := f.next(question, "input")
	if err != nil {
		return "", err
	}
	if a.Input == nil {
		return "", fmt.Errorf("fake prompter: %q is an input, but the scripted answer is not", question)
	}
	return *a.Input, nil
}
