package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// exitCode is the one place where errors become exit codes and the final
// message (docs/exit-codes.md):
//
//	0    success
//	1    failure: one line "error: ..." saying what failed and what to do
//	2    usage error: the message, suggestions, and where to find help
//	130  interrupted (Ctrl-C)
//	n    a remote command's own exit code (run, shell), passed through
func exitCode(ctx context.Context, stderr io.Writer, cmd *cobra.Command, err error) int {
	name := "tug"
	if cmd != nil {
		name = cmd.Root().DisplayName()
	}
	if err == nil {
		return cli.ExitOK
	}
	var exitErr *session.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, cli.ErrInterrupted) {
		// The user knows they pressed Ctrl-C; end the line a spinner or
		// prompt may have left open, and say what was left, if the
		// command knows (a rollout cut short: what runs, what to run).
		fmt.Fprintln(stderr)
		var next interface{ NextStep() string }
		if errors.As(err, &next) {
			fmt.Fprintf(stderr, "interrupted: %s\n", cli.Sanitize(next.NextStep()))
		}
		return cli.ExitInterrupted
	}
	// A failure with a code of its own (a deploy's failure class, see
	// docs/exit-codes.md) prints like any failure and exits with that code.
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		fmt.Fprintf(stderr, "error: %s\n", cli.Sanitize(cli.WithCommandName(text.OneLine(err.Error()), name)))
		return coded.ExitCode()
	}
	if inputerr.Is(err) {
		fmt.Fprintf(stderr, "error: %s\n", cli.Sanitize(cli.WithCommandName(text.OneLine(err.Error()), name)))
		if s := inputerr.Suggest(err); len(s) > 0 {
			fmt.Fprintf(stderr, "did you mean %s?\n", quoteJoin(s))
		}
		if cmd != nil {
			fmt.Fprintf(stderr, "run '%s --help' for usage\n", cmd.CommandPath())
		}
		return cli.ExitUsage
	}
	fmt.Fprintf(stderr, "error: %s\n", cli.Sanitize(cli.WithCommandName(text.OneLine(kube.TranslateError(err).Error()), name)))
	return cli.ExitFailure
}

func quoteJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	switch len(q) {
	case 1:
		return q[0]
	default:
		return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
	}
}

// wholeLine makes the suggestion for a Heroku verb at the top (`tug create
// shop2 --pool x`) the whole tug command, flags and all ('tug app create
// shop2 --pool x'), as the guide promises: the user typed the rest right.
func wholeLine(err error, cmd *cobra.Command, args []string) {
	var ie *inputerr.Error
	if cmd == nil || cmd.HasParent() || !errors.As(err, &ie) || len(ie.Suggestions) != 1 {
		return
	}
	verb := slices.IndexFunc(args, func(a string) bool {
		return ie.Err.Error() == fmt.Sprintf("unknown command %q for %q", a, cmd.CommandPath())
	})
	if verb < 0 || len(args) < 2 {
		return
	}
	line := []string{ie.Suggestions[0]}
	for _, a := range slices.Concat(args[:verb], args[verb+1:]) {
		if strings.ContainsAny(a, `'"\`) {
			return // it would print escaped in "did you mean"; the command alone says enough
		}
		line = append(line, shellQuote(hideValue(a)))
	}
	ie.Suggestions[0] = strings.Join(line, " ")
}

// hideValue keeps a config value out of a suggestion (stderr, CI logs):
// DB_URL=postgres://u:pw@h/db (or db_url=...) reads DB_URL=VALUE; only a
// unit count (web=2, the scale verbs') stays as typed.
func hideValue(arg string) string {
	key, value, ok := strings.Cut(arg, "=")
	if !ok || key == "" || strings.Trim(value, "0123456789") == "" && value != "" {
		return arg
	}
	return key + "=VALUE"
}

// shellQuote quotes s, which has no quote or backslash, for a POSIX shell
// when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@%+") == "" {
		return s
	}
	return "'" + s + "'"
}
