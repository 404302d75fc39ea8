// Command cnb makes the local cluster's Cloud Native Buildpacks test
// builder and pushes it to the local registry (test/cluster/cluster.sh
// ensure-cnb-builder):
//
//	go run ./test/images/cnb -registry HOST:PORT -lifecycle DIR
//
// The builder is the registry's tug/busybox:v1 (the run image too) plus one
// layer: the real lifecycle (DIR holds `lifecycle` and `launcher`, built by
// test/images/lifecycle/build.sh) under /cnb/lifecycle with the phases as
// symlinks, two shell buildpacks of the tests' own, /cnb/order.toml and
// /cnb/run.toml, a user cnb (1000:1000) in /etc/passwd, and the labels and
// environment a platform reads (io.buildpacks.builder.metadata,
// io.buildpacks.buildpack.order, CNB_USER_ID, CNB_GROUP_ID). It prints the
// builder's reference by digest: HOST:PORT/tug/cnb-builder@sha256:...
//
// Buildpacks (Buildpack API 0.10):
//   - tug.test/shell (in the order): detects message.txt; writes a cached
//     launch layer "tools" (reused when the cache has it) and a launch
//     layer "web" with public/index.html from message.txt, the build
//     environment's GREETING and extra.txt when present; process types web
//     (busybox httpd on $PORT) and worker.
//   - tug.test/extra (not in the order; --buildpack picks it): writes
//     extra.txt into the app folder.
//
// With -agent PATH it also pushes an image holding that build agent
// (cmd/tug-build) as HOST:PORT/tug/cnb-agent and prints its reference, so
// a running cluster can try an agent newer than the one it was started with
// (TUG_BUILD_AGENT_IMAGE).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"tug.dev/tug/test/images/layer"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The APIs the test builder declares: those of lifecycle v0.21.0.
var (
	platformAPIs  = []string{"0.7", "0.8", "0.9", "0.10", "0.11", "0.12", "0.13", "0.14", "0.15"}
	buildpackAPIs = []string{"0.7", "0.8", "0.9", "0.10", "0.11", "0.12"}
)

const (
	uid        = 1000
	buildpacks = "/cnb/buildpacks"
	version    = "0.1.0"
)

type file = layer.File

func main() {
	reg := flag.String("registry", "", "the local registry, HOST:PORT")
	lc := flag.String("lifecycle", "", "folder holding the lifecycle and launcher binaries")
	lcVersion := flag.String("lifecycle-version", "0.21.0", "the lifecycle's version, for its descriptor")
	agent := flag.String("agent", "", "also push this build agent binary as tug/cnb-agent")
	flag.Parse()
	if *reg == "" || (*lc == "" && *agent == "") {
		fmt.Fprintln(os.Stderr, "usage: cnb -registry HOST:PORT -lifecycle DIR [-agent PATH]")
		os.Exit(2)
	}
	if *lc != "" {
		ref, err := pushBuilder(*reg, *lc, *lcVersion)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cnb:", err)
			os.Exit(1)
		}
		fmt.Println(ref)
	}
	if *agent != "" {
		ref, err := pushAgent(*reg, *agent)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cnb:", err)
			os.Exit(1)
		}
		fmt.Println(ref)
	}
}

func pushBuilder(reg, lc, lcVersion string) (string, error) {
	runImage := reg + "/tug/busybox:v1"
	baseRef, err := name.ParseReference(runImage, name.Insecure)
	if err != nil {
		return "", err
	}
	base, err := remote.Image(baseRef)
	if err != nil {
		return "", fmt.Errorf("reading the run image %s (cluster.sh ensure-registry pushes it): %w", runImage, err)
	}
	files, err := builderFiles(lc, lcVersion, runImage)
	if err != nil {
		return "", err
	}
	img, err := image(base, files, func(cfg *v1.Config) {
		cfg.Env = []string{"PATH=/cnb/process:/cnb/lifecycle:/bin", fmt.Sprintf("CNB_USER_ID=%d", uid), fmt.Sprintf("CNB_GROUP_ID=%d", uid)}
		cfg.User = fmt.Sprintf("%d:%d", uid, uid)
		cfg.WorkingDir = "/layers"
		cfg.Cmd, cfg.Entrypoint = []string{"/bin/sh"}, nil
		cfg.Labels = map[string]string{
			"io.buildpacks.builder.metadata": builderMetadata(lcVersion, runImage),
			"io.buildpacks.buildpack.order":  `[{"group":[{"id":"tug.test/shell","version":"` + version + `"}]}]`,
			"io.buildpacks.buildpack.layers": "{}",
		}
	})
	if err != nil {
		return "", err
	}
	return push(reg+"/tug/cnb-builder:v1", img)
}

