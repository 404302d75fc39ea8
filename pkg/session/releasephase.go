package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/text"
)

// RunReleasePhase runs a release's release-phase command in a one-off pod
// made from spec.Deployment's pod template (see buildRunPod), as 'tug run'
// does, with its output on stderr (stdout stays the deploy's result). It
// returns the command's exit code; a command that cannot be run counts as
// its shell code (126, 127). The pod is deleted on every way out.
// Audit Events (reason TugReleasePhase) on the pod record that the phase
// started and how it ended, with the exit code: never its output, and of
// its command only what AuditCommand keeps.
// It is a deploy.ReleasePhaseRunner once d is bound:
//
//	deps.ReleasePhase = func(ctx context.Context, s deploy.ReleasePhaseSpec) (int, error) {
//		return exec.RunReleasePhase(ctx, execDeps, s)
//	}
func RunReleasePhase(ctx context.Context, d Deps, spec deploy.ReleasePhaseSpec) (int, error) {
	// The phase's output is the cluster's text on tug's stderr: made safe
	// for a terminal (text.NewWriter) as it streams; lineEnd's closing
	// newline also ends any sequence the filter still holds.
	out := &lineEnd{w: text.NewWriter(d.IO.Stderr(), d.IO.ErrColorEnabled())}
	d.IO = stderrIO{IO: d.IO, out: out}
	o := RunOptions{App: spec.App.Name, Process: spec.Process, Command: spec.Command}
	r := &runner{d: d, o: o, app: spec.App, name: RunPodName(spec.App.Name), progress: d.progress()}
	r.pod = buildRunPod(spec.App, spec.Deployment, runPodSpec{
		Name: r.name, Process: spec.Process, Release: spec.Release, Command: spec.Command, User: d.user(),
	})
	r.pod.Annotations[AnnotationRunProcess] = "release phase"
	r.container = r.pod.Spec.Containers[0].Name
	var waits []func() error
	defer func() {
		r.cleanup(ctx)
		for _, wait := range waits {
			if err := wait(); err != nil {
				warnf(d.IO.Stderr(), "%v", err)
			}
		}
	}()
	if err := r.create(ctx); err != nil {
		return 0, err
	}
	command := AuditCommand(spec.Command)
	what := fmt.Sprintf("release phase of v%d", spec.Release)
	phaseEvent := func(phase, message string, code *int) func() error {
		return audit(ctx, d.Client, r.pod, ReasonReleasePhase, d.User, command, "%s: "+escapePct(message), func(ev *corev1.Event) {
			ev.Annotations[AnnotationRelease] = strconv.Itoa(spec.Release)
			ev.Annotations[AnnotationPhase] = phase
			if code != nil {
				ev.Annotations[AnnotationExitCode] = strconv.Itoa(*code)
			}
			if phase == deploy.PhaseFailed {
				ev.Type = corev1.EventTypeWarning
			}
		})
	}
	waits = append(waits, phaseEvent("started", fmt.Sprintf("%s started: %s", what, command), nil))

	code, err := r.run(ctx, false, what)
	out.finish() // the next progress line starts a line of its own
	var cannot *CommandError
	if errors.As(err, &cannot) {
		fmt.Fprintf(d.IO.Stderr(), "%s\n", cannot.Msg)
		code, err = cannot.Code, nil
	}
	switch {
	case err != nil:
		waits = append(waits, phaseEvent(deploy.PhaseFailed, what+" did not finish", nil))
	case code != 0:
		waits = append(waits, phaseEvent(deploy.PhaseFailed, fmt.Sprintf("%s failed with exit code %d", what, code), &code))
	default:
		waits = append(waits, phaseEvent(deploy.PhaseSucceeded, what+" succeeded (exit code 0)", &code))
	}
	return code, err
}

// stderrIO is an IO whose stdout and stderr both go to out (tug's
// stderr, through a lineEnd), so whichever of them ends the phase's output
// without a newline, the next progress line still starts a line.
type stderrIO struct {
	IO
	out io.Writer
}

func (s stderrIO) Stdout() io.Writer { return s.out }
func (s stderrIO) Stderr() io.Writer { return s.out }

// lineEnd is a writer that can end the last line written to it: output
// whose last line has no newline would run into the next progress line.
// The phase's stdout and stderr are copied to it at once, hence the lock.
type lineEnd struct {
	mu   sync.Mutex
	w    io.Writer
	open bool // the last byte written was not a newline
}

func (l *lineEnd) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if n > 0 {
		l.open = p[n-1] != '\n'
	}
	return n, err
}

func (l *lineEnd) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open {
		_, _ = l.w.Write([]byte("\n"))
		l.open = false
	}
}
