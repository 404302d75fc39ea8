package main

import (
	"sort"
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
)

// TestHerokuVerbsSuggestTugCommands: a Heroku-style top-level verb is a
// usage error (exit 2) that names the tug command, also when it comes with
// flags the root does not have (cobra would report "unknown flag" first).
func TestHerokuVerbsSuggestTugCommands(t *testing.T) {
	paths := make([]string, 0, len(herokuVerbs))
	for p := range herokuVerbs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		for _, word := range herokuVerbs[path] {
			for _, args := range [][]string{
				{word, "shop"},
				{word, "shop", "--image", "x"},
				{word, "shop", "-p", "web", "--yes"},
			} {
				// the whole line, flags and all
				want := "did you mean \"tug " + path + " " + strings.Join(args[1:], " ") + "\"?\n"
				r := execute(t, nil, args...)
				if r.code != 2 || !strings.Contains(r.stderr, "unknown command \""+word+"\" for \"tug\"") || !strings.Contains(r.stderr, want) {
					t.Errorf("tug %s: exit %d, stderr %q; want 2 and %q", strings.Join(args, " "), r.code, r.stderr, want)
				}
				if strings.Contains(r.stderr, "unknown flag") || strings.Contains(r.stderr, "unknown shorthand") {
					t.Errorf("tug %s: the flag error came first: %q", strings.Join(args, " "), r.stderr)
				}
			}
		}
	}
}

func TestHerokuDeployNamesAppDeploy(t *testing.T) {
	r := execute(t, nil, "deploy", "shop", "--image", "localhost/tug/sample:v1")
	want := "error: unknown command \"deploy\" for \"tug\"\ndid you mean \"tug app deploy shop --image localhost/tug/sample:v1\"?\nrun 'tug --help' for usage\n"
	if r.code != 2 || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", r.code, r.stdout, r.stderr, want)
	}
	// As a kubectl plugin the suggestion reads 'kubectl tug app deploy'.
	isolate(t)
	ios, _, out, errOut := cli.TestIOStreams()
	k := executeWith(cli.NewFactory(ios, "kubectl tug"), out, errOut, "deploy", "shop", "--image", "x")
	if k.code != 2 || !strings.Contains(k.stderr, `did you mean "kubectl tug app deploy shop --image x"?`) {
		t.Errorf("as kubectl tug: exit %d, stderr %q", k.code, k.stderr)
	}
}

// TestUnknownSubcommandWithFlags: below the root too, a mistyped
// subcommand is reported as one, not as its flags.
func TestUnknownSubcommandWithFlags(t *testing.T) {
	r := execute(t, nil, "app", "deploi", "shop", "--image", "x")
	want := "error: unknown command \"deploi\" for \"tug app\"\ndid you mean \"deploy\"?\nrun 'tug app --help' for usage\n"
	if r.code != 2 || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	// A flag the root does not know, with no word before it, is still a flag error.
	r = execute(t, nil, "--bogus")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "error: unknown flag: --bogus\n") {
		t.Errorf("--bogus: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A suggestion never echoes a config value (stderr goes to CI logs):
// heroku's config:set line comes back with its values hidden.
func TestHerokuSuggestionHidesConfigValues(t *testing.T) {
	r := execute(t, nil, "config:set", "shop", "DB_URL=postgres://u:pw@h/db", "db_pass=s3cret", "web=2")
	if r.code != 2 || strings.Contains(r.stderr, "pw@h") || strings.Contains(r.stderr, "s3cret") || !strings.Contains(r.stderr, "DB_URL=VALUE db_pass=VALUE web=2") {
		t.Errorf("exit %d, stderr %q; want the suggestion with every value hidden", r.code, r.stderr)
	}
}
