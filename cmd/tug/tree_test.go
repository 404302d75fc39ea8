package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
)

// Tests over the whole command tree: rules every command keeps, so a new
// command cannot forget them.

func commandTree(t *testing.T) []*cobra.Command {
	t.Helper()
	ios, _, _, _ := cli.TestIOStreams()
	root := newRootCmd(cli.NewFactory(ios, "tug"))
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return all
}

func isLeaf(c *cobra.Command) bool { return !c.HasSubCommands() && c.Name() != "help" }

func TestEveryLeafHasAnExample(t *testing.T) {
	for _, c := range commandTree(t) {
		if isLeaf(c) && strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		for _, line := range strings.Split(c.Example, "\n") {
			if line != "" && !strings.HasPrefix(line, "  ") {
				t.Errorf("%q: example line %q is not indented by two spaces", c.CommandPath(), line)
			}
		}
	}
}

// TestVerbAliases: kubectl users type delete and ls; tsuru and Heroku users
// type rm.
func TestVerbAliases(t *testing.T) {
	for _, c := range commandTree(t) {
		var want []string
		switch c.Name() {
		case "remove":
			want = []string{"rm", "delete"}
		case "list":
			want = []string{"ls"}
		}
		for _, a := range want {
			if !slices.Contains(c.Aliases, a) {
				t.Errorf("%q has no alias %q (aliases %q)", c.CommandPath(), a, c.Aliases)
			}
		}
	}
}

// TestArgumentErrorsInTugsWords: every command's argument check is a usage
// error in tug's words, never cobra's "accepts 1 arg(s)".
func TestArgumentErrorsInTugsWords(t *testing.T) {
	many := make([]string, 30)
	for i := range many {
		many[i] = "x"
	}
	for _, c := range commandTree(t) {
		if c.Args == nil {
			if isLeaf(c) {
				t.Errorf("%q has no Args check", c.CommandPath())
			}
			continue
		}
		for _, args := range [][]string{nil, many} {
			err := c.Args(c, args)
			if err == nil {
				continue
			}
			if !inputerr.Is(err) || strings.Contains(err.Error(), "arg(s)") {
				t.Errorf("%q with %d arguments: %v (usage error: %v)", c.CommandPath(), len(args), err, inputerr.Is(err))
			}
		}
	}
}

// TestDidYouMeanAtEveryLevel: a typo of any subcommand, under any group,
// suggests it.
func TestDidYouMeanAtEveryLevel(t *testing.T) {
	for _, group := range commandTree(t) {
		for _, sub := range group.Commands() {
			if !sub.IsAvailableCommand() || len(sub.Name()) < 4 {
				continue
			}
			typo := sub.Name()[:1] + sub.Name()[2:] // "list" -> "lst"
			err := group.Args(group, []string{typo})
			if !slices.Contains(inputerr.Suggest(err), sub.Name()) {
				t.Errorf("%s %s: suggestions %q, want %q", group.CommandPath(), typo, inputerr.Suggest(err), sub.Name())
			}
		}
	}
}

// TestPluginHelpSaysKubectlTug: run as kubectl-tug, examples and hints in
// help read 'kubectl tug ...'.
func TestPluginHelpSaysKubectlTug(t *testing.T) {
	isolate(t)
	ios, _, out, errOut := cli.TestIOStreams()
	r := executeWith(cli.NewFactory(ios, "kubectl tug"), out, errOut, "env", "set", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "\n  kubectl tug env set shop LOG_LEVEL=debug\n") ||
		!strings.Contains(r.stdout, "| kubectl tug env set shop DATABASE_URL=@-") || strings.Contains(r.stdout, "\n  tug ") {
		t.Errorf("exit %d, help:\n%s", r.code, r.stdout)
	}
}

