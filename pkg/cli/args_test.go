package cli

import (
	"errors"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/inputerr"
)

func TestExactArgs(t *testing.T) {
	cmd := &cobra.Command{Use: "info"}
	v := ExactArgs("APP")
	if err := v(cmd, []string{"web"}); err != nil {
		t.Errorf("one argument: %v", err)
	}
	for args, want := range map[*[]string]string{
		{}:             `missing APP: "info" takes APP`,
		{"web", "api"}: `unexpected argument "api": "info" takes APP`,
	} {
		err := v(cmd, *args)
		if !inputerr.Is(err) || err.Error() != want {
			t.Errorf("%q: got %v, want usage error %q", *args, err, want)
		}
	}
}

func TestOneOfArgs(t *testing.T) {
	v := OneOfArgs("SHELL", "bash", "zsh")
	cmd := &cobra.Command{Use: "completion"}
	if err := v(cmd, []string{"zsh"}); err != nil {
		t.Errorf("zsh: %v", err)
	}
	err := v(cmd, []string{"tcsh"})
	if !inputerr.Is(err) || err.Error() != `unknown shell "tcsh": must be one of bash, zsh` {
		t.Errorf("tcsh: got %v", err)
	}
}

func TestGroupArgsSuggestsCommands(t *testing.T) {
	root := &cobra.Command{Use: "tug", Args: GroupArgs, RunE: GroupRunE}
	root.SuggestionsMinimumDistance = 2
	root.AddCommand(&cobra.Command{Use: "version", Run: func(*cobra.Command, []string) {}})
	root.AddCommand(&cobra.Command{Use: "doctor", Run: func(*cobra.Command, []string) {}})
	err := GroupArgs(root, []string{"verison"})
	var ue *inputerr.Error
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want usage error", err)
	}
	if !reflect.DeepEqual(ue.Suggestions, []string{"version"}) {
		t.Errorf("suggestions %q, want [version]", ue.Suggestions)
	}
	if GroupArgs(root, nil) != nil {
		t.Error("no arguments must be fine")
	}
}

func TestFlagErrorFuncSuggestsFlags(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().Bool("client", false, "")
	cmd.Flags().String("output", "", "")
	cmd.Flags().Bool("secret", false, "")
	_ = cmd.Flags().MarkDeprecated("secret", "gone")
	cmd.Flags().Bool("token", false, "")
	_ = cmd.Flags().MarkHidden("token")
	err := cmd.ParseFlags([]string{"--clinet"})
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		t.Fatalf("parse: %v", err)
	}
	var ue *inputerr.Error
	if !errors.As(FlagErrorFunc(cmd, err), &ue) {
		t.Fatal("not a usage error")
	}
	if !reflect.DeepEqual(ue.Suggestions, []string{"--client"}) {
		t.Errorf("suggestions %q, want [--client]", ue.Suggestions)
	}
	if s := suggestFlags(cmd, "secre"); len(s) != 0 {
		t.Errorf("deprecated flags must not be suggested, got %q", s)
	}
	if s := suggestFlags(cmd, "tokn"); !reflect.DeepEqual(s, []string{"--token"}) {
		t.Errorf("hidden flags still work and should be suggested, got %q", s)
	}
	if s := suggestFlags(cmd, "out"); !reflect.DeepEqual(s, []string{"--output"}) {
		t.Errorf("prefix: got %q", s)
	}
	// release promote --to x suggested --as, --token and --v
	cmd.Flags().String("as", "", "")
	cmd.Flags().String("v", "", "")
	if s := suggestFlags(cmd, "to"); len(s) != 0 {
		t.Errorf("a two-letter name is not close to --as, --v or --token: got %q", s)
	}
}

