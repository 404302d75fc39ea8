package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/text"
)

// RunOptions are `tug run`'s.
type RunOptions struct {
	App     string
	Process string // whose pod template the run copies; "" for web, else the first
	Command []string
	Env     app.ConfigMap // added to (and winning over) the release's config
	Stdin   bool
	TTY     bool
	// Timeout stops the run after this long (0: no limit); the cluster
	// enforces it too (activeDeadlineSeconds), should tug be gone.
	Timeout time.Duration
	Detach  bool
}

// RunResult says which pod ran.
type RunResult struct {
	Pod string `json:"pod"`
}

// CodeTimeout is the exit code of a run stopped by --timeout, as timeout(1)
// uses.
const CodeTimeout = 124

// RunTimeoutError is a run stopped by its --timeout.
type RunTimeoutError struct {
	Pod     string
	Timeout time.Duration
}

func (e *RunTimeoutError) Error() string {
	return fmt.Sprintf("run %s stopped: it did not finish within --timeout %s", e.Pod, e.Timeout)
}

func (e *RunTimeoutError) ExitCode() int { return CodeTimeout }

// How run pods are stopped and removed.
const (
	// interruptGrace is what an interrupted run's process gets between
	// SIGTERM and SIGKILL.
	interruptGrace = int64(3)
	// cleanupTimeout bounds the retries of a run pod's deletion, for a
	// connection that is failing.
	cleanupTimeout = 30 * time.Second
	createTimeout  = 30 * time.Second
	// recheck is how often a starting pod's state is judged again when
	// nothing changes (an unschedulable pod fails after a grace period).
	recheck = time.Second
)

// Run runs a command in a one-off pod made from the app's current release
// (see buildRunPod), waits for it with a watch, streams its output and
// returns the container's exit code as an ExitError. The pod is deleted
// on every way out: success, failure, Ctrl-C, SIGTERM, SIGHUP, a lost
// connection. With Detach it is left running and Run returns once it has
// started.
//
// Output comes from the container's log, from its first line, unless the
// run reads stdin (Stdin or TTY): then tug attaches to it, falling back to
// the log when attaching fails.
func Run(ctx context.Context, d Deps, o RunOptions) (res *RunResult, err error) {
	ctx, cancel := withHangup(ctx)
	defer cancel()
	src, err := loadRunSource(ctx, d, o)
	if err != nil {
		return nil, err
	}

	// The container is created with or without a TTY, so decide now.
	_, tty := ttyMode(d.IO, o.TTY)
	r := &runner{d: d, o: o, app: src.app, name: RunPodName(src.app.Name), progress: d.progress()}
	r.pod = buildRunPod(src.app, src.dep, runPodSpec{
		Name: r.name, Process: src.proc, Release: src.rel.Version, Command: o.Command,
		Stdin: o.Stdin || o.TTY, TTY: tty, Timeout: o.Timeout, EnvKeys: o.Env.Keys(), User: d.user(),
	})
	r.container = r.pod.Spec.Containers[0].Name

	// The pod goes first, then the wait for the audit event.
	var waitAudit func() error
	defer func() {
		r.cleanup(ctx)
		if waitAudit == nil {
			return
		}
		if aerr := waitAudit(); aerr != nil {
			warnf(d.IO.Stderr(), "%v", aerr)
		}
	}()
	if err := r.create(ctx); err != nil {
		return nil, err
	}
	waitAudit = r.audit(ctx, src)

	runCtx := ctx
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	code, err := r.run(runCtx, tty, src.what())
	return r.outcome(ctx, runCtx, code, err)
}

// runSource is what a run pod is made from: the app's current release and
// the Deployment it renders for the process the run copies.
type runSource struct {
	app  *app.App
	rel  *app.Release
	proc string
	dep  *appsv1.Deployment
}

// what names the release and process in the run's progress and audit lines.
func (s *runSource) what() string {
	return fmt.Sprintf("release v%d, process %s", s.rel.Version, s.proc)
}

