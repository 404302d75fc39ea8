package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/text"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// dockerfile builds the source's Dockerfile with BuildKit and pushes the
// result; its last line is the same result line as run's.
func dockerfile(args []string) int {
	return dockerfileFlags(args).run()
}

// dockerfileBuild is one run of the dockerfile subcommand: its flags and
// its result, which its steps fill in.
type dockerfileBuild struct {
	repo, tag string
	file      string // the Dockerfile, slash-separated, inside appDir
	appDir    string
	target    string
	job       string
	daemon    string // buildkitd's address; "" to start one here
	tlsDir    string
	buildArgs multiFlag
	res       Result
}

// dockerfileFlags parses the subcommand's flags, exiting with the usage
// on bad ones.
func dockerfileFlags(args []string) *dockerfileBuild {
	b := &dockerfileBuild{}
	fs := flag.NewFlagSet("dockerfile", flag.ExitOnError)
	fs.StringVar(&b.repo, "repository", "", "repository to push the image to, HOST/PATH")
	fs.StringVar(&b.file, "dockerfile", "Dockerfile", "the Dockerfile, a slash-separated path inside the source")
	fs.StringVar(&b.appDir, "app", "/app", "folder the source is unpacked into")
	fs.StringVar(&b.tag, "tag", "latest", "tag to push besides the digest")
	fs.StringVar(&b.target, "target", "", "the stage to build (older clients; newer ones send it in the job)")
	fs.StringVar(&b.job, "job", "", `"stdin": a job header comes on stdin before the source`)
	fs.StringVar(&b.daemon, "buildkitd", "", "buildkitd's address (tcp://HOST:PORT) in the pod's other container; empty: start one here")
	fs.StringVar(&b.tlsDir, "tls-dir", "", "with -buildkitd: the folder with ca.pem, cert.pem and key.pem")
	fs.Var(&b.buildArgs, "build-arg", "K=V, repeatable (older clients; newer ones send them in the job)")
	_ = fs.Parse(args)
	if b.repo == "" || b.daemon != "" && b.tlsDir == "" {
		usage()
	}
	return b
}

// run is the subcommand's steps in order; each failure is reported with
// the stage the CLI names to the user.
func (b *dockerfileBuild) run() int {
	finish := b.res.finish
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	if err := b.readJob(in); err != nil {
		return finish("unpack", 0, err)
	}
	if err := b.res.unpackSource(in, b.appDir); err != nil {
		return finish("unpack", 0, err)
	}
	ref, err := name.ParseReference(b.repo + ":" + b.tag)
	if err != nil {
		return finish("push", 0, fmt.Errorf("--repository %s: %w", b.repo, err))
	}
	content, err := readInside(b.appDir, path.Clean("/" + b.file)[1:])
	if err != nil {
		return finish("build", 0, fmt.Errorf("reading the Dockerfile: %w", err))
	}

	t := time.Now()
	var conn []string // buildctl's options to reach buildkitd
	if b.daemon != "" {
		conn = []string{"--addr", b.daemon, "--tlsdir", b.tlsDir, "--tlsservername", buildkitServerName}
		fmt.Println("-----> waiting for buildkitd (rootless, in the pod's buildkitd container)")
		if err := waitBuildkitd(conn, 90*time.Second); err != nil {
			return finish("buildkitd", 0, err)
		}
	} else {
		bk, err := startBuildkitd(plainHTTPHosts(ref.Context().RegistryStr(), string(content)))
		if err != nil {
			return finish("build", 0, err)
		}
		defer bk.stop() // after finish: the result line comes first
		conn = []string{"--addr", bk.addr}
	}
	meta := filepath.Join(os.TempDir(), "tug-buildctl-metadata.json")
	if code, err := b.buildctl(conn, ref, meta); err != nil {
		return finish("build", code, err)
	}
	b.res.Seconds.Build = time.Since(t).Seconds()
	digest, err := metadataDigest(meta)
	if err != nil {
		return finish("push", 0, err)
	}
	b.res.Image = ref.Context().Name() + "@" + digest
	fmt.Printf("-----> pushed %s\n", b.res.Image)
	return finish("", 0, nil)
}