func TestLevenshtein(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "abc", 3}, {"kitten", "sitting", 3}, {"Client", "client", 0}, {"clinet", "client", 2}} {
		if got := levenshtein(c.a, c.b); got != c.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestArgsNameWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		spec []string
		args []string
		want string
	}{
		{[]string{"APP", "KEY..."}, []string{"shop"}, `missing KEY: "x" takes APP KEY...`},
		{[]string{"APP", "KEY..."}, nil, `missing APP: "x" takes APP KEY...`},
		{[]string{"APP", "KEY..."}, []string{"shop", "A", "B", "C"}, ""},
		{[]string{"APP", "[vN]"}, []string{"shop"}, ""},
		{[]string{"APP", "[vN]"}, []string{"shop", "v1", "v2"}, `unexpected argument "v2": "x" takes APP [vN]`},
		{[]string{"[APP]"}, nil, ""},
		{[]string{"[APP]"}, []string{"a", "b"}, `unexpected argument "b": "x" takes [APP]`},
		{[]string{"APP", "[KEY=VALUE...]"}, []string{"shop"}, ""},
		{[]string{"APP", "[KEY=VALUE...]"}, []string{"shop", "A=1", "B=2"}, ""},
	} {
		err := Args(c.spec...)(&cobra.Command{Use: "x"}, c.args)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q %q: %v", c.spec, c.args, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || !inputerr.Is(err) {
			t.Errorf("%q %q: got %v, want usage error %q", c.spec, c.args, err, c.want)
		}
	}
}

func TestGroupArgsSuggestsBelowTheRoot(t *testing.T) {
	root := &cobra.Command{Use: "tug", Args: GroupArgs, RunE: GroupRunE}
	app := &cobra.Command{Use: "app", Args: GroupArgs, RunE: GroupRunE}
	root.AddCommand(app)
	app.AddCommand(&cobra.Command{Use: "list", Run: func(*cobra.Command, []string) {}})
	var ue *inputerr.Error
	if !errors.As(GroupArgs(app, []string{"lst"}), &ue) || !reflect.DeepEqual(ue.Suggestions, []string{"list"}) {
		t.Errorf("got %v, want a usage error suggesting list", ue)
	}
}

func TestExampleWithCommandName(t *testing.T) {
	ex := "  tug env set shop A=1\n  vault read x | tug env set shop B=@-\n  source <(tug completion bash)\n  echo $(tug app list -o name)\n  mytug app list"
	want := "  kubectl tug env set shop A=1\n  vault read x | kubectl tug env set shop B=@-\n  source <(kubectl tug completion bash)\n  echo $(kubectl tug app list -o name)\n  mytug app list"
	if got := ExampleWithCommandName(ex, "kubectl tug"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := ExampleWithCommandName(ex, "tug"); got != ex {
		t.Errorf("tug must leave examples alone, got\n%s", got)
	}
}

// TestGroupSuggestsDeepCommands: a word a command two levels down names in
// its SuggestFor is suggested by its full path, and on a group a word
// before an unknown flag is reported as the unknown command.
func TestGroupSuggestsDeepCommands(t *testing.T) {
	root := &cobra.Command{Use: "tug", Args: GroupArgs, RunE: GroupRunE}
	app := &cobra.Command{Use: "app", Args: GroupArgs, RunE: GroupRunE}
	app.AddCommand(&cobra.Command{Use: "deploy APP", SuggestFor: []string{"deploy", "push"}, Run: func(*cobra.Command, []string) {}})
	root.AddCommand(app)
	var ue *inputerr.Error
	if err := GroupArgs(root, []string{"push", "shop"}); !errors.As(err, &ue) || !reflect.DeepEqual(ue.Suggestions, []string{"tug app deploy"}) {
		t.Errorf("push: got %v (suggestions %q), want tug app deploy", err, ue.Suggestions)
	}
	err := root.ParseFlags([]string{"deploy", "shop", "--image", "x"})
	if err == nil {
		t.Fatal("--image parsed on the root")
	}
	err = FlagErrorFunc(root, err)
	if !errors.As(err, &ue) || err.Error() != `unknown command "deploy" for "tug"` || !reflect.DeepEqual(ue.Suggestions, []string{"tug app deploy"}) {
		t.Errorf("deploy --image: got %v (suggestions %q)", err, ue.Suggestions)
	}
	// A command that is not a group keeps the flag error.
	leaf := &cobra.Command{Use: "x", Run: func(*cobra.Command, []string) {}}
	err = leaf.ParseFlags([]string{"word", "--image", "x"})
	if err = FlagErrorFunc(leaf, err); err.Error() != "unknown flag: --image" {
		t.Errorf("leaf: got %v", err)
	}
}
