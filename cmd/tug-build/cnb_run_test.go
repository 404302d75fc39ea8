package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tug.dev/tug/pkg/imagebuild/protocol"
)

// fakeCreator is the builder's lifecycle for the tests: it logs its
// arguments and CNB_PLATFORM_API, prints one line of each kind the agent
// counts, then exits with $FAKE_CREATOR_EXIT or writes the report of
// image $FAKE_CREATOR_DIGEST into its -layers folder.
const fakeCreator = `#!/bin/sh
echo "$CNB_PLATFORM_API $*" > "$FAKE_CREATOR_LOG"
layers= prev=
for a in "$@"; do
  [ "$prev" = -layers ] && layers=$a
  prev=$a
done
echo "===> RESTORING"
echo "Restoring data for \"tug.test/shell:cache\" from cache"
echo "===> EXPORTING"
echo "Reusing layer 'tug.test/shell:deps'" >&2
echo "Adding layer 'tug.test/shell:app'"
[ -n "$FAKE_CREATOR_EXIT" ] && exit "$FAKE_CREATOR_EXIT"
[ -n "$FAKE_CREATOR_DIGEST" ] && printf '[image]\n  tags = ["x"]\n  digest = "%s"\n' "$FAKE_CREATOR_DIGEST" > "$layers/report.toml"
exit 0
`

type cnbFixture struct {
	host, log   string
	lifecycle   string
	buildpacks  string
	dirs        map[string]string // app, layers, platform, work
	digest      string            // of the image the fake lifecycle reports
	imageLayers int
}

