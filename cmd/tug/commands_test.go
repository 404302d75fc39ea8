package main

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/cli/clitest"
)

// TestReadCommandsGolden runs the commands that read an app's settings
// against shopFixture and compares their piped output.
func TestReadCommandsGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"env-get", []string{"env", "get", "shop"}},
		{"env-get-values", []string{"env", "get", "shop", "--show-values"}},
		{"env-get-json", []string{"env", "get", "shop", "-o", "json"}},
		{"app-address", []string{"app", "address", "shop"}},
		{"pool-list", []string{"pool", "list"}},
		{"limit-list", []string{"app", "limit", "list", "shop"}},
		{"healthcheck-list", []string{"app", "healthcheck", "list", "shop"}},
		{"autoscale-list", []string{"app", "autoscale", "list", "shop"}},
		{"domain-list", []string{"domain", "list", "shop"}},
		{"allow-list", []string{"app", "allow", "list", "shop"}},
		{"registry-info", []string{"registry", "info", "shop"}},
		{"app-export", []string{"app", "export", "shop"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := shopFixture(t)
			r := p.run(t, false, c.args...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			clitest.Golden(t, "cmd-"+c.name, []byte(p.scrub(r.stdout)))
		})
	}
}

// TestEmptyListsSayWhatToDo: lists with nothing in them print nothing on
// stdout and a hint on stderr.
func TestEmptyListsSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"node", "list"}, "no nodes\n"},
		{[]string{"volume", "list"}, "no volumes in namespace \"dev\"; create one with 'tug volume create NAME --size 1Gi'\n"},
		{[]string{"node-container", "list"}, "no node containers; add one with 'tug node-container add NAME --image IMAGE'\n"},
		{[]string{"app", "list"}, "no apps in namespace \"dev\"; create one with 'tug app create NAME'\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			p := newPrinterFixture(t)
			r := p.run(t, false, c.args...)
			if r.code != 0 || r.stdout != "" || r.stderr != c.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want stderr %q", r.code, r.stdout, r.stderr, c.stderr)
			}
		})
	}
}

// TestCommandRefusals: bad input is a usage error (exit 2) with a message
// that says what is wrong, and the record is left alone.
func TestCommandRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"app", "limit", "set", "shop", "--cpu", "1"}, "error: which process? give -p PROCESS\n"},
		{[]string{"app", "healthcheck", "set", "shop", "--readiness", "tcp:80"}, "error: which process? give -p PROCESS\n"},
		{[]string{"app", "autoscale", "set", "shop", "--min", "1"}, "error: which process? give -p PROCESS\n"},
		{[]string{"app", "scale", "shop", "web=x"}, "error: invalid scale \"web=x\": \"x\" is not a unit count from 0 to 10000\n"},
		{[]string{"env", "set", "shop", "1A=b"}, "error: invalid config name \"1A\": use letters, digits and '_', not starting with a digit\n"},
		{[]string{"release", "rollback", "shop", "vx"}, "error: invalid release \"vx\": want a release number such as v3\n"},
		{[]string{"unit", "add", "shop", "x"}, "error: invalid unit count \"x\": want a whole number from 1 to 10000\n"},
		{[]string{"app", "pool", "set", "shop", "a b"}, "error: invalid pool \"a b\": use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit\n"},
		{[]string{"app", "routable", "shop", "maybe"}, "error: want on or off, not \"maybe\"\n"},
		{[]string{"app", "maintenance", "shop"}, "error: missing on|off: \"tug app maintenance\" takes APP on|off\n"},
		{[]string{"app", "remove", "shop"}, "error: refusing to remove app \"shop\" and all its units, releases and config without confirmation: pass --yes\n"},
		{[]string{"app", "create", "Shop"}, "error: invalid app name"},
		{[]string{"app", "info", "a_b"}, "error: invalid app name"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			p := shopFixture(t)
			before, _ := p.store.GetApp(context.Background(), "shop")
			r := p.run(t, false, c.args...)
			if r.code != 2 || !strings.HasPrefix(r.stderr, c.want) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", r.code, r.stdout, r.stderr, c.want)
			}
			after, err := p.store.GetApp(context.Background(), "shop")
			if err != nil || after.Release != before.Release || after.Maintenance != before.Maintenance || len(after.Processes) != len(before.Processes) {
				t.Errorf("a refused command changed the app: %+v (%v)", after, err)
			}
		})
	}
}

func TestAppCreate(t *testing.T) {
	p := newPrinterFixture(t)
	r := p.run(t, false, "app", "create", "blog", "--team", "words", "--description", "the blog")
	if r.code != 0 || r.stdout != "app \"blog\" created in namespace \"dev\"; deploy it from its source folder with 'tug app deploy blog --builder IMAGE --repository REPO', or an image with '--image IMAGE'\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	a, err := p.store.GetApp(context.Background(), "blog")
	if err != nil || a.Team != "words" || a.Description != "the blog" || a.Release != 0 {
		t.Errorf("stored %+v, %v", a, err)
	}
	r = p.run(t, false, "app", "create", "blog")
	if r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("second create: exit %d, stderr %q", r.code, r.stderr)
	}
	r = p.run(t, false, "app", "create", "wiki", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"name": "wiki"`) || !strings.Contains(r.stdout, `"namespace": "dev"`) {
		t.Errorf("create -o json: exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestUnitKill(t *testing.T) {
	p := unitsFixture(t)
	r := p.run(t, false, "unit", "kill", "shop", "shop-web-7d9f-b2")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := p.cs.CoreV1().Pods("dev").Get(context.Background(), "shop-web-7d9f-b2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the unit is still there: %v", err)
	}
	r = p.run(t, false, "unit", "kill", "shop", "blog-web-66f-q1")
	if r.code != 1 || !strings.HasPrefix(r.stderr, `error: unit "blog-web-66f-q1" not found in namespace "dev"; units of app "shop": shop-web-7d9f-a1, shop-worker-5c4-x1, shop-worker-5c4-x2, shop-run-x7k2q`) {
		t.Errorf("another app's unit: exit %d, stderr %q", r.code, r.stderr)
	}
	list, err := p.cs.CoreV1().Pods("dev").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 6 {
		t.Errorf("pods left: %v, %v; want the other 6", len(list.Items), err)
	}
	// A one-off run is stopped, not replaced.
	r = p.run(t, false, "unit", "kill", "shop", "shop-run-x7k2q")
	if r.code != 0 || r.stderr != "run shop-run-x7k2q stopped and removed\n" {
		t.Errorf("kill a run: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := p.cs.CoreV1().Pods("dev").Get(context.Background(), "shop-run-x7k2q", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the run is still there: %v", err)
	}
}