// loadRunSource reads the app and its current release and renders the
// process's Deployment; a run of an app never deployed is refused before
// anything is created.
func loadRunSource(ctx context.Context, d Deps, o RunOptions) (*runSource, error) {
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, err := store.GetApp(ctx, o.App)
	if err != nil {
		return nil, err
	}
	if a.Release == 0 {
		return nil, fmt.Errorf("app %q has not been deployed, and a run uses its current release; deploy it with '%s app deploy %s --image IMAGE'", a.Name, d.finder().commandName, a.Name)
	}
	rel, cfg, err := store.GetRelease(ctx, a.Name, a.Release)
	if err != nil {
		return nil, err
	}
	proc, err := runProcess(a, rel, o.Process)
	if err != nil {
		return nil, err
	}
	dep := processDeployment(render.Release(a, rel, cfg), proc)
	if dep == nil || len(dep.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("release v%d of app %q renders no Deployment for process %q", rel.Version, a.Name, proc)
	}
	return &runSource{app: a, rel: rel, proc: proc, dep: dep}, nil
}

// audit records who ran what, from which release, as an Event on the run
// pod, and returns the wait for that write.
func (r *runner) audit(ctx context.Context, src *runSource) (wait func() error) {
	envNote := ""
	if len(r.o.Env) > 0 {
		envNote = " (with --env " + strings.Join(r.o.Env.Keys(), ", ") + ")"
	}
	command := AuditCommand(r.o.Command)
	return audit(ctx, r.d.Client, r.pod, ReasonRun, r.d.User, command,
		"%s ran: "+escapePct(fmt.Sprintf("%s (%s)%s", command, src.what(), envNote)))
}

// outcome is Run's answer for how the run ended: an interrupt (ctx) wins
// over everything but a detach, a non-zero exit code is an ExitError, and
// a run that outlived --timeout (runCtx) is a RunTimeoutError.
func (r *runner) outcome(ctx, runCtx context.Context, code int, err error) (*RunResult, error) {
	switch {
	case err == nil && r.detached:
		return &RunResult{Pod: r.name}, nil
	case ctx.Err() != nil:
		r.end(fmt.Sprintf("interrupted; deleting run pod %s", r.name))
		return nil, ctx.Err()
	case err == nil && code != 0:
		return &RunResult{Pod: r.name}, &ExitError{Code: code}
	case err == nil:
		return &RunResult{Pod: r.name}, nil
	case r.o.Timeout > 0 && (runCtx.Err() != nil || isTimeout(err)):
		r.end(fmt.Sprintf("%s timed out; deleting it", r.name))
		return nil, &RunTimeoutError{Pod: r.name, Timeout: r.o.Timeout}
	}
	return nil, err
}

// runner is one run pod's life.
type runner struct {
	d         Deps
	o         RunOptions
	app       *app.App
	name      string
	pod       *corev1.Pod
	container string
	progress  progress.Reporter
	spinning  bool

	secretCreated, created, finished, detached bool
}

func (r *runner) status(msg string) {
	r.spinning = true
	r.progress.Update(msg)
}

func (r *runner) done(msg string) {
	if r.spinning {
		r.spinning = false
		r.progress.Done(msg)
	}
}

