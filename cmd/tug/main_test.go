package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cli/clitest"
	"tug.dev/tug/pkg/session"
)

type result struct {
	code           int
	stdout, stderr string
}

// execute runs tug with args the way main does, with test streams, and an
// empty environment: no kubeconfig unless a test passes --kubeconfig.
func execute(t *testing.T, setup func(*cli.Factory), args ...string) result {
	t.Helper()
	isolate(t)
	ios, _, out, errOut := cli.TestIOStreams()
	f := cli.NewFactory(ios, "tug")
	if setup != nil {
		setup(f)
	}
	return executeWith(f, out, errOut, args...)
}

func executeWith(f *cli.Factory, out, errOut *bytes.Buffer, args ...string) result {
	root := newRootCmd(f)
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	ctx := context.Background()
	cmd, err := root.ExecuteContextC(ctx)
	wholeLine(err, cmd, args)
	writeErrorObject(out, cmd, err)
	return result{code: exitCode(ctx, errOut, cmd, err), stdout: out.String(), stderr: errOut.String()}
}

func isolate(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "no-kubeconfig"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
}

func TestUsageErrorsExit2(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown command", []string{"verison"},
			"error: unknown command \"verison\" for \"tug\"\ndid you mean \"version\"?\nrun 'tug --help' for usage\n"},
		{"unknown command without suggestion", []string{"frobnicate"},
			"error: unknown command \"frobnicate\" for \"tug\"\nrun 'tug --help' for usage\n"},
		{"unknown flag", []string{"version", "--clinet"},
			"error: unknown flag: --clinet\ndid you mean \"--client\"?\nrun 'tug version --help' for usage\n"},
		{"unknown global flag", []string{"--kubeconifg", "x", "version"},
			"error: unknown flag: --kubeconifg\ndid you mean \"--kubeconfig\"?\nrun 'tug version --help' for usage\n"},
		{"unknown shorthand", []string{"version", "-z"},
			"error: unknown shorthand flag: 'z' in -z\nrun 'tug version --help' for usage\n"},
		{"bad output format", []string{"version", "-o", "xml"},
			"error: invalid argument \"xml\" for \"-o, --output\" flag: must be one of table, json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE\nrun 'tug version --help' for usage\n"},
		{"bad output format on doctor", []string{"doctor", "-o=wide"},
			"error: invalid argument \"wide\" for \"-o, --output\" flag: must be one of table, json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE\nrun 'tug doctor --help' for usage\n"},
		{"completion with a bad shell", []string{"completion", "tcsh"},
			"error: unknown shell \"tcsh\": must be one of bash, zsh, fish, powershell\nrun 'tug completion --help' for usage\n"},
		{"completion without a shell", []string{"completion"},
			"error: missing SHELL: \"tug completion\" takes SHELL\nrun 'tug completion --help' for usage\n"},
		{"extra argument", []string{"doctor", "now"},
			"error: \"tug doctor\" takes no arguments, got \"now\"\nrun 'tug doctor --help' for usage\n"},
		{"flag without value", []string{"version", "-o"},
			"error: flag needs an argument: 'o' in -o\nrun 'tug version --help' for usage\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := execute(t, nil, c.args...)
			if r.code != cli.ExitUsage {
				t.Errorf("exit %d, want 2", r.code)
			}
			if r.stderr != c.stderr {
				t.Errorf("stderr\n%q\nwant\n%q", r.stderr, c.stderr)
			}
			if r.stdout != "" {
				t.Errorf("usage errors must not print to stdout: %q", r.stdout)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name   string
		ctx    context.Context
		err    error
		code   int
		stderr string
	}{
		{"success", context.Background(), nil, 0, ""},
		{"failure is one line", context.Background(), errors.New("deploy failed:\n  image not found"), 1, "error: deploy failed: image not found\n"},
		{"remote exit code passes through", context.Background(), &session.ExitError{Code: 42}, 42, ""},
		{"wrapped remote exit code", context.Background(), errors.Join(errors.New("x"), &session.ExitError{Code: 7}), 7, ""},
		{"ctrl-c", cancelled, errors.New("watch ended"), 130, "\n"},
		{"prompt interrupted", context.Background(), cli.ErrInterrupted, 130, "\n"},
		{"no prompt is a usage error", context.Background(), cli.NoPromptError("refusing to remove app \"web\" without confirmation", "--yes"), 2,
			"error: refusing to remove app \"web\" without confirmation: pass --yes\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := exitCode(c.ctx, &stderr, nil, c.err); got != c.code {
				t.Errorf("exit %d, want %d", got, c.code)
			}
			if stderr.String() != c.stderr {
				t.Errorf("stderr %q, want %q", stderr.String(), c.stderr)
			}
		})
	}
}

