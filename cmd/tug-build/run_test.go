package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testRegistry is an in-memory registry on a loopback address (so
// parseRef speaks plain HTTP to it); refuse makes it answer 403 to the
// requests it matches. The agent's registry credentials come from an
// empty Docker config.
func testRegistry(t *testing.T, refuse func(*http.Request) bool) string {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse != nil && refuse(r) {
			http.Error(w, "not for you", http.StatusForbidden)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// pushImage pushes img as ref.
func pushImage(t *testing.T, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
}

func pullImage(t *testing.T, ref string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// layerFiles are the regular files of a layer, by name.
func layerFiles(t *testing.T, l v1.Layer) map[string]string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: owner %d:%d, time %v; want root's and the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			out[h.Name] = string(b)
		}
	}
}

func skipWithBuilderScript(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/tug/build"); err == nil {
		t.Skip("this machine has a /tug/build, which the run subcommand would run")
	}
}

// The run subcommand unpacks the source, runs the Procfile's build: line
// in it, and pushes the run image plus one layer of the folder, its
// config starting the web process there. The same source gives the same
// image, and its second push sends only what the registry lacks.
func TestRunBuildsAndPushesTheApp(t *testing.T) {
	skipWithBuilderScript(t)
	host := testRegistry(t, nil)
	base, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	pushImage(t, host+"/base/run:v1", base)
	procfile := "# the app\nbuild: echo built-in-$TUG_APP_DIR > built.txt\nweb: ./serve --port $PORT\n"
	source := archive(t, entry{name: "Procfile", data: procfile}, entry{name: "lib/app.txt", data: "hello"})
	app := filepath.Join(t.TempDir(), "app")
	args := []string{"-repository", host + "/team/shop", "-run-image", host + "/base/run:v1", "-app", app, "-tag", "v1", "-work", t.TempDir()}

	first := runAgent(t, source, func() int { return run(args) })
	if first.code != 0 || !first.result.OK || first.result.LayerBytes == 0 || first.result.PushedBytes < first.result.LayerBytes {
		t.Fatalf("exit %d, result %+v, out:\n%s", first.code, first.result, strings.Join(first.out, "\n"))
	}
	for _, want := range []string{"-----> running the Procfile's build: echo built-in-$TUG_APP_DIR > built.txt", "-----> reading the run image " + host + "/base/run:v1"} {
		if !strings.Contains(strings.Join(first.out, "\n"), want) {
			t.Errorf("output lacks %q:\n%s", want, strings.Join(first.out, "\n"))
		}
	}
	img := pullImage(t, host+"/team/shop:v1")
	if d, _ := img.Digest(); first.result.Image != host+"/team/shop@"+d.String() {
		t.Errorf("result image %s, the tag names %s", first.result.Image, d)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.WorkingDir != app || cf.Config.Entrypoint != nil || !reflect.DeepEqual(cf.Config.Cmd, []string{"/bin/sh", "-c", "exec ./serve --port $PORT"}) ||
		cf.Config.Labels["dev.tug.procfile"] != procfile {
		t.Errorf("config: dir %q, entrypoint %q, cmd %q, labels %q", cf.Config.WorkingDir, cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Labels)
	}
	layers, _ := img.Layers()
	baseLayers, _ := base.Layers()
	if len(layers) != len(baseLayers)+1 {
		t.Fatalf("%d layers, want the run image's %d and the app's", len(layers), len(baseLayers))
	}
	in := strings.TrimPrefix(app, "/") + "/"
	files := layerFiles(t, layers[len(layers)-1])
	want := map[string]string{in + "Procfile": procfile, in + "lib/app.txt": "hello", in + "built.txt": "built-in-" + app + "\n"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("the app layer holds %q, want %q", files, want)
	}

	if err := os.RemoveAll(app); err != nil {
		t.Fatal(err)
	}
	again := runAgent(t, source, func() int { return run(args) })
	if again.code != 0 || again.result.Image != first.result.Image || again.result.PushedBytes >= first.result.LayerBytes {
		t.Errorf("the same source again: exit %d, image %s (first %s), pushed %d bytes (layer %d)",
			again.code, again.result.Image, first.result.Image, again.result.PushedBytes, first.result.LayerBytes)
	}
}

// Each way the run subcommand fails names its stage, with the build
// step's exit code, and reads stdin to its end.
func TestRunSaysWhichStageFailed(t *testing.T) {
	skipWithBuilderScript(t)
	host := testRegistry(t, func(r *http.Request) bool {
		return r.Method != http.MethodGet && r.Method != http.MethodHead && strings.HasPrefix(r.URL.Path, "/v2/team/locked/")
	})
	base, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	pushImage(t, host+"/base/run:v1", base)
	plain := archive(t, entry{name: "index.html", data: "hi"})
	for _, c := range []struct {
		name       string
		stdin      []byte
		repo, base string
		want       Result
		prefix     bool // want.Message is the message's start
	}{
		{"not an archive", []byte("junk"), "team/shop", "base/run:v1",
			Result{Stage: "unpack", Message: "reading the source: unexpected EOF"}, false},
		{"an archive that leaves the folder", archive(t, entry{name: "../x", data: "x"}), "team/shop", "base/run:v1",
			Result{Stage: "unpack", Message: "the source has a path that goes up, ../x"}, false},
		{"the build step fails", archive(t, entry{name: "Procfile", data: "build: echo failing; exit 3\n"}), "team/shop", "base/run:v1",
			Result{Stage: "build", ExitCode: 3, Message: "the build step failed (exit 3)"}, false},
		{"no run image", plain, "team/shop", "base/none:v1",
			Result{Stage: "image", Message: "reading the run image HOST/base/none:v1: "}, true},
		{"a bad run image", plain, "team/shop", "UPPER/x",
			Result{Stage: "image", Message: "--run-image HOST/UPPER/x: could not parse reference"}, true},
		{"a bad repository", plain, "UPPER/x", "base/run:v1",
			Result{Stage: "push", Message: "could not parse reference: HOST/UPPER/x:latest"}, false},
		{"the registry refuses the push", plain, "team/locked", "base/run:v1",
			Result{Stage: "push", Message: "POST http://HOST/v2/team/locked/blobs/uploads/"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"-repository", host + "/" + c.repo, "-run-image", host + "/" + c.base,
				"-app", filepath.Join(t.TempDir(), "app"), "-work", t.TempDir()}
			r := runAgent(t, c.stdin, func() int { return run(args) })
			out := strings.TrimRight(strings.Join(r.out, "\n"), "\n")
			if !strings.HasSuffix(out, "tug-build: "+r.result.Stage+": "+strings.TrimSuffix(r.result.Message, "\n")) {
				t.Errorf("the lines before the result do not end with the failure:\n%s", out)
			}
			got, want := r.result, c.want
			got.Message = strings.ReplaceAll(got.Message, host, "HOST")
			if got.Stage == "push" && got.LayerBytes > 0 {
				got.LayerBytes = 0 // the image was made
			}
			if c.prefix && strings.HasPrefix(got.Message, want.Message) {
				got.Message = want.Message
			}
			if r.code != 1 || !reflect.DeepEqual(got, want) {
				t.Errorf("exit %d, result %+v; want 1, %+v", r.code, r.result, c.want)
			}
		})
	}
}

