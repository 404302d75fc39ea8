package cli

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/inputerr"
)

// The validators below replace cobra's so that wrong arguments are usage
// errors (exit 2) with a message that names what was expected.

// NoArgs rejects positional arguments.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return inputerr.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// ExactArgs requires one argument per name, e.g. ExactArgs("APP").
func ExactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return inputerr.Errorf("missing %s: %q takes %s", names[len(args)], cmd.CommandPath(), strings.Join(names, " "))
		case len(args) > len(names):
			return inputerr.Errorf("unexpected argument %q: %q takes %s", args[len(names)], cmd.CommandPath(), argList(names))
		}
		return nil
	}
}

// Args checks positional arguments against a usage spec, one word per
// argument: "APP" is required, "[KEY]" optional, "KEY..." one or more and
// "[KEY...]" any number; a repeated word comes last. Args("APP", "KEY...")
// reports `missing KEY: "tug env unset" takes APP KEY...`, not cobra's
// "requires at least 2 arg(s)".
func Args(spec ...string) cobra.PositionalArgs {
	required, maxArgs := 0, len(spec)
	for _, w := range spec {
		optional := strings.HasPrefix(w, "[")
		if !optional {
			required++
		}
		if strings.HasSuffix(strings.TrimSuffix(w, "]"), "...") {
			maxArgs = -1
		}
	}
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < required:
			missing := strings.TrimSuffix(strings.Trim(spec[len(args)], "[]"), "...")
			return inputerr.Errorf("missing %s: %q takes %s", missing, cmd.CommandPath(), strings.Join(spec, " "))
		case maxArgs >= 0 && len(args) > maxArgs:
			return inputerr.Errorf("unexpected argument %q: %q takes %s", args[maxArgs], cmd.CommandPath(), argList(spec))
		}
		return nil
	}
}

// OneOfArgs requires exactly one argument from valid, e.g. a shell name.
func OneOfArgs(name string, valid ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := ExactArgs(name)(cmd, args); err != nil {
			return err
		}
		for _, v := range valid {
			if args[0] == v {
				return nil
			}
		}
		return inputerr.Errorf("unknown %s %q: must be one of %s", strings.ToLower(name), args[0], strings.Join(valid, ", "))
	}
}

func argList(names []string) string {
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, " ")
}

// GroupArgs is the Args of a command that only groups subcommands (tug, tug
// app, ...). cobra would print the group's help and exit 0 for `tug app
// lsit`; this makes it an unknown-command usage error with suggestions.
func GroupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	// cobra sets a default distance only on the command it suggests for at
	// the root; a group below it would suggest by prefix alone, and `tug app
	// lst` would get no "list".
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	suggestions := suggestFor(cmd, args[0])
	if len(suggestions) == 0 {
		suggestions = cmd.SuggestionsFor(args[0])
	}
	return &inputerr.Error{
		Err:         fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()),
		Suggestions: suggestions,
	}
}

// suggestFor is the full path of every command below cmd that names word
// (or "GROUP word", for cmd GROUP) in its SuggestFor: "tug deploy" finds 'tug app deploy', two levels down,
// where cobra looks only at cmd's own subcommands (and would suggest "app").
func suggestFor(cmd *cobra.Command, word string) []string {
	var out []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			for _, w := range sub.SuggestFor {
				// "env list" in env get's SuggestFor: the word under
				// that group only (tug list is app list's).
				if w == word || w == cmd.Name()+" "+word {
					out = append(out, sub.CommandPath())
					break
				}
			}
			walk(sub)
		}
	}
	walk(cmd)
	return out
}

// isGroup reports whether cmd only groups subcommands (its Args is
// GroupArgs).
func isGroup(cmd *cobra.Command) bool {
	return cmd.Args != nil && reflect.ValueOf(cmd.Args).Pointer() == reflect.ValueOf(GroupArgs).Pointer()
}

// GroupRunE shows the group's help when it is run without a subcommand.
func GroupRunE(cmd *cobra.Command, _ []string) error {
	return cmd.Help()
}

// FlagErrorFunc makes flag parsing errors usage errors, suggesting flags
// whose names are close to an unknown one. Set it on the root command.
//
// On a group (tug, tug app, ...) a word before the flag is an unknown
// command, and that is the error to report: cobra parses a group's flags
// before its Args sees the word, so `tug deploy shop --image x` would
// otherwise say "unknown flag: --image" instead of pointing at 'tug app
// deploy'. pflag keeps the words it read before the failing flag.
func FlagErrorFunc(cmd *cobra.Command, err error) error {
	if isGroup(cmd) {
		if words := cmd.Flags().Args(); len(words) > 0 {
			return GroupArgs(cmd, words)
		}
	}
	var notExist *pflag.NotExistError
	if errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "" {
		return &inputerr.Error{Err: err, Suggestions: suggestFlags(cmd, notExist.GetSpecifiedName())}
	}
	return &inputerr.Error{Err: err}
}

// suggestFlags finds flags within an edit distance of 2 of name, or that
// start with it, the way cobra suggests commands.
func suggestFlags(cmd *cobra.Command, name string) []string {
	seen := map[string]bool{}
	var out []string
	visit := func(f *pflag.Flag) {
		// Hidden flags are suggested: tug hides rarely used kubectl flags
		// that still work. Deprecated ones are not.
		if f.Deprecated != "" || seen[f.Name] {
			return
		}
		// A short name is within 2 edits of too much (--to of --as and
		// --v): for names of three letters or fewer, one edit; a prefix
		// of two letters is no hint either (--to of --token).
		maxEdits := 2
		if len(name) <= 3 {
			maxEdits = 1
		}
		if levenshtein(name, f.Name) <= maxEdits || (len(name) > 2 && strings.HasPrefix(f.Name, name)) {
			seen[f.Name] = true
			out = append(out, "--"+f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	sort.Strings(out)
	return out
}

func levenshtein(a, b string) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
