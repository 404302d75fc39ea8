package imagebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// AgentImage is tug's build agent (cmd/tug-build), copied into every build
// pod by an init container. Its tag is the agent protocol's version
// (pkg/imagebuild/protocol): v2 reads the job header and runs the two-container
// Dockerfile build; a v2 agent still serves v1 clients.
const AgentImage = "ghcr.io/tug-dev/tug-build:v2"

// BuildKitImage runs Dockerfile builds: rootless BuildKit (buildkitd,
// buildctl, rootlesskit, runc, newuidmap). TUG_BUILDKIT_IMAGE overrides it.
const BuildKitImage = "docker.io/moby/buildkit:v0.34.2-rootless"

// BuildKitUser is the user rootless BuildKit runs as in its image.
const BuildKitUser = 1000

// KindBuild is the tug.dev/kind of build pods.
const KindBuild = "build"

// DefaultTimeout is a build's deadline when --build-timeout is not given.
const DefaultTimeout = 15 * time.Minute

// CodeBuildFailed is the exit code of a failed build (docs/exit-codes.md).
const CodeBuildFailed = 16

// resultPrefix starts the agent's last line (cmd/tug-build).
const resultPrefix = "TUG-BUILD-RESULT "

// Resources of the build container (buildkitd's in a Dockerfile build).
// Its disk is capped too (docs/builders.md): the container's own files
// (a builder build's /app) by an ephemeral-storage limit, the agent's
// folder (the layer file) by the emptyDir's sizeLimit, so a build cannot
// fill the node.
var (
	buildCPU        = resource.MustParse("1")
	buildMemory     = resource.MustParse("1Gi")
	buildCPUReq     = resource.MustParse("100m")
	buildMemReq     = resource.MustParse("256Mi")
	buildStorage    = resource.MustParse("8Gi")
	buildStorageReq = resource.MustParse("256Mi")
	agentVolume     = resource.MustParse("4Gi")
)

const (
	agentDir       = "/tug-agent"
	authDir        = "/tug-auth"
	createTimeout  = 30 * time.Second
	cleanupTimeout = 30 * time.Second
	keepLines      = 20
)

// Progress reports long work; cli.Progress satisfies it.
type Progress = progress.Reporter

// Deps are what a build needs from the outside world.
type Deps struct {
	Client   kubernetes.Interface
	Executor session.Executor // the attach that streams the source in
	Out      io.Writer        // the build's log, live
	Progress Progress
}

// Options say what to build.
type Options struct {
	App        string
	Namespace  string // the app's namespace
	Pool       string
	PullSecret string // the app's registry Secret ("" for none)
	Builder    string
	RunImage   string // "" for the builder image
	Repository string
	Timeout    time.Duration
	AgentImage string // "" for AgentImage
	Source     *Source

	// Dockerfile, when set, builds with BuildKit instead of a builder:
	// the Dockerfile's path inside the source (slash-separated).
	Dockerfile    string
	BuildArgs     []string // K=V, given by the user: sent on stdin, never in the pod
	Target        string   // the stage to build, "" for the last
	BuildKitImage string   // "" for BuildKitImage
	PlainHTTP     []string // registries BuildKit speaks plain HTTP to (PlainHTTPRegistries)

	// CNB, when set, runs the builder's own Cloud Native Buildpacks
	// lifecycle (what Inspect read of it, Negotiate done).
	CNB        *CNB
	BuildEnv   []string // K=V for the buildpacks: sent on stdin, never in the pod
	Buildpacks []string // ID[@VERSION]: replace the builder's order
}