func TestNoArgumentsShowsHelp(t *testing.T) {
	r := execute(t, nil)
	if r.code != 0 || !strings.Contains(r.stdout, "Usage:\n  tug [flags]\n  tug [command]") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestHelpGolden(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"version", "--help"}, {"doctor", "--help"}, {"completion", "--help"}} {
		name := "help-" + strings.TrimPrefix(strings.Join(args[:len(args)-1], "-"), "-")
		if len(args) == 1 {
			name = "help-root"
		}
		t.Run(name, func(t *testing.T) {
			r := execute(t, nil, args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			clitest.Golden(t, name, []byte(r.stdout))
		})
	}
}

func TestPluginMode(t *testing.T) {
	for argv0, want := range map[string]string{
		"/usr/local/bin/kubectl-tug": "kubectl tug",
		`C:\bin\kubectl-tug.exe`:     "kubectl tug",
		"kubectl-tug.exe":            "kubectl tug",
		"./bin/tug":                  "tug",
		"tug":                        "tug",
	} {
		if got := commandName(argv0); got != want {
			t.Errorf("commandName(%q) = %q, want %q", argv0, got, want)
		}
	}
	isolate(t)
	ios, _, out, errOut := cli.TestIOStreams()
	r := executeWith(cli.NewFactory(ios, "kubectl tug"), out, errOut, "version", "--help")
	if !strings.Contains(r.stdout, "Usage:\n  kubectl tug version [flags]") {
		t.Errorf("plugin help does not say 'kubectl tug':\n%s", r.stdout)
	}
	out.Reset()
	errOut.Reset()
	r = executeWith(cli.NewFactory(ios, "kubectl tug"), out, errOut, "verison")
	if r.code != 2 || !strings.Contains(r.stderr, "run 'kubectl tug --help' for usage") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestVersionClient(t *testing.T) {
	r := execute(t, nil, "version", "--client")
	if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "Client Version: dev (commit none, built unknown, go") {
		t.Errorf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	r = execute(t, nil, "version", "--client", "-o", "json")
	var got map[string]map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	for _, k := range []string{"version", "commit", "date", "goVersion", "platform"} {
		if got["client"][k] == "" {
			t.Errorf("client.%s missing from %s", k, r.stdout)
		}
	}
	if _, ok := got["server"]; ok {
		t.Error("--client output has a server")
	}
}

func TestVersionWithoutClusterWarnsAndSucceeds(t *testing.T) {
	r := execute(t, nil, "version")
	if r.code != 0 {
		t.Errorf("exit %d; an unreachable cluster must not fail version", r.code)
	}
	if want := "warning: cannot get the server version: no kubeconfig found; set KUBECONFIG, pass --kubeconfig, or create ~/.kube/config\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	if !strings.HasPrefix(r.stdout, "Client Version: ") || strings.Contains(r.stdout, "Server") {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__start_tug",
		"zsh":        "#compdef tug",
		"fish":       "complete -c tug",
		"powershell": "Register-ArgumentCompleter",
	} {
		r := execute(t, nil, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, marker) {
			t.Errorf("%s: exit %d, %q not in output", shell, r.code, marker)
		}
	}
}

func TestOptionsListsHiddenGlobalFlags(t *testing.T) {
	r := execute(t, nil, "options")
	for _, flag := range []string{"--token string", "-s, --server string", "--kubeconfig string", "--no-color"} {
		if !strings.Contains(r.stdout, flag) {
			t.Errorf("%q missing from tug options", flag)
		}
	}
	help := execute(t, nil, "version", "--help")
	if strings.Contains(help.stdout, "--token") {
		t.Error("advanced flags clutter every command's help")
	}
	// Hidden is not disabled.
	if r := execute(t, nil, "--token", "x", "--server", "https://127.0.0.1:1", "version", "--client"); r.code != 0 {
		t.Errorf("hidden global flags rejected: %d %s", r.code, r.stderr)
	}
}

func TestMain(m *testing.M) {
	// Colour and terminal detection come from the test streams, never from
	// the environment running the tests.
	os.Unsetenv("NO_COLOR")
	os.Exit(m.Run())
}

// Run as a kubectl plugin, the commands an error suggests say 'kubectl tug'.
func TestErrorHintsUseTheCommandNameTyped(t *testing.T) {
	isolate(t)
	ios, _, out, errOut := cli.TestIOStreams()
	f := cli.NewFactory(ios, "kubectl tug")
	r := executeWith(f, out, errOut, "node", "list", "--cluster", "nope")
	if r.code != 2 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "'tug ") || !strings.Contains(r.stderr, "'kubectl tug ") {
		t.Errorf("hint not rendered for the plugin: %q", r.stderr)
	}
}

func TestWithCommandName(t *testing.T) {
	msg := "app \"x\" not found; see 'tug app list'"
	if got := cli.WithCommandName(msg, "tug"); got != msg {
		t.Errorf("tug: %q", got)
	}
	if got := cli.WithCommandName(msg, "kubectl tug"); got != "app \"x\" not found; see 'kubectl tug app list'" {
		t.Errorf("plugin: %q", got)
	}
}