// TestOutputNameAndTemplates: lists print KIND/NAME with -o name, and every
// -o json command takes jsonpath and go-template over the same JSON.
func TestOutputNameAndTemplates(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"app", "list", "-o", "name"}, "app/shop\n"},
		{[]string{"release", "list", "shop", "-o", "name"}, "release/v3\nrelease/v2\nrelease/v1\n"},
		{[]string{"app", "limit", "list", "shop", "-o", "name"}, "process/clock\nprocess/web\nprocess/worker\n"},
		{[]string{"app", "list", "-o", "jsonpath={[*].name}"}, "shop"},
		{[]string{"app", "info", "shop", "-o", "jsonpath={.name}"}, "shop"},
		{[]string{"release", "list", "shop", "-o", "go-template={{range .}}v{{.version}} {{end}}"}, "v3 v2 v1 "},
		{[]string{"env", "get", "shop", "-o", "jsonpath={[*].name}"}, "DATABASE_URL PORT"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			p := shopFixture(t)
			r := p.run(t, false, c.args...)
			if r.code != 0 || r.stdout != c.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, c.want)
			}
		})
	}
	p := shopFixture(t)
	if r := p.run(t, false, "app", "info", "shop", "-o", "name"); r.code != 2 {
		t.Errorf("-o name on a command that is not a list: exit %d, stderr %q; want 2", r.code, r.stderr)
	}
}

// TestDynamicCompletion goes through cobra's __complete, as the shell
// scripts do, against the fake cluster.
func TestDynamicCompletion(t *testing.T) {
	p := unitsFixture(t)
	for _, j := range []struct{ app, name, schedule string }{{"shop", "report", "0 3 * * *"}, {"shop", "rotate", "@daily"}, {"blog", "digest", "@weekly"}} {
		p.add(t, &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: render.CronJobName(j.app, j.name), Namespace: "dev", Labels: render.JobLabels(j.app, j.name)},
			Spec:       batchv1.CronJobSpec{Schedule: j.schedule},
		})
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"app", "info", ""}, "blog\nshop\n:4\n"},
		{[]string{"app", "info", "s"}, "shop\n:4\n"},
		{[]string{"unit", "kill", "shop", ""}, "shop-web-7d9f-a1\tweb started\nshop-web-7d9f-b2\tweb crashed\nshop-worker-5c4-x1\tworker pending\nshop-worker-5c4-x2\tworker error\nshop-run-x7k2q\trun started\n:4\n"},
		{[]string{"unit", "list", "shop", "-p", ""}, "web\t2 units\nworker\t2 units\n:4\n"},
		{[]string{"logs", "shop", "-p", "worker", "-u", ""}, "shop-worker-5c4-x1\tworker pending\nshop-worker-5c4-x2\tworker error\n:4\n"},
		{[]string{"app", "maintenance", "shop", ""}, "on\noff\n:4\n"},
		{[]string{"job", "run", "shop", ""}, "report\t0 3 * * *\nrotate\t@daily\n:4\n"},
		{[]string{"job", "logs", "shop", "ro"}, "rotate\t@daily\n:4\n"},
		{[]string{"job", "remove", "blog", ""}, "digest\t@weekly\n:4\n"},
		{[]string{"job", "info", "nope", ""}, ":4\n"},
		{[]string{"app", "create", ""}, ":4\n"},
		{[]string{"unit", "kill", "shop", "x", ""}, ":4\n"},
		// An app that is not there: nothing, and no error.
		{[]string{"unit", "kill", "nope", ""}, ":4\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := p.run(t, false, append([]string{"__complete"}, c.args...)...)
			if r.code != 0 || r.stdout != c.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, c.want)
			}
		})
	}
}

// TestEveryAppArgumentCompletes: a command that takes an app, unit,
// release, job, node, pool, volume or cluster completes it.
func TestEveryAppArgumentCompletes(t *testing.T) {
	for _, c := range commandTree(t) {
		if !isLeaf(c) {
			continue
		}
		for _, k := range argKinds(c) {
			switch k {
			case argApp, argUnit, argRelease, argJob, argNode, argPool, argVolume, argCluster:
				if c.ValidArgsFunction == nil {
					t.Errorf("%q takes a %s but completes nothing", c.CommandPath(), k)
				}
			}
		}
	}
}

