package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/sourcedeploy"
)

// TestDeployRefusesABadRepositoryBeforeAnything (issue 22 item 9): a
// repository with a tag, a digest or capitals is a usage error of the
// plan, before a build pod or a failed release is made. (Before, the agent
// refused it in the pod after the build step: exit 16 and a failed
// release; the short --build-timeout bounds that run on the fake cluster,
// whose pods never start.)
func TestDeployRefusesABadRepositoryBeforeAnything(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "index.html"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ repo, want string }{
		{"reg.example.com/shop:v2", "has a tag (:v2)"},
		{"reg.example.com/shop@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "has a digest"},
		{"reg.example.com/Team/shop", "has capitals"},
	} {
		t.Run(c.want, func(t *testing.T) {
			p := newPrinterFixture(t)
			p.mustCreateApp(t, &app.App{Name: "shop", CreatedAt: p.ago("created", time.Hour)})
			before := kubetest.Objects(t, p.cs, "dev")
			r := p.run(t, false, "app", "deploy", "shop", "--source", src, "--builder", "reg.example.com/builder:v1",
				"--repository", c.repo, "--build-timeout", "2s")
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "--repository") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming --repository and %q", r.code, r.stderr, c.want)
			}
			if d := kubetest.Diff(before, kubetest.Objects(t, p.cs, "dev")); len(d) > 0 {
				t.Errorf("a bad --repository changed the cluster: %q", d)
			}
		})
	}
}

// TestDeployFromSourceDryRunSaysWhatItWouldBuild: a dry run from source
// names the folder it packed on stderr and, on stdout, what it would build
// with (the app's remembered builder, or BuildKit for a Dockerfile) and
// where it would push; nothing is built, stored or applied.
func TestDeployFromSourceDryRunSaysWhatItWouldBuild(t *testing.T) {
	plain, docker := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, "index.html"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docker, "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, src, want string }{
		{"builder", plain, "dry run: would build shop from " + plain + " with builder reg.example.com/builder:v1 on run image reg.example.com/builder:v1, push to reg.example.com/shop and deploy it; nothing built\n"},
		{"dockerfile", docker, "dry run: would build shop from " + docker + " with BuildKit (Dockerfile), push to reg.example.com/shop and deploy it; nothing built\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPrinterFixture(t)
			build := &app.BuildSettings{Builder: "reg.example.com/builder:v1", Repository: "reg.example.com/shop"}
			if c.src == docker {
				build.Builder = ""
			}
			p.mustCreateApp(t, &app.App{Name: "shop", CreatedAt: p.ago("created", time.Hour), Build: build})
			before := kubetest.Objects(t, p.cs, "dev")
			r := p.run(t, false, "app", "deploy", "shop", "--source", c.src, "--dry-run")
			if r.code != 0 || r.stdout != c.want || !strings.HasPrefix(r.stderr, "source: "+c.src+", 1 files, ") {
				t.Errorf("exit %d\nstdout %q\nwant   %q\nstderr %q", r.code, r.stdout, c.want, r.stderr)
			}
			if d := kubetest.Diff(before, kubetest.Objects(t, p.cs, "dev")); len(d) > 0 {
				t.Errorf("a dry run changed the cluster: %q", d)
			}
		})
	}
}

// TestPrintBuildFailure: a failed build's report names its stage, its last
// log lines made safe for a terminal, and the release that records it (or
// why none does); other errors print nothing here.
func TestPrintBuildFailure(t *testing.T) {
	failed := &imagebuild.Error{Stage: "build", Message: "step 2 exited 1", Lines: []string{"npm ERR! \x1b[31mboom"}}
	var w bytes.Buffer
	printBuildFailure(&w, &sourcedeploy.CancelledError{App: "shop", Err: &sourcedeploy.BuildFailedError{Err: failed, Release: 4}})
	want := "build failed (build): step 2 exited 1\n  last log line:\n    | npm ERR! ^[[31mboom\n" +
		"release v4 failed; nothing was deployed, the current release keeps running\n"
	if got := w.String(); got != want {
		t.Errorf("report\n%q\nwant\n%q", got, want)
	}
	w.Reset()
	printBuildFailure(&w, &sourcedeploy.BuildFailedError{Err: &imagebuild.Error{Stage: "push", Message: "denied"}, RecordErr: errors.New("app gone\nfor good")})
	if want := "build failed (push): denied\nnothing was deployed, the current release keeps running (recording the failed release: app gone for good)\n"; w.String() != want {
		t.Errorf("report %q, want %q", w.String(), want)
	}
	w.Reset()
	printBuildFailure(&w, errors.New("no repository"))
	if w.Len() != 0 {
		t.Errorf("another error printed %q", w.String())
	}
}
