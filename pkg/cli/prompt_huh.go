package cli

import (
	"context"
	"errors"

	"charm.land/huh/v2"
)

// huhPrompter draws prompts with charm.land/huh. It is built on first use
// (Factory.Prompter), so commands that never ask pay nothing but huh's
// package initialisation.
type huhPrompter struct {
	ios *IOStreams
}

func newHuhPrompter(ios *IOStreams) Prompter { return &huhPrompter{ios: ios} }

func (p *huhPrompter) run(ctx context.Context, field huh.Field) error {
	form := huh.NewForm(huh.NewGroup(field)).
		WithInput(p.ios.In).
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
