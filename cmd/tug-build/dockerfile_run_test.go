package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/text"
)

// fakeBuildctl is buildctl for the tests: it logs its arguments, answers
// "debug workers", and for "build" prints a line of progress, then exits
// with $FAKE_BUILDCTL_EXIT or writes $FAKE_BUILDCTL_META to the metadata
// file. fakeBuildkitd runs until it is killed.
const (
	fakeBuildctl = `#!/bin/sh
echo "$*" >> "$FAKE_BUILDCTL_LOG"
case " $* " in *" debug workers "*) exit 0 ;; esac
meta= prev=
for a in "$@"; do
  [ "$prev" = --metadata-file ] && meta=$a
  prev=$a
done
echo "#1 [internal] load build definition"
[ -n "$FAKE_BUILDCTL_EXIT" ] && exit "$FAKE_BUILDCTL_EXIT"
printf '%s' "$FAKE_BUILDCTL_META" > "$meta"
`
	fakeBuildkitd = "#!/bin/sh\nexec sleep 60\n"
)

type agentRun struct {
	code   int
	out    []string // stdout's lines but the result
	result Result   // the last line, Seconds zeroed
	calls  []string // buildctl's argument lists
	tmp    string   // os.TempDir during the run
}

// runDockerfile runs the dockerfile subcommand with fake buildctl and
// buildkitd on PATH, stdin as given and stdout captured.
func runDockerfile(t *testing.T, stdin []byte, env map[string]string, args ...string) agentRun {
	t.Helper()
	bin, tmp := t.TempDir(), t.TempDir()
	for name, script := range map[string]string{"buildctl": fakeBuildctl, "buildkitd": fakeBuildkitd, "rootlesskit": fakeBuildkitd} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	calls := filepath.Join(tmp, "calls")
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HOME", tmp)
	t.Setenv("FAKE_BUILDCTL_LOG", calls)
	t.Setenv("FAKE_BUILDCTL_EXIT", "")
	t.Setenv("FAKE_BUILDCTL_META", `{"containerimage.digest":"sha256:feed"}`)
	for k, v := range env {
		t.Setenv(k, v)
	}
	r := runAgent(t, stdin, func() int { return dockerfile(args) })
	r.tmp = tmp
	if c, err := os.ReadFile(calls); err == nil {
		r.calls = strings.Split(strings.TrimSuffix(string(c), "\n"), "\n")
	}
	return r
}

// runAgent runs one subcommand in the test's process (agentIO), checks
// that its last line is the result, and returns the rest.
func runAgent(t *testing.T, stdin []byte, subcommand func() int) agentRun {
	t.Helper()
	code, b := agentIO(t, stdin, subcommand)
	r := agentRun{code: code}
	lines := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	last, ok := strings.CutPrefix(lines[len(lines)-1], ResultPrefix)
	if !ok {
		t.Fatalf("the last line is not the result:\n%s", b)
	}
	if err := json.Unmarshal([]byte(last), &r.result); err != nil {
		t.Fatal(err)
	}
	r.result.Seconds.Unpack, r.result.Seconds.Build, r.result.Seconds.Push = 0, 0, 0
	r.out = lines[:len(lines)-1]
	return r
}