// create makes the run's Secret (for --env) and pod. Neither request is
// cancelled by Ctrl-C: an answer lost half-way would leave a pod that
// cleanup does not know was made.
func (r *runner) create(parent context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), createTimeout)
	defer cancel()
	ns := r.d.Namespace
	if len(r.o.Env) > 0 {
		if _, err := r.d.Client.CoreV1().Secrets(ns).Create(ctx, runEnvSecret(r.app, r.name, r.o.Env), metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
			return fmt.Errorf("storing the run's --env: %w", kube.TranslateError(err))
		}
		r.secretCreated = true
	}
	created, err := r.d.Client.CoreV1().Pods(ns).Create(ctx, r.pod, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if err != nil {
		return fmt.Errorf("creating run pod: %w", kube.TranslateError(err))
	}
	r.created, r.pod = true, created
	if r.secretCreated {
		// The Secret goes with the pod, even if tug does not get to delete it.
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q}]}}`, created.Name, created.UID)
		if _, err := r.d.Client.CoreV1().Secrets(ns).Patch(ctx, runEnvSecretName(r.name), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
			warnf(r.d.IO.Stderr(), "the Secret %s of the run's --env will not be removed with the pod: %v", runEnvSecretName(r.name), kube.TranslateError(err))
		}
	}
	return parent.Err()
}

// run waits for the pod to start, streams its output and returns the
// container's exit code.
func (r *runner) run(ctx context.Context, tty bool, what string) (int, error) {
	started, err := r.start(ctx, what)
	if err != nil {
		return 0, err
	}
	if r.o.Detach {
		r.done(fmt.Sprintf("%s started (%s)", r.name, what))
		r.detached = true
		return 0, nil
	}
	r.done(fmt.Sprintf("%s running (%s)", r.name, what))

	if err := r.stream(ctx, tty, started); err != nil {
		return 0, err
	}
	return r.exitCode(ctx)
}

// start waits until the run's container runs or has ended, saying on the
// progress line why it waits when the reason is not routine, and returns
// the pod as it then was. A pod that cannot start is an error that says
// why: a start failure, or a command the runtime could not run.
func (r *runner) start(ctx context.Context, what string) (*corev1.Pod, error) {
	r.status(fmt.Sprintf("starting %s (%s)", r.name, what))
	started, err := watchPod(ctx, r.d.Client, r.d.Namespace, r.name, recheck, func(p *corev1.Pod) (bool, error) {
		if cs := containerStatus(p, r.container); cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil) {
			return true, nil
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return true, nil
		}
		if f := rollout.StartFailure(p, time.Now()); f != nil {
			return true, f
		}
		if why := waitingReason(p, r.container); !routineWait[why] {
			r.status(fmt.Sprintf("starting %s (%s): %s", r.name, what, why))
		}
		return false, nil
	})
	if err != nil {
		r.fail(err)
		return nil, err
	}
	if t := terminated(started, r.container); t != nil && (t.Reason == "StartError" || t.Reason == "ContainerCannotRun") {
		r.finished = true
		code := CodeCannotRun
		if c, _, ok := startFailure(errors.New(t.Message)); ok {
			code = c
		}
		err := &CommandError{Code: code, Msg: fmt.Sprintf("%s cannot run %s: %s", r.name, ShellJoin(r.o.Command), runtimeMessage(t.Message))}
		r.fail(err)
		return nil, err
	}
	if phaseTimedOut(started) {
		return nil, context.DeadlineExceeded
	}
	return started, nil
}

// exitCode waits, once the output has ended, for the container to
// terminate and returns its exit code, warning when it was OOMKilled.
func (r *runner) exitCode(ctx context.Context) (int, error) {
	final, err := watchPod(ctx, r.d.Client, r.d.Namespace, r.name, 0, func(p *corev1.Pod) (bool, error) {
		return terminated(p, r.container) != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		return 0, err
	}
	r.finished = true
	if phaseTimedOut(final) {
		return 0, context.DeadlineExceeded
	}
	t := terminated(final, r.container)
	if t == nil {
		return 0, fmt.Errorf("run pod %s ended (%s) without an exit code", r.name, final.Status.Phase)
	}
	if t.Reason == "OOMKilled" {
		warnf(r.d.IO.Stderr(), "%s was killed for using more memory than its limit (OOMKilled)", r.name)
	}
	return int(t.ExitCode), nil
}

// end leaves msg as a failure line, whether or not a step was in progress.
func (r *runner) end(msg string) {
	r.spinning = false
	r.progress.Fail(msg)
}

func (r *runner) fail(err error) {
	if r.spinning && !errors.Is(err, context.Canceled) {
		r.spinning = false
		var f *rollout.Failure
		if errors.As(err, &f) {
			r.progress.Fail(fmt.Sprintf("%s cannot start", r.name))
		} else {
			r.progress.Fail(fmt.Sprintf("%s did not start", r.name))
		}
	}
}

// stream copies the run's output: attached when it reads stdin, else from
// its log, which has every line from the first (attaching to a process
// that already runs misses what it printed before).
func (r *runner) stream(ctx context.Context, tty bool, p *corev1.Pod) error {
	out := &countingWriter{w: r.d.IO.Stdout()}
	if (r.o.Stdin || r.o.TTY) && terminated(p, r.container) == nil {
		target := Target{Namespace: r.d.Namespace, Pod: r.name, Container: r.container}
		err := withTerminal(ctx, r.d, tty, true, true, func(s Streams) error {
			s.Stdout = out
			return r.d.Executor.Attach(ctx, target, s)
		})
		if err == nil || ctx.Err() != nil {
			return err
		}
		if out.n.Load() > 0 {
			return fmt.Errorf("lost the connection to run pod %s: %w", r.name, kube.TranslateError(err))
		}
		warnf(r.d.IO.Stderr(), "could not attach to %s (%v); showing its output from its log instead", r.name, text.Excerpt(kube.TranslateError(err).Error()))
	}
	return r.copyLog(ctx, out)
}

func (r *runner) copyLog(ctx context.Context, out io.Writer) error {
	rc, err := r.d.Client.CoreV1().Pods(r.d.Namespace).GetLogs(r.name, &corev1.PodLogOptions{Container: r.container, Follow: true}).Stream(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("reading the output of run pod %s: %w", r.name, kube.TranslateError(err))
	}
	defer rc.Close()
	if _, err := io.Copy(out, rc); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("lost the connection to run pod %s: %w", r.name, kube.TranslateError(err))
	}
	return nil
}

// cleanup deletes the run pod (and its --env Secret) unless it was
// detached: at once when it has finished, with a short grace period when
// it still runs. It retries for a while when the API server does not
// answer, and says how to delete the pod by hand when it never does.
func (r *runner) cleanup(parent context.Context) {
	if r.spinning {
		r.spinning = false
		r.progress.Fail(fmt.Sprintf("deleting run pod %s", r.name))
	}
	if r.detached || (!r.created && !r.secretCreated) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cleanupTimeout)
	defer cancel()
	ns := r.d.Namespace
	grace := interruptGrace
	if r.finished {
		grace = 0
	}
	del := func(what, name string, call func(context.Context) error) {
		backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 8, Cap: 5 * time.Second}
		var last error
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			last = call(ctx)
			return last == nil || apierrors.IsNotFound(last), nil
		})
		if err != nil {
			fmt.Fprintf(r.d.IO.Stderr(), "error: could not delete %s %s: %v; delete it with 'kubectl delete %s %s -n %s'\n",
				what, name, text.Excerpt(kube.TranslateError(last).Error()), strings.ToLower(what), name, ns)
		}
	}
	if r.created {
		del("pod", r.name, func(ctx context.Context) error {
			return r.d.Client.CoreV1().Pods(ns).Delete(ctx, r.name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		})
	}
	if r.secretCreated {
		del("secret", runEnvSecretName(r.name), func(ctx context.Context) error {
			return r.d.Client.CoreV1().Secrets(ns).Delete(ctx, runEnvSecretName(r.name), metav1.DeleteOptions{})
		})
	}
}

// runProcess is the process whose pod template a run copies.
func runProcess(a *app.App, r *app.Release, proc string) (string, error) {
	names := make([]string, 0, len(r.Processes))
	for n := range r.Processes {
		names = append(names, n)
	}
	app.SortProcesses(names)
	if proc == "" {
		if len(names) == 0 {
			return "", fmt.Errorf("release v%d of app %q has no processes", r.Version, a.Name)
		}
		return names[0], nil
	}
	if _, ok := r.Processes[proc]; !ok {
		sort.Strings(names)
		return "", inputerr.Errorf("unknown process %q: app %q has %s", proc, a.Name, strings.Join(names, ", "))
	}
	return proc, nil
}

func processDeployment(objs render.Objects, proc string) *appsv1.Deployment {
	for _, d := range objs.Deployments {
		if d.Labels[kube.LabelProcess] == proc {
			return d
		}
	}
	return nil
}

func terminated(p *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	if cs := containerStatus(p, container); cs != nil {
		return cs.State.Terminated
	}
	return nil
}

// phaseTimedOut is a pod the kubelet stopped at its activeDeadlineSeconds.
func phaseTimedOut(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "DeadlineExceeded"
}

func isTimeout(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// routineWait are the steps every pod goes through on its way to running:
// not worth a progress line of their own.
var routineWait = map[string]bool{"": true, "pending": true, "waiting for a node": true, "ContainerCreating": true, "PodInitializing": true}

// waitingReason is what a starting pod waits for, in a few words.
func waitingReason(p *corev1.Pod, container string) string {
	if cs := containerStatus(p, container); cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
		return cs.State.Waiting.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			if c.Reason != "" {
				return c.Reason
			}
			return "waiting for a node"
		}
	}
	if p.Spec.NodeName == "" {
		return "waiting for a node"
	}
	return strings.ToLower(string(p.Status.Phase))
}

// runtimeExec finds the useful part of a container runtime's refusal to
// start a command, inside layers of "failed to create shim task: ...".
var runtimeExec = regexp.MustCompile(`exec: "[^"]*": [^:]+`)

func runtimeMessage(msg string) string {
	if m := runtimeExec.FindString(msg); m != "" {
		return m
	}
	return text.Excerpt(msg)
}