// inspect says whether an image is a CNB builder, and what of it a
// platform needs, as its last line; an image it cannot read is an error
// in that line, not an exit code.
func TestInspect(t *testing.T) {
	host := testRegistry(t, nil)
	withConfig := func(labels map[string]string, env ...string) v1.Image {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cfg := cf.Config
		cfg.Labels, cfg.Env = labels, env
		if img, err = mutate.Config(img, cfg); err != nil {
			t.Fatal(err)
		}
		return img
	}
	md := `{"stack":{"runImage":{"image":"old/run"}},"images":[{"image":"example.com/run:v2"}],` +
		`"buildpacks":[{"id":"tug.test/shell","version":"0.1.0"}],"lifecycle":{"version":"0.20.1","apis":{"platform":{"supported":["0.12","0.13"]}}}}`
	pushImage(t, host+"/cnb/builder:v1", withConfig(map[string]string{labelBuilder: md}, "CNB_USER_ID=1001", "CNB_GROUP_ID=1000"))
	pushImage(t, host+"/plain/image:v1", withConfig(nil))
	pushImage(t, host+"/cnb/broken:v1", withConfig(map[string]string{labelBuilder: "{"}))
	for _, c := range []struct {
		image string
		want  Builder
	}{
		{"cnb/builder:v1", Builder{CNB: true, UID: 1001, GID: 1000, RunImage: "example.com/run:v2", PlatformAPIs: []string{"0.12", "0.13"},
			Lifecycle: "0.20.1", Buildpacks: []string{"tug.test/shell@0.1.0"}}},
		{"plain/image:v1", Builder{}},
		{"cnb/broken:v1", Builder{Error: "the builder's io.buildpacks.builder.metadata label: unexpected end of JSON input"}},
		{"cnb/none:v1", Builder{Error: "reading the builder HOST/cnb/none:v1: "}},
		{"UPPER/x", Builder{Error: "the builder HOST/UPPER/x: could not parse reference: HOST/UPPER/x"}},
	} {
		code, out := agentIO(t, nil, func() int { return inspect([]string{"-image", host + "/" + c.image}) })
		last, ok := strings.CutPrefix(strings.TrimSuffix(out, "\n"), InspectPrefix)
		var got Builder
		if !ok || json.Unmarshal([]byte(last), &got) != nil {
			t.Fatalf("%s: exit %d, output %q; want one inspect line", c.image, code, out)
		}
		got.Error = strings.ReplaceAll(got.Error, host, "HOST")
		if strings.HasSuffix(c.want.Error, ": ") && strings.HasPrefix(got.Error, c.want.Error) {
			got.Error = c.want.Error
		}
		if code != 0 || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: exit %d, %+v; want 0, %+v", c.image, code, got, c.want)
		}
	}
}
