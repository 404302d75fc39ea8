package deploy

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// CodeReleasePhase is the exit code of a deploy whose release phase failed
// (docs/exit-codes.md).
const CodeReleasePhase = 17

// ReleasePhaseSpec is one run of a release's release-phase command: a
// one-off unit of the new release, made from Deployment's pod template
// (the web process's, else the first), running Command.
type ReleasePhaseSpec struct {
	App        *app.App
	Release    int
	Process    string // whose pod template the unit copies
	Command    []string
	Deployment *appsv1.Deployment
}

// ReleasePhaseRunner runs a release phase to completion, streaming its
// output, and returns the command's exit code. An error means it could not
// be run or watched to its end (the unit is removed either way). pkg/exec
// provides it (RunReleasePhase); cmd/tug wires it into Deps.
type ReleasePhaseRunner func(ctx context.Context, spec ReleasePhaseSpec) (int, error)

// ReleasePhaseError is a release phase that exited non-zero: the deploy
// stopped before anything rolled out and the release is marked failed.
type ReleasePhaseError struct {
	App      string
	Release  int
	Code     int
	Previous int // the release that keeps running; 0 when none
}

// Reason is what the failed release's record says.
func (e *ReleasePhaseError) Reason() string {
	return fmt.Sprintf("release phase exited with code %d", e.Code)
}

func (e *ReleasePhaseError) Error() string {
	msg := fmt.Sprintf("release v%d of app %q failed: %s; nothing was rolled out", e.Release, e.App, e.Reason())
	if e.Previous > 0 {
		msg += fmt.Sprintf(", v%d keeps running", e.Previous)
	}
	return msg
}

// ExitCode is CodeReleasePhase, whatever the command's own code.
func (e *ReleasePhaseError) ExitCode() int { return CodeReleasePhase }

// WithReleaseCommand makes change's release carry a release-phase command
// (a Procfile's release: entry), which Roll runs before the rollout.
func WithReleaseCommand(change Change, command string) Change {
	if command == "" {
		return change
	}
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r, c, err := change(a, base, config)
		if r != nil {
			r.ReleaseCommand = command
		}
		return r, c, err
	}
}

// wantsReleasePhase says whether release r runs its release phase now.
func wantsReleasePhase(r *app.Release, opts Options) bool {
	return r.ReleaseCommand != "" && !opts.SkipReleasePhase
}

// releasePhase runs release r's release-phase command in a one-off unit of
// r, before any of its objects is applied. A non-zero exit is a
// *ReleasePhaseError.
func releasePhase(ctx context.Context, d Deps, a *app.App, r *app.Release, config app.ConfigMap, previous int) error {
	objs := Render(a, r, config)
	var dep *appsv1.Deployment
	for _, x := range objs.Deployments {
		if x.Labels[kube.LabelProcess] == app.WebProcess {
			dep = x
			break
		}
	}
	if dep == nil && len(objs.Deployments) > 0 {
		dep = objs.Deployments[0]
	}
	if dep == nil || len(dep.Spec.Template.Spec.Containers) == 0 {
		return fmt.Errorf("release v%d of app %q renders no Deployment to run its release phase in", r.Version, a.Name)
	}
	command, args := commandLine(r.ReleaseCommand)
	d.Progress.Update(fmt.Sprintf("running the release phase of v%d", r.Version))
	code, err := d.ReleasePhase(ctx, ReleasePhaseSpec{
		App: a, Release: r.Version, Process: dep.Labels[kube.LabelProcess],
		Command: append(command, args...), Deployment: dep,
	})
	if err != nil {
		return err
	}
	if code != 0 {
		return &ReleasePhaseError{App: a.Name, Release: r.Version, Code: code, Previous: previous}
	}
	return nil
}