// Result is a finished build.
type Result struct {
	Image       string  `json:"image"` // repository@sha256:...
	Pod         string  `json:"pod"`
	SourceBytes int     `json:"sourceBytes"`
	LayerBytes  int64   `json:"layerBytes"`
	PushedBytes int64   `json:"pushedBytes"`
	Seconds     Seconds `json:"seconds"`
	// A CNB build's: the image's process types (io.buildpacks.build.metadata),
	// the buildpacks that built it, and the layers the lifecycle added,
	// reused from the previous image and restored from the cache image.
	CNB            bool     `json:"cnb,omitempty"`
	Processes      []string `json:"processes,omitempty"`
	Buildpacks     []string `json:"buildpacks,omitempty"`
	LayersAdded    int      `json:"layersAdded,omitempty"`
	LayersReused   int      `json:"layersReused,omitempty"`
	LayersRestored int      `json:"layersRestored,omitempty"`
	// Builder is the CNB builder image that built it, as named.
	Builder string `json:"builder,omitempty"`
	// Upload is what the push cost the registry, from the manifests of
	// the new image and of the one the tag named before (a CNB build's;
	// nil when the registry could not say, or an older agent built it).
	Upload *protocol.Upload `json:"upload,omitempty"`
}

// BuiltWith is the builder and buildpacks of a CNB build, for its
// release's record; nil for any other build.
func (r *Result) BuiltWith() *app.BuiltWith {
	if r == nil || !r.CNB {
		return nil
	}
	return &app.BuiltWith{Builder: r.Builder, Buildpacks: slices.Clone(r.Buildpacks)}
}

// Summary is the build as a deploy's result shows it.
func (r *Result) Summary() *deploy.BuildSummary {
	if r == nil {
		return nil
	}
	return &deploy.BuildSummary{Image: r.Image, BuiltWith: r.BuiltWith(), Upload: r.Upload}
}

// Seconds split a build's time.
type Seconds struct {
	Start  float64 `json:"start"` // pod created until the agent runs
	Upload float64 `json:"upload"`
	Unpack float64 `json:"unpack"`
	Build  float64 `json:"build"`
	Push   float64 `json:"push"`
}

// Error is a failed build: the build step, the run image or the push.
type Error struct {
	Stage    string   // unpack, build, image, push, start, buildkitd, timeout, agent
	StepCode int      // the build step's exit code, when it failed
	Message  string   // what failed
	Lines    []string // the last lines of the build log
}

func (e *Error) Error() string { return "build failed: " + e.Message }

// ExitCode is CodeBuildFailed.
func (e *Error) ExitCode() int { return CodeBuildFailed }

type agentResult struct {
	OK          bool    `json:"ok"`
	Stage       string  `json:"stage"`
	ExitCode    int     `json:"exitCode"`
	Message     string  `json:"message"`
	Image       string  `json:"image"`
	LayerBytes  int64   `json:"layerBytes"`
	PushedBytes int64   `json:"pushedBytes"`
	Seconds     Seconds `json:"seconds"`

	Processes      []string `json:"processes"`
	Buildpacks     []string `json:"buildpacks"`
	LayersAdded    int      `json:"layersAdded"`
	LayersReused   int      `json:"layersReused"`
	LayersRestored int      `json:"layersRestored"`

	Upload *protocol.Upload `json:"upload"`
}

// PodName is a new name for a build pod of app, chosen here so the pod can
// be deleted even when the answer to its creation is lost.
func PodName(appName string) string { return appName + "-build-" + utilrand.String(5) }