// readJob reads the job header when the client sends one: its build
// arguments come after the flag's, and its target wins. On an error it
// reads stdin to its end, so the client finishes its upload and reads why.
func (b *dockerfileBuild) readJob(in *bufio.Reader) error {
	if b.job != "stdin" {
		return nil
	}
	j, err := protocol.ReadJob(in)
	if err != nil {
		_, _ = io.Copy(io.Discard, in)
		return err
	}
	b.buildArgs = append(b.buildArgs, j.BuildArgs...)
	if j.Target != "" {
		b.target = j.Target
	}
	return nil
}

// buildctl builds and pushes with buildctl through conn, writing the
// image's digest to meta, and returns buildctl's exit code on a failure.
// The build arguments are on buildctl's command line, which only this
// container sees (RUN steps run in buildkitd's, another PID namespace).
func (b *dockerfileBuild) buildctl(conn []string, ref name.Reference, meta string) (int, error) {
	df := filepath.Join(b.appDir, filepath.FromSlash(path.Clean("/"+b.file)))
	cache := ref.Context().Name() + ":buildcache"
	insecure := ""
	if plainHTTP(ref.Context().RegistryStr()) {
		insecure = ",registry.insecure=true"
	}
	cmdArgs := append(conn, "build", "--progress", "plain",
		"--frontend", "dockerfile.v0",
		"--local", "context="+b.appDir,
		"--local", "dockerfile="+filepath.Dir(df),
		"--opt", "filename="+filepath.Base(df),
		"--opt", "platform=linux/"+runtime.GOARCH,
		"--output", "type=image,name="+ref.Name()+",push=true"+insecure,
		"--export-cache", "type=registry,mode=max,ref="+cache+insecure,
		"--import-cache", "type=registry,ref="+cache+insecure,
		"--metadata-file", meta,
	)
	if b.target != "" {
		cmdArgs = append(cmdArgs, "--opt", "target="+b.target)
	}
	for _, a := range b.buildArgs {
		cmdArgs = append(cmdArgs, "--opt", "build-arg:"+a)
	}
	fmt.Printf("-----> building %s with BuildKit (cache %s)\n", b.file, cache)
	cmd := exec.Command("buildctl", cmdArgs...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), fmt.Errorf("buildctl build failed (exit %d)", ee.ExitCode())
		}
		return 0, fmt.Errorf("buildctl could not run: %w", err)
	}
	return 0, nil
}

// readInside reads a file of the unpacked source, following its links
// only inside it.
func readInside(dir, name string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(name)
}

// waitBuildkitd waits until buildkitd answers over TLS, trying every
// 200ms (it starts beside this container, in a second or two), or the
// deadline passes.
func waitBuildkitd(conn []string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		out, err := exec.Command("buildctl", append(append([]string{}, conn...), "--timeout", "5", "debug", "workers")...).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &ee):
			return fmt.Errorf("buildctl could not run: %w", err)
		case time.Now().After(deadline):
			return fmt.Errorf("buildkitd did not answer within %s: %s", within, text.OneLine(lastLinesOf(string(out), 4)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func metadataDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading buildctl's metadata: %w", err)
	}
	var m struct {
		Digest string `json:"containerimage.digest"`
	}
	if err := json.Unmarshal(b, &m); err != nil || !strings.HasPrefix(m.Digest, "sha256:") {
		return "", fmt.Errorf("buildctl's metadata has no image digest: %s", text.OneLine(string(b)))
	}
	return m.Digest, nil
}

// plainHTTP: registries on localhost or a private or loopback address
// are spoken to over plain HTTP (as run's parseRef does).
func plainHTTP(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && (ip.IsPrivate() || ip.IsLoopback())
}