// useWords are the argument words of a Use line, for checking what a
// command declares against its help: "kill APP UNIT" -> APP UNIT;
// "rollback APP [vN]" -> APP vN. They end at the first flag, "--" or a
// repeated word ("KEY...").
func useWords(use string) []string {
	var words []string
	for _, w := range strings.Fields(use)[1:] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[-") || strings.Contains(w, "...") {
			break
		}
		words = append(words, strings.Trim(w, "[]"))
	}
	return words
}

// What each command declares about its arguments (traits.go), which
// routing, deletion safety and completion read, says what its help says:
// one declared kind per argument word of its Use line, of a kind the word
// can name; a command line after "--" declared last. And a command that
// takes an app and removes, unsets, unbinds or kills declares that it
// deletes, so routing refuses it while a cluster does not answer.
func TestCommandsDeclareTheirArguments(t *testing.T) {
	words := map[string][]argKind{
		"APP": {argApp}, "UNIT": {argUnit}, "vN": {argRelease}, "NODE": {argNode}, "POOL": {argPool},
		"NAME": {argNewName, argVolume, argService, argCluster, argNodeContainer, argJob}, "HOST": {argHost}, "KEY": {argKey},
		"ADDRESS": {argAddress}, "SUBJECT": {argSubject}, "N": {argCount}, "on|off": {argOnOff}, "SHELL": {argShell}, "DIR": {argDir},
		"SRC": {argApp}, "DST": {argApp}, "PIPELINE": {argPipeline}, "STAGE...": {argStage}, "STAGE": {argStage},
	}
	for _, c := range commandTree(t) {
		if !isLeaf(c) {
			continue
		}
		kinds := argKinds(c)
		if strings.Contains(c.Use, " -- ") {
			if !passesCommandLine(c) {
				t.Errorf("%q takes a command line (%q) but does not declare argCommandLine", c.CommandPath(), c.Use)
				continue
			}
			kinds = kinds[:len(kinds)-1]
		} else if passesCommandLine(c) {
			t.Errorf("%q declares a command line its help does not show", c.CommandPath())
		}
		w := useWords(c.Use)
		if len(w) != len(kinds) {
			t.Errorf("%q: Use %q has arguments %v, declared %v (argsAre)", c.CommandPath(), c.Use, w, kinds)
			continue
		}
		for i, word := range w {
			if !slices.Contains(words[word], kinds[i]) {
				t.Errorf("%q: argument %s declared as %q", c.CommandPath(), word, kinds[i])
			}
		}
		switch c.Name() {
		case "remove", "unset", "unbind", "kill":
			if takesApp(c) && !deletes(c) {
				t.Errorf("%q takes an app and %ss, but is not declared deleting", c.CommandPath(), c.Name())
			}
		}
	}
}

// Every command that takes an app's deploy lock can wait for it
// (--wait-lock, declared by takesLock): CI jobs that overlap queue instead
// of failing. Commands with rollout flags take the lock; so do these.
func TestLockTakersCanWaitForTheLock(t *testing.T) {
	others := []string{"tug app remove", "tug domain add", "tug domain remove", "tug cert add", "tug cert remove",
		"tug app allow add", "tug app allow remove", "tug app maintenance", "tug app routable"}
	found := 0
	for _, c := range commandTree(t) {
		lock := c.Annotations[annotationLocks] == "true"
		appCmd := !strings.HasPrefix(c.CommandPath(), "tug node-container")
		if (appCmd && c.Flags().Lookup("no-wait") != nil || slices.Contains(others, c.CommandPath())) && !lock {
			t.Errorf("%s takes the app's lock but has no --wait-lock (takesLock)", c.CommandPath())
		}
		if lock {
			found++
			if c.Flags().Lookup("wait-lock") == nil {
				t.Errorf("%s is marked as taking the lock but has no --wait-lock", c.CommandPath())
			}
		}
	}
	if found < len(others) {
		t.Errorf("only %d commands take the lock", found)
	}
}