func pushAgent(reg, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	img, err := image(empty.Image, []file{{Name: "tug-build", Mode: 0o755, Data: data}}, func(cfg *v1.Config) { cfg.Cmd = []string{"/tug-build"} })
	if err != nil {
		return "", err
	}
	return push(reg+"/tug/cnb-agent:dev", img)
}

// image is base plus a layer of files, its config changed by edit.
func image(base v1.Image, files []file, edit func(*v1.Config)) (v1.Image, error) {
	img, err := appendLayer(base, files)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg := cf.Config.DeepCopy()
	edit(cfg)
	return mutate.Config(img, *cfg)
}

func push(ref string, img v1.Image) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().Name() + "@" + d.String(), nil
}

var epoch = time.Unix(0, 0).UTC()

// appendLayer adds one layer of files, in name order with times zeroed,
// so the same inputs give the same digest.
func appendLayer(base v1.Image, files []file) (v1.Image, error) {
	data, err := layer.Tar(files)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	return mutate.Append(base, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: "tug test/images/cnb", Created: v1.Time{Time: epoch}}})
}

func builderFiles(lc, lcVersion, runImage string) ([]file, error) {
	lifecycle, err := os.ReadFile(filepath.Join(lc, "lifecycle"))
	if err != nil {
		return nil, err
	}
	launcher, err := os.ReadFile(filepath.Join(lc, "launcher"))
	if err != nil {
		return nil, err
	}
	files := []file{
		{Name: "cnb", Mode: 0o755, Dir: true},
		{Name: "cnb/lifecycle", Mode: 0o755, Dir: true},
		{Name: "cnb/lifecycle/lifecycle", Mode: 0o755, Data: lifecycle},
		{Name: "cnb/lifecycle/launcher", Mode: 0o755, Data: launcher},
		{Name: "cnb/lifecycle/lifecycle.toml", Mode: 0o644, Data: []byte(lifecycleDescriptor(lcVersion))},
		{Name: "cnb/buildpacks", Mode: 0o755, Dir: true},
		{Name: "cnb/order.toml", Mode: 0o644, Data: []byte("[[order]]\n  [[order.group]]\n    id = \"tug.test/shell\"\n    version = \"" + version + "\"\n")},
		{Name: "cnb/run.toml", Mode: 0o644, Data: []byte("[[images]]\n  image = \"" + runImage + "\"\n")},
		{Name: "etc", Mode: 0o755, Dir: true},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\ncnb:x:1000:1000:cnb:/home/cnb:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\ncnb:x:1000:\nnogroup:x:65534:\n")},
		{Name: "home", Mode: 0o755, Dir: true},
		{Name: "home/cnb", Mode: 0o755, Dir: true, UID: uid},
		{Name: "layers", Mode: 0o755, Dir: true, UID: uid},
		{Name: "workspace", Mode: 0o755, Dir: true, UID: uid},
		{Name: "platform", Mode: 0o755, Dir: true},
	}
	for _, phase := range []string{"analyzer", "builder", "creator", "detector", "exporter", "rebaser", "restorer"} {
		files = append(files, file{Name: "cnb/lifecycle/" + phase, Mode: 0o777, Link: "lifecycle"})
	}
	files = append(files, buildpack("tug.test/shell", "a shell buildpack of tug's tests", shellDetect, shellBuild)...)
	files = append(files, buildpack("tug.test/extra", "adds extra.txt to the app", "#!/bin/sh\nexit 0\n", extraBuild)...)
	return files, nil
}

