package exec

import (
	"context"
	"errors"
	"fmt"
	"io"

	"tug.dev/tug/pkg/deploy"
)

// RunReleasePhase runs a release's release-phase command in a one-off pod
// made from spec.Deployment's pod template (see buildRunPod), as 'tug run'
// does, with its output on stderr (stdout stays the deploy's result). It
// returns the command's exit code; a command that cannot be run counts as
// its shell code (126, 127). The pod is deleted on every way out.
// It is a deploy.ReleasePhaseRunner once d is bound:
//
//	deps.ReleasePhase = func(ctx context.Context, s deploy.ReleasePhaseSpec) (int, error) {
//		return exec.RunReleasePhase(ctx, execDeps, s)
//	}
func RunReleasePhase(ctx context.Context, d Deps, spec deploy.ReleasePhaseSpec) (int, error) {
	d.IO = stderrIO{d.IO}
	o := RunOptions{App: spec.App.Name, Process: spec.Process, Command: spec.Command}
	r := &runner{d: d, o: o, app: spec.App, name: RunPodName(spec.App.Name), progress: d.progress()}
	r.pod = buildRunPod(spec.App, spec.Deployment, runPodSpec{
		Name: r.name, Process: spec.Process, Release: spec.Release, Command: spec.Command, User: d.user(),
	})
	r.pod.Annotations[AnnotationRunProcess] = "release phase"
	r.container = r.pod.Spec.Containers[0].Name
	defer r.cleanup(ctx)
	if err := r.create(ctx); err != nil {
		return 0, err
	}
	code, err := r.run(ctx, false, fmt.Sprintf("release phase of v%d", spec.Release))
	var cannot *CommandError
	if errors.As(err, &cannot) {
		fmt.Fprintf(d.IO.Stderr(), "%s\n", cannot.Msg)
		return cannot.Code, nil
	}
	return code, err
}

// stderrIO is an IO whose stdout is its stderr.
type stderrIO struct{ IO }

func (s stderrIO) Stdout() io.Writer { return s.Stderr() }