// agentIO runs one subcommand with stdin as given and stdout captured,
// and checks that it read stdin to its end.
func agentIO(t *testing.T, stdin []byte, subcommand func() int) (int, string) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "stdin")
	if err := os.WriteFile(in, stdin, 0o600); err != nil {
		t.Fatal(err)
	}
	stdinFile, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer stdinFile.Close()
	stdoutFile, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdoutFile.Close()
	oldIn, oldOut := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = stdinFile, stdoutFile
	code := func() int {
		defer func() { os.Stdin, os.Stdout = oldIn, oldOut }()
		return subcommand()
	}()
	if rest, _ := stdinFile.Seek(0, 1); rest != int64(len(stdin)) {
		t.Errorf("read %d of stdin's %d bytes, want all of it", rest, len(stdin))
	}
	b, err := os.ReadFile(stdoutFile.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

// TestDockerfileBuildsWithBuildctl pins what the dockerfile subcommand
// prints and runs: the job header's build arguments after the flag's,
// its target over the flag's, buildctl's arguments, the result line; and
// without -buildkitd, a buildkitd of its own with the plain-HTTP
// registries in its config.
func TestDockerfileBuildsWithBuildctl(t *testing.T) {
	source := archive(t,
		entry{name: "docker/Dockerfile", data: "FROM 10.0.0.5:5000/base:v1\nRUN true\n"},
		entry{name: "app.txt", data: "hello"},
	)
	size := text.Size(int64(len("FROM 10.0.0.5:5000/base:v1\nRUN true\nhello")))
	stdin := append(protocol.EncodeJob(protocol.Job{BuildArgs: []string{"B=2"}, Target: "run"}), source...)
	app := filepath.Join(t.TempDir(), "app")
	buildArgs := func(conn, tmp string) string {
		return conn + " build --progress plain --frontend dockerfile.v0 --local context=" + app +
			" --local dockerfile=" + app + "/docker --opt filename=Dockerfile --opt platform=linux/" + runtime.GOARCH +
			" --output type=image,name=10.0.0.1:5000/shop:v7,push=true,registry.insecure=true" +
			" --export-cache type=registry,mode=max,ref=10.0.0.1:5000/shop:buildcache,registry.insecure=true" +
			" --import-cache type=registry,ref=10.0.0.1:5000/shop:buildcache,registry.insecure=true" +
			" --metadata-file " + tmp + "/tug-buildctl-metadata.json --opt target=run --opt build-arg:A=1 --opt build-arg:B=2"
	}
	want := Result{OK: true, Image: "10.0.0.1:5000/shop@sha256:feed"}

	tls := "--addr tcp://127.0.0.1:1234 --tlsdir /tls --tlsservername buildkitd"
	r := runDockerfile(t, stdin, nil, "-repository", "10.0.0.1:5000/shop", "-tag", "v7", "-dockerfile", "docker/Dockerfile",
		"-app", app, "-job", "stdin", "-target", "old", "-build-arg", "A=1", "-buildkitd", "tcp://127.0.0.1:1234", "-tls-dir", "/tls")
	wantOut := []string{
		"-----> source: 2 files, " + size + " unpacked into " + app,
		"-----> waiting for buildkitd (rootless, in the pod's buildkitd container)",
		"-----> building docker/Dockerfile with BuildKit (cache 10.0.0.1:5000/shop:buildcache)",
		"#1 [internal] load build definition",
		"-----> pushed 10.0.0.1:5000/shop@sha256:feed",
	}
	wantCalls := []string{tls + " --timeout 5 debug workers", buildArgs(tls, r.tmp)}
	if r.code != 0 || !reflect.DeepEqual(r.result, want) || strings.Join(r.out, "\n") != strings.Join(wantOut, "\n") || strings.Join(r.calls, "\n") != strings.Join(wantCalls, "\n") {
		t.Errorf("with -buildkitd: exit %d, result %+v\nout:\n%s\nwant:\n%s\nbuildctl:\n%s\nwant:\n%s",
			r.code, r.result, strings.Join(r.out, "\n"), strings.Join(wantOut, "\n"), strings.Join(r.calls, "\n"), strings.Join(wantCalls, "\n"))
	}

	// without -buildkitd (older clients) it starts one, as root here or
	// through rootlesskit
	app = filepath.Join(t.TempDir(), "app")
	r = runDockerfile(t, stdin, nil, "-repository", "10.0.0.1:5000/shop", "-tag", "v7", "-dockerfile", "docker/Dockerfile",
		"-app", app, "-job", "stdin", "-build-arg", "A=1")
	addr, started := "unix:///run/buildkit/buildkitd.sock", "-----> starting buildkitd (as root)"
	if os.Getuid() != 0 {
		addr, started = "unix://"+filepath.Join(r.tmp, ".run", "buildkit", "buildkitd.sock"), "-----> starting buildkitd (rootless)"
	}
	wantOut[0], wantOut[1] = "-----> source: 2 files, "+size+" unpacked into "+app, started
	wantCalls = []string{"--addr " + addr + " debug workers", buildArgs("--addr "+addr, r.tmp)}
	if r.code != 0 || !reflect.DeepEqual(r.result, want) || strings.Join(r.out, "\n") != strings.Join(wantOut, "\n") || strings.Join(r.calls, "\n") != strings.Join(wantCalls, "\n") {
		t.Errorf("its own buildkitd: exit %d, result %+v\nout:\n%s\nwant:\n%s\nbuildctl:\n%s\nwant:\n%s",
			r.code, r.result, strings.Join(r.out, "\n"), strings.Join(wantOut, "\n"), strings.Join(r.calls, "\n"), strings.Join(wantCalls, "\n"))
	}
	cfg, err := os.ReadFile(filepath.Join(r.tmp, ".config", "buildkit", "buildkitd.toml"))
	wantCfg := "[registry.\"10.0.0.1:5000\"]\n  http = true\n  insecure = true\n[registry.\"10.0.0.5:5000\"]\n  http = true\n  insecure = true\n"
	if err != nil || string(cfg) != wantCfg {
		t.Errorf("buildkitd.toml %q %v, want %q", cfg, err, wantCfg)
	}
}

// TestDockerfileSaysWhichStageFailed pins the result line of each way the
// dockerfile subcommand fails, and that it reads stdin to its end.
func TestDockerfileSaysWhichStageFailed(t *testing.T) {
	good := archive(t, entry{name: "Dockerfile", data: "FROM busybox\n"})
	job := protocol.EncodeJob(protocol.Job{})
	for _, c := range []struct {
		name  string
		stdin []byte
		env   map[string]string
		args  []string
		want  Result
	}{
		{"no job header", good, nil, []string{"-job", "stdin"},
			Result{Stage: "unpack", Message: "no job header on stdin (a client older than this agent?)"}},
		{"not an archive", append(bytes.Clone(job), "junk"...), nil, []string{"-job", "stdin"},
			Result{Stage: "unpack", Message: "reading the source: unexpected EOF"}},
		{"a bad repository", good, nil, []string{"-repository", "UPPER/x"},
			Result{Stage: "push", Message: "--repository UPPER/x: could not parse reference: UPPER/x:latest"}},
		{"no Dockerfile", good, nil, []string{"-dockerfile", "sub/Dockerfile"},
			Result{Stage: "build", Message: "reading the Dockerfile: openat sub/Dockerfile: no such file or directory"}},
		{"buildctl fails", good, map[string]string{"FAKE_BUILDCTL_EXIT": "3"}, nil,
			Result{Stage: "build", ExitCode: 3, Message: "buildctl build failed (exit 3)"}},
		{"no digest", good, map[string]string{"FAKE_BUILDCTL_META": `{"image.name":"x"}`}, nil,
			Result{Stage: "push", Message: `buildctl's metadata has no image digest: {"image.name":"x"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-repository", "10.0.0.1:5000/shop", "-app", filepath.Join(t.TempDir(), "app"),
				"-buildkitd", "tcp://127.0.0.1:1234", "-tls-dir", "/tls"}, c.args...)
			r := runDockerfile(t, c.stdin, c.env, args...)
			if r.code != 1 || !reflect.DeepEqual(r.result, c.want) {
				t.Errorf("exit %d, result %+v; want 1, %+v", r.code, r.result, c.want)
			}
			if l := r.out[len(r.out)-1]; l != "tug-build: "+c.want.Stage+": "+c.want.Message {
				t.Errorf("the line before the result: %q", l)
			}
		})
	}
}