func newCNBFixture(t *testing.T) *cnbFixture {
	t.Helper()
	f := &cnbFixture{host: testRegistry(t, nil), lifecycle: t.TempDir(), buildpacks: t.TempDir(), log: filepath.Join(t.TempDir(), "creator.log")}
	if err := os.WriteFile(filepath.Join(f.lifecycle, "creator"), []byte(fakeCreator), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.buildpacks, "tug.test_shell", "0.1.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.dirs = map[string]string{}
	for _, d := range []string{"app", "layers", "platform", "work"} {
		f.dirs[d] = filepath.Join(t.TempDir(), d)
		if err := os.MkdirAll(f.dirs[d], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// the image the lifecycle "exported": pushed under another tag, so
	// the build's own tag names nothing yet (a first build)
	img := pushRandom(t, f.host+"/team/app:exported", nil, 2)
	d, _ := img.Digest()
	f.digest, f.imageLayers = d.String(), 2
	t.Setenv("FAKE_CREATOR_LOG", f.log)
	t.Setenv("FAKE_CREATOR_EXIT", "")
	t.Setenv("FAKE_CREATOR_DIGEST", f.digest)
	return f
}

func (f *cnbFixture) run(t *testing.T, stdin []byte) agentRun {
	t.Helper()
	b := &cnbBuild{repo: f.host + "/team/app", tag: "latest", runImage: "example.com/run:v1", cacheImage: f.host + "/team/app:cache",
		platformAPI: "0.12", appDir: f.dirs["app"], layersDir: f.dirs["layers"], platformDir: f.dirs["platform"], work: f.dirs["work"],
		insecure: multiFlag{f.host}, lifecycle: f.lifecycle, buildpacks: f.buildpacks}
	return runAgent(t, stdin, b.run)
}

// cnb reads the job header and the source, writes the build environment
// as platform files and the buildpacks asked for as order.toml, runs the
// builder's creator with them, and reports the image of the lifecycle's
// report with its process types, buildpacks and layer counts.
func TestCNBRunsTheLifecycle(t *testing.T) {
	f := newCNBFixture(t)
	job := protocol.EncodeJob(protocol.Job{BuildEnv: []string{"GREETING=hi there"}, Buildpacks: []string{"tug.test/shell"}})
	r := f.run(t, append(job, archive(t, entry{name: "index.html", data: "hi"})...))

	want := Result{OK: true, Image: f.host + "/team/app@" + f.digest, Processes: []string{"web"}, Buildpacks: []string{"tug.test/shell@0.1.0"},
		LayersAdded: 1, LayersReused: 1, LayersRestored: 1}
	upload := r.result.Upload
	r.result.Upload = nil
	if r.code != 0 || !reflect.DeepEqual(r.result, want) {
		t.Fatalf("exit %d, result %+v; want %+v\nout:\n%s", r.code, r.result, want, strings.Join(r.out, "\n"))
	}
	if upload == nil || upload.PreviousImage != "" || upload.NewLayers != f.imageLayers || upload.ReusedLayers != 0 {
		t.Errorf("upload %+v: a first build, want every one of %d layers new", upload, f.imageLayers)
	}
	if !strings.Contains(strings.Join(r.out, "\n"), "-----> running the builder's lifecycle: "+f.lifecycle+"/creator (Platform API 0.12)\n") {
		t.Errorf("output:\n%s", strings.Join(r.out, "\n"))
	}
	logged, _ := os.ReadFile(f.log)
	wantArgs := "0.12 -app " + f.dirs["app"] + " -layers " + f.dirs["layers"] + " -platform " + f.dirs["platform"] +
		" -run-image example.com/run:v1 -log-level info -cache-image " + f.host + "/team/app:cache -order " + f.dirs["work"] + "/order.toml" +
		" -insecure-registry " + f.host + " " + f.host + "/team/app:latest\n"
	if string(logged) != wantArgs {
		t.Errorf("creator ran with\n%s\nwant\n%s", logged, wantArgs)
	}
	if b, err := os.ReadFile(filepath.Join(f.dirs["platform"], "env", "GREETING")); err != nil || string(b) != "hi there" {
		t.Errorf("the build environment's file: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.dirs["app"], "index.html")); err != nil || string(b) != "hi" {
		t.Errorf("the source: %q %v", b, err)
	}
}

// Each way cnb fails names its stage (detect for a lifecycle that found
// no buildpack, naming the builder's), and reads stdin to its end.
func TestCNBSaysWhichStageFailed(t *testing.T) {
	source := archive(t, entry{name: "index.html", data: "hi"})
	withJob := func(j protocol.Job) []byte { return append(protocol.EncodeJob(j), source...) }
	for _, c := range []struct {
		name  string
		stdin []byte
		env   map[string]string
		want  Result
	}{
		{"no job header", source, nil, Result{Stage: "unpack", Message: "no job header on stdin (a client older than this agent?)"}},
		{"not an archive", append(protocol.EncodeJob(protocol.Job{}), "junk"...), nil,
			Result{Stage: "unpack", Message: "reading the source: unexpected EOF"}},
		{"a bad build environment", withJob(protocol.Job{BuildEnv: []string{"A/B=1"}}), nil,
			Result{Stage: "build", Message: `invalid build environment entry "A/B": want K=V`}},
		{"a buildpack the builder lacks", withJob(protocol.Job{Buildpacks: []string{"heroku/python"}}), nil,
			Result{Stage: "buildpack", Message: "the builder has no buildpack heroku/python (it has tug.test/shell@0.1.0)"}},
		{"nothing detected", withJob(protocol.Job{}), map[string]string{"FAKE_CREATOR_EXIT": "20"},
			Result{Stage: "detect", ExitCode: 20, Message: "no buildpack detected the app (the builder has tug.test/shell@0.1.0)"}},
		{"the lifecycle fails", withJob(protocol.Job{}), map[string]string{"FAKE_CREATOR_EXIT": "51"},
			Result{Stage: "build", ExitCode: 51, Message: "the lifecycle failed (exit 51)"}},
		{"no report", withJob(protocol.Job{}), map[string]string{"FAKE_CREATOR_DIGEST": ""},
			Result{Stage: "push", Message: "reading the lifecycle's report: "}},
		{"a reported image that is not there", withJob(protocol.Job{}), map[string]string{"FAKE_CREATOR_DIGEST": "sha256:" + strings.Repeat("0", 64)},
			Result{Stage: "image", Image: "HOST/team/app@sha256:" + strings.Repeat("0", 64),
				Message: "reading the built image HOST/team/app@sha256:" + strings.Repeat("0", 64) + ": "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newCNBFixture(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			r := f.run(t, c.stdin)
			got := r.result
			got.Message, got.Image = strings.ReplaceAll(got.Message, f.host, "HOST"), strings.ReplaceAll(got.Image, f.host, "HOST")
			if strings.HasSuffix(c.want.Message, ": ") && strings.HasPrefix(got.Message, c.want.Message) {
				got.Message = c.want.Message
			}
			got.LayersAdded, got.LayersReused, got.LayersRestored = 0, 0, 0
			if r.code != 1 || !reflect.DeepEqual(got, c.want) {
				t.Errorf("exit %d, result %+v; want 1, %+v", r.code, r.result, c.want)
			}
		})
	}
}