// Pod is the build pod: the agent copied in by an init container, the
// builder image running it with the source on stdin.
func Pod(o Options, name string) *corev1.Pod {
	agent := o.AgentImage
	if agent == "" {
		agent = AgentImage
	}
	run := o.RunImage
	if run == "" {
		run = o.Builder
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	secs := int64(math.Ceil(timeout.Seconds()))
	labels := kube.AppLabels(o.App)
	labels[kube.LabelKind] = KindBuild
	mounts := []corev1.VolumeMount{{Name: "tug-agent", MountPath: agentDir}}
	volumes := []corev1.Volume{{Name: "tug-agent", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &agentVolume}}}}
	var sel map[string]string
	if o.Pool != "" {
		sel = map[string]string{kube.LabelPool: o.Pool}
	}
	no := false
	build := corev1.Container{
		Name: "build", Image: o.Builder, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:      []string{agentDir + "/tug-build", "run", "-repository", o.Repository, "-run-image", run, "-work", agentDir},
		VolumeMounts: mounts,
		Stdin:        true, StdinOnce: true,
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: buildCPU, corev1.ResourceMemory: buildMemory, corev1.ResourceEphemeralStorage: buildStorage},
			Requests: corev1.ResourceList{corev1.ResourceCPU: buildCPUReq, corev1.ResourceMemory: buildMemReq, corev1.ResourceEphemeralStorage: buildStorageReq},
		},
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:        &secs,
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			NodeSelector:                 sel,
			Volumes:                      volumes,
			InitContainers: []corev1.Container{{
				Name: "agent", Image: agent, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"/tug-build", "install", agentDir + "/tug-build"},
				VolumeMounts: []corev1.VolumeMount{mounts[0]}, // its own slice: a Dockerfile pod adds to it
			}},
			Containers: []corev1.Container{build},
		},
	}
	addPushAuth(pod, &pod.Spec.Containers[0], o.PullSecret)
	if o.Dockerfile != "" {
		dockerfilePod(pod, &pod.Spec.Containers[0], o)
	} else if o.CNB != nil {
		cnbPod(pod, &pod.Spec.Containers[0], o)
	}
	return pod
}

// addPushAuth gives build container c the registry credentials of the
// pull secret (none when ""), as a docker config for its push, and the
// pod the secret for its pulls.
func addPushAuth(pod *corev1.Pod, c *corev1.Container, secret string) {
	if secret == "" {
		return
	}
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "tug-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}},
	}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tug-auth", MountPath: authDir, ReadOnly: true})
	c.Env = append(c.Env, corev1.EnvVar{Name: "DOCKER_CONFIG", Value: authDir})
}

// Build runs a build pod and returns the pushed image. The pod is deleted
// on every way out: success, failure, Ctrl-C, a lost connection (the
// cluster also stops it at its deadline should tug be gone).
func Build(ctx context.Context, d Deps, o Options) (res *Result, err error) {
	ctx, cancel := session.WithHangup(ctx)
	defer cancel()
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ctx, cancelT := context.WithTimeout(ctx, o.Timeout)
	defer cancelT()
	b := &builder{d: d, o: o, name: PodName(o.App)}
	defer b.cleanup(ctx)
	start := time.Now()
	if err := b.create(ctx); err != nil {
		return nil, err
	}
	if o.Dockerfile != "" {
		b.d.Progress.Update(fmt.Sprintf("starting build pod %s (BuildKit, %s)", b.name, o.Dockerfile))
	} else if o.CNB != nil {
		b.d.Progress.Update(fmt.Sprintf("starting build pod %s (CNB builder %s, lifecycle %s, Platform API %s, user %d:%d)", b.name, o.Builder, o.CNB.Lifecycle, o.CNB.PlatformAPI, o.CNB.UID, o.CNB.GID))
	} else {
		b.d.Progress.Update(fmt.Sprintf("starting build pod %s (builder %s)", b.name, o.Builder))
	}
	if err := b.waitRunning(ctx); err != nil {
		return nil, b.interrupted(ctx, err)
	}
	started := time.Since(start)
	b.d.Progress.Done(fmt.Sprintf("build pod %s running; uploading %d files (%s)", b.name, o.Source.Files, text.Size(int64(len(o.Source.Data)))))
	up := time.Now()
	ar, err := b.stream(ctx)
	if err != nil {
		return nil, b.interrupted(ctx, err)
	}
	if !ar.OK {
		lines := b.out.last()
		if ar.Stage == "buildkitd" {
			lines = append(lines, b.daemonLog(ctx)...)
		}
		return nil, &Error{Stage: ar.Stage, StepCode: ar.ExitCode, Message: ar.Message, Lines: lines}
	}
	s := ar.Seconds
	s.Start = started.Seconds()
	s.Upload = time.Since(up).Seconds() - s.Unpack - s.Build - s.Push
	if s.Upload < 0 {
		s.Upload = 0
	}
	return b.result(ar, s), nil
}

