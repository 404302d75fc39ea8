package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"charm.land/huh/v2"
)

// huhPrompter draws prompts with charm.land/huh. It is built on first use
// (Factory.Prompter), so commands that never ask pay nothing but huh's
// package initialisation.
type huhPrompter struct {
	ios *IOStreams
	tty func() *promptTTY // see prompt_input_unix.go
}

func newHuhPrompter(ios *IOStreams) Prompter {
	return &huhPrompter{ios: ios, tty: sync.OnceValue(openPromptTTY)}
}

// input is where one prompt reads keys: the terminal through a descriptor
// of its own when stdin is the terminal, so no reader the prompt leaves
// behind can take keys meant for what runs next. release ends it.
func (p *huhPrompter) input() (in io.Reader, release func()) {
	if f, ok := p.ios.In.(*os.File); ok && f == os.Stdin && p.ios.IsStdinTTY() {
		if t := p.tty(); t != nil {
			return t.forOnePrompt()
		}
	}
	return p.ios.In, func() {}
}

func (p *huhPrompter) run(ctx context.Context, field huh.Field) error {
	in, release := p.input()
	defer release()
	form := huh.NewForm(huh.NewGroup(field)).
		WithInput(in).
		WithOutput(p.ios.Out).
		WithShowHelp(false)
	if !p.ios.ColorEnabled() {
		form = form.WithTheme(huh.ThemeFunc(huh.ThemeBase))
	}
	err := form.RunWithContext(ctx)
	if errors.Is(err, huh.ErrUserAborted) {
		return ErrInterrupted
	}
	return err
}

func (p *huhPrompter) Confirm(ctx context.Context, question string, defaultYes bool) (bool, error) {
	answer := defaultYes
	err := p.run(ctx, huh.NewConfirm().Title(question).Affirmative("Yes").Negative("No").Value(&answer))
	return answer, err
}

func (p *huhPrompter) Select(ctx context.Context, question string, options []string, defaultOption string) (string, error) {
	answer := defaultOption
	err := p.run(ctx, huh.NewSelect[string]().Title(question).Options(huh.NewOptions(options...)...).Value(&answer))
	return answer, err
}

func (p *huhPrompter) Input(ctx context.Context, question, defaultValue string) (string, error) {
	answer := defaultValue
	err := p.run(ctx, huh.NewInput().Title(question).Value(&answer))
	return answer, err
}