func buildpack(id, desc, detect, build string) []file {
	dir := buildpacks + "/" + strings.ReplaceAll(id, "/", "_")
	d := strings.TrimPrefix(dir, "/")
	toml := fmt.Sprintf("api = \"0.10\"\n\n[buildpack]\n  id = %q\n  version = %q\n  name = %q\n", id, version, desc)
	return []file{
		{Name: d, Mode: 0o755, Dir: true},
		{Name: d + "/" + version, Mode: 0o755, Dir: true},
		{Name: d + "/" + version + "/bin", Mode: 0o755, Dir: true},
		{Name: d + "/" + version + "/buildpack.toml", Mode: 0o644, Data: []byte(toml)},
		{Name: d + "/" + version + "/bin/detect", Mode: 0o755, Data: []byte(detect)},
		{Name: d + "/" + version + "/bin/build", Mode: 0o755, Data: []byte(build)},
	}
}

func lifecycleDescriptor(v string) string {
	list := func(s []string) string { return `["` + strings.Join(s, `", "`) + `"]` }
	return fmt.Sprintf("[apis]\n[apis.buildpack]\n  deprecated = []\n  supported = %s\n[apis.platform]\n  deprecated = []\n  supported = %s\n\n[api]\n  platform = \"0.7\"\n  buildpack = \"0.7\"\n\n[lifecycle]\n  version = %q\n",
		list(buildpackAPIs), list(platformAPIs), v)
}

func builderMetadata(lcVersion, runImage string) string {
	bp := func(id, desc string) map[string]any {
		return map[string]any{"id": id, "version": version, "name": desc}
	}
	m := map[string]any{
		"description": "tug's CNB test builder: the real lifecycle, two shell buildpacks",
		"buildpacks":  []any{bp("tug.test/shell", "a shell buildpack of tug's tests"), bp("tug.test/extra", "adds extra.txt to the app")},
		"stack":       map[string]any{"runImage": map[string]any{"image": runImage}},
		"images":      []any{map[string]any{"image": runImage}},
		"lifecycle": map[string]any{
			"version": lcVersion,
			"apis": map[string]any{
				"buildpack": map[string]any{"deprecated": []string{}, "supported": buildpackAPIs},
				"platform":  map[string]any{"deprecated": []string{}, "supported": platformAPIs},
			},
		},
		"createdBy": map[string]any{"name": "tug test/images/cnb", "version": "1"},
	}
	b, _ := json.Marshal(m)
	return string(b)
}

const shellDetect = `#!/bin/sh
# tug.test/shell detects an app with a message.txt
[ -f message.txt ] || { echo "tug.test/shell: no message.txt"; exit 100; }
exit 0
`

// shellBuild writes a cached "tools" layer (reused when the cache restored
// it) and the "web" layer the web process serves.
const shellBuild = `#!/bin/sh
set -eu
layers=${CNB_LAYERS_DIR:-$1}
tools=$layers/tools
if [ -f "$tools/bin/toolchain" ]; then
  echo "tug.test/shell: reusing the cached tools layer"
else
  echo "tug.test/shell: making the tools layer"
  mkdir -p "$tools/bin"
  printf '#!/bin/sh\necho toolchain 1\n' > "$tools/bin/toolchain"
  chmod +x "$tools/bin/toolchain"
fi
printf '[types]\nlaunch = true\ncache = true\n\n[metadata]\ntoolchain = "1"\n' > "$tools.toml"
web=$layers/web
mkdir -p "$web/public"
{
  echo "<h1>$(cat message.txt)</h1>"
  echo "<p>greeting: ${GREETING:-none}</p>"
  if [ -f extra.txt ]; then echo "<p>$(cat extra.txt)</p>"; fi
} > "$web/public/index.html"
printf '[types]\nlaunch = true\n' > "$web.toml"
echo "tug.test/shell: GREETING is ${GREETING:-unset}"
cat > "$layers/launch.toml" <<EOF
[[processes]]
  type = "web"
  command = ["/bin/sh", "-c", "exec httpd -f -p \${PORT:-8080} -h $web/public"]
  default = true

[[processes]]
  type = "worker"
  command = ["/bin/sh", "-c", "while :; do echo worker is working; sleep 5; done"]
EOF
`

const extraBuild = `#!/bin/sh
set -eu
echo "extra buildpack was here" > extra.txt
echo "tug.test/extra: wrote extra.txt"
`