// result is the finished build the agent reported.
func (b *builder) result(ar *agentResult, s Seconds) *Result {
	res := &Result{Image: ar.Image, Pod: b.name, SourceBytes: len(b.o.Source.Data), LayerBytes: ar.LayerBytes, PushedBytes: ar.PushedBytes, Seconds: s,
		CNB: b.o.CNB != nil, Processes: ar.Processes, Buildpacks: ar.Buildpacks,
		LayersAdded: ar.LayersAdded, LayersReused: ar.LayersReused, LayersRestored: ar.LayersRestored}
	if res.CNB {
		res.Builder, res.Upload = b.o.Builder, ar.Upload
	}
	return res
}

type builder struct {
	d       Deps
	o       Options
	name    string
	created bool
	out     *logWriter
}

func (b *builder) interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return &Error{Stage: "timeout", Message: fmt.Sprintf("the build did not finish within --build-timeout %s", b.o.Timeout), Lines: b.lines()}
	}
	return err
}

func (b *builder) lines() []string {
	if b.out == nil {
		return nil
	}
	return b.out.last()
}

// create makes the build pod.
func (b *builder) create(ctx context.Context) error { return b.createPod(ctx, Pod(b.o, b.name)) }

func (b *builder) waitRunning(ctx context.Context) error {
	_, err := session.WatchPod(ctx, b.d.Client, b.o.Namespace, b.name, time.Second, func(p *corev1.Pod) (bool, error) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "build" && (cs.State.Running != nil || cs.State.Terminated != nil) {
				return true, nil
			}
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return true, &Error{Stage: "start", Message: fmt.Sprintf("build pod %s ended before the build started: %s", b.name, podMessage(p))}
		}
		if f := rollout.StartFailure(p, time.Now()); f != nil {
			return true, &Error{Stage: "start", Message: fmt.Sprintf("build pod %s cannot start: %s", b.name, f.Error())}
		}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "InvalidImageName") {
				return true, &Error{Stage: "start", Message: fmt.Sprintf("build pod %s cannot pull %s: %s", b.name, cs.Image, text.OneLine(w.Message))}
			}
		}
		return false, nil
	})
	return err
}

// stream sends the source on the build container's stdin and copies its
// output live; when the attach breaks after the upload, it follows the
// container's log from where it was.
func (b *builder) stream(ctx context.Context) (*agentResult, error) {
	b.out = &logWriter{w: b.d.Out}
	target := session.Target{Namespace: b.o.Namespace, Pod: b.name, Container: "build"}
	payload := b.o.Source.Data
	if b.o.Dockerfile != "" || b.o.CNB != nil {
		// what the pod spec must not show comes first on stdin
		job := protocol.EncodeJob(protocol.Job{BuildArgs: b.o.BuildArgs, Target: b.o.Target, BuildEnv: b.o.BuildEnv, Buildpacks: b.o.Buildpacks})
		payload = append(job, payload...)
	}
	in := &countingReader{r: bytes.NewReader(payload)}
	err := b.d.Executor.Attach(ctx, target, session.Streams{Stdin: in, Stdout: b.out, Stderr: b.out})
	if err != nil && ctx.Err() == nil {
		if in.n < len(payload) {
			return nil, fmt.Errorf("lost the connection to build pod %s while uploading the source: %w", b.name, kube.TranslateError(err))
		}
		if err := b.followLog(ctx); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, ctx.Err()
	}
	b.out.flush()
	if r := b.out.result(); r != nil {
		return r, nil
	}
	// no result line: the agent died; the pod's state says why
	p, werr := session.WatchPod(ctx, b.d.Client, b.o.Namespace, b.name, 0, func(p *corev1.Pod) (bool, error) {
		return terminated(p) != nil || p.Status.Phase == corev1.PodFailed, nil
	})
	if werr != nil {
		return nil, werr
	}
	return &agentResult{Stage: "agent", Message: fmt.Sprintf("build pod %s ended without a result: %s", b.name, podMessage(p))}, nil
}