// plainHTTPHosts are the repository's registry and the registries of the
// Dockerfile's FROM lines that plainHTTP allows.
func plainHTTPHosts(repoHost, dockerfile string) []string {
	set := map[string]bool{}
	if plainHTTP(repoHost) {
		set[repoHost] = true
	}
	for _, l := range strings.Split(dockerfile, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		img := f[1]
		for _, a := range f[1:] {
			if !strings.HasPrefix(a, "--") {
				img = a
				break
			}
		}
		if r, err := name.ParseReference(img); err == nil && plainHTTP(r.Context().RegistryStr()) {
			set[r.Context().RegistryStr()] = true
		}
	}
	hosts := make([]string, 0, len(set))
	for h := range set {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return hosts
}

type buildkitd struct {
	cmd  *exec.Cmd
	addr string
	// exited gets cmd.Wait's result: one goroutine waits, and only it
	// (a second Wait is a data race in os/exec)
	exited <-chan error
}

// stop kills the daemon and waits until it has exited.
func (b *buildkitd) stop() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// startBuildkitd starts the daemon (through rootlesskit when not root)
// and waits until it answers.
func startBuildkitd(plainHosts []string) (*buildkitd, error) {
	home := os.Getenv("HOME")
	if home == "" || home == "/" {
		home = os.TempDir()
	}
	cfgDir := filepath.Join(home, ".config", "buildkit")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(cfgDir, "buildkitd.toml")
	if err := os.WriteFile(cfgFile, buildkitdConfig(plainHosts), 0o644); err != nil {
		return nil, err
	}
	cmd, addr, err := buildkitdCommand(home, cfgFile)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(os.TempDir(), "buildkitd.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting buildkitd: %w", err)
	}
	log.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b := &buildkitd{cmd: cmd, addr: addr, exited: exited}
	if err := b.waitReady(logPath); err != nil {
		return nil, err
	}
	return b, nil
}

// buildkitdConfig is buildkitd's config: the registries it speaks plain
// HTTP, without TLS (the same for both kinds of build).
func buildkitdConfig(plainHosts []string) []byte {
	var cfg strings.Builder
	for _, h := range plainHosts {
		fmt.Fprintf(&cfg, "[registry.%q]\n  http = true\n  insecure = true\n", h)
	}
	return []byte(cfg.String())
}

// buildkitdCommand is the command that runs buildkitd, and the address it
// listens on: as root, the usual socket; otherwise rootless, through
// rootlesskit, with its socket in the user's runtime folder.
func buildkitdCommand(home, cfgFile string) (*exec.Cmd, string, error) {
	if os.Getuid() == 0 {
		addr := "unix:///run/buildkit/buildkitd.sock"
		fmt.Println("-----> starting buildkitd (as root)")
		return exec.Command("buildkitd", "--config", cfgFile, "--addr", addr), addr, nil
	}
	run := os.Getenv("XDG_RUNTIME_DIR")
	if run == "" {
		run = filepath.Join(home, ".run")
	}
	if err := os.MkdirAll(filepath.Join(run, "buildkit"), 0o700); err != nil {
		return nil, "", err
	}
	addr := "unix://" + filepath.Join(run, "buildkit", "buildkitd.sock")
	cmd := exec.Command("rootlesskit", "buildkitd", "--config", cfgFile, "--addr", addr,
		"--rootless", "--oci-worker-no-process-sandbox")
	fmt.Println("-----> starting buildkitd (rootless)")
	return cmd, addr, nil
}

// waitReady waits up to a minute for the daemon to answer, saying why
// (its log's last lines) when it exits first or never answers; then it
// is stopped.
func (b *buildkitd) waitReady(logPath string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-b.exited:
			return fmt.Errorf("buildkitd exited (%v): %s", err, lastLines(logPath, 8))
		default:
		}
		if exec.Command("buildctl", "--addr", b.addr, "debug", "workers").Run() == nil {
			return nil
		}
		if time.Now().After(deadline) {
			b.stop()
			return fmt.Errorf("buildkitd did not answer within 60s: %s", lastLines(logPath, 8))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lastLines(path string, n int) string {
	b, _ := os.ReadFile(path)
	return lastLinesOf(string(b), n)
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