// daemonLog is the end of the buildkitd container's log and its state,
// for a build whose client could not reach it: that container says why
// it did not start.
func (b *builder) daemonLog(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, createTimeout)
	defer cancel()
	var lines []string
	tail := int64(keepLines / 2)
	raw, err := b.d.Client.CoreV1().Pods(b.o.Namespace).GetLogs(b.name, &corev1.PodLogOptions{Container: "buildkitd", TailLines: &tail, LimitBytes: ptr(int64(16 << 10))}).DoRaw(ctx)
	if err == nil {
		for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
			if l != "" {
				lines = append(lines, "buildkitd: "+l)
			}
		}
	}
	if p, err := b.d.Client.CoreV1().Pods(b.o.Namespace).Get(ctx, b.name, metav1.GetOptions{}); err == nil {
		for _, cs := range p.Status.ContainerStatuses {
			switch st := cs.State; {
			case cs.Name != "buildkitd":
			case st.Waiting != nil:
				lines = append(lines, fmt.Sprintf("buildkitd: the container is waiting: %s %s", st.Waiting.Reason, text.OneLine(st.Waiting.Message)))
			case st.Terminated != nil:
				lines = append(lines, fmt.Sprintf("buildkitd: the container exited %d %s %s", st.Terminated.ExitCode, st.Terminated.Reason, text.OneLine(st.Terminated.Message)))
			}
		}
	}
	return lines
}

func ptr[T any](v T) *T { return &v }

func (b *builder) followLog(ctx context.Context) error {
	skip := b.out.written()
	rc, err := b.d.Client.CoreV1().Pods(b.o.Namespace).GetLogs(b.name, &corev1.PodLogOptions{Container: "build", Follow: true}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("reading the log of build pod %s: %w", b.name, kube.TranslateError(err))
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, int64(skip)); err != nil && err != io.EOF {
		return fmt.Errorf("lost the connection to build pod %s: %w", b.name, kube.TranslateError(err))
	}
	if _, err := io.Copy(b.out, rc); err != nil {
		return fmt.Errorf("lost the connection to build pod %s: %w", b.name, kube.TranslateError(err))
	}
	return nil
}

// cleanup deletes the pod at once, with a fresh context, retrying while
// the API server does not answer.
func (b *builder) cleanup(parent context.Context) {
	if !b.created {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cleanupTimeout)
	defer cancel()
	zero := int64(0)
	var last error
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 8, Cap: 5 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = b.d.Client.CoreV1().Pods(b.o.Namespace).Delete(ctx, b.name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		return last == nil || apierrors.IsNotFound(last), nil
	})
	if err != nil {
		fmt.Fprintf(b.d.Out, "error: could not delete build pod %s: %v; delete it with 'kubectl delete pod %s -n %s'\n",
			b.name, text.OneLine(kube.TranslateError(last).Error()), b.name, b.o.Namespace)
	}
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "build" {
			return cs.State.Terminated
		}
	}
	return nil
}

func podMessage(p *corev1.Pod) string {
	if t := terminated(p); t != nil {
		return fmt.Sprintf("exit %d %s %s", t.ExitCode, t.Reason, text.OneLine(t.Message))
	}
	if p.Status.Reason != "" {
		return p.Status.Reason + " " + text.OneLine(p.Status.Message)
	}
	return string(p.Status.Phase)
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// logWriter passes the build's output on line by line, keeps its last
// lines for a failure report, and takes the agent's result line out.
type logWriter struct {
	w     io.Writer
	mu    sync.Mutex
	n     int
	part  []byte
	lines []string
	res   *agentResult
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n += len(p)
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.part[:i]))
		l.part = l.part[i+1:]
	}
	return len(p), nil
}

func (l *logWriter) line(s string) {
	if rest, ok := strings.CutPrefix(s, resultPrefix); ok {
		var r agentResult
		if json.Unmarshal([]byte(rest), &r) == nil {
			l.res = &r
			return
		}
	}
	fmt.Fprintln(l.w, s)
	l.lines = append(l.lines, s)
	if len(l.lines) > keepLines {
		l.lines = l.lines[len(l.lines)-keepLines:]
	}
}

func (l *logWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.part) > 0 {
		l.line(string(l.part))
		l.part = nil
	}
}

func (l *logWriter) written() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *logWriter) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *logWriter) result() *agentResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res
}
