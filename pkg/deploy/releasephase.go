package deploy

import (
	"context"
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/text"
)

// What a result's releasePhase says happened to the release phase.
const (
	PhaseSucceeded = "succeeded"
	PhaseFailed    = "failed"
	PhaseSkipped   = "skipped" // --skip-release-phase
	PhasePlanned   = "planned" // --dry-run: it would run
)

// ReleasePhaseResult is the release phase in a rollout's result; its JSON
// shape is documented in docs/output.md. Command is sanitized
// (SanitizeCommand): it may be printed and logged.
type ReleasePhaseResult struct {
	Command  string `json:"command"`
	Status   string `json:"status"`
	ExitCode *int   `json:"exitCode,omitempty"`
}

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
// be run or watched to its end (the unit is removed either way). pkg/session
// provides it (RunReleasePhase); cmd/tug wires it into Deps.
type ReleasePhaseRunner func(ctx context.Context, spec ReleasePhaseSpec) (int, error)

// ReleasePhaseError is a release phase that exited non-zero: the deploy
// stopped before anything rolled out and the release is marked failed.
type ReleasePhaseError struct {
	App      string
	Release  int
	Code     int
	Previous int    // the release that keeps running; 0 when none
	Process  string // whose pod template the phase's unit copied
	// Result is the rollout's result (status failed, the failure of class
	// rollout.ClassReleasePhase), for -o json; Roll fills it in.
	Result *Result
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

// releasePhaseKinds are the kinds of release that run their release
// phase: Heroku's rule, a new release with new code or new config (a
// deploy, a config change, a rollback). Settings (limits, healthchecks,
// pool, tags, volumes, rollout settings) change neither, so they roll out
// without it.
var releasePhaseKinds = map[string]bool{app.KindDeploy: true, app.KindEnv: true, app.KindRollback: true}

// runsReleasePhase says whether release r, made from base, has a release
// phase to run when it rolls out (skipped or not): it has a command, and it
// brings new code or config: its kind is one of releasePhaseKinds, or it is
// a settings release that takes in config staged with --no-restart (base
// is newer than the deployed release).
func runsReleasePhase(a *app.App, base, r *app.Release) bool {
	if r.ReleaseCommand == "" {
		return false
	}
	return releasePhaseKinds[r.Kind] || (base != nil && base.Version > a.Release)
}

// releasePhase runs release r's release-phase command in a one-off unit of
// r, before any of its objects is applied. A non-zero exit is a
// *ReleasePhaseError.
func releasePhase(ctx context.Context, d Deps, a *app.App, r *app.Release, config app.ConfigMap, previous int) (*ReleasePhaseResult, error) {
	res := &ReleasePhaseResult{Command: SanitizeCommand(r.ReleaseCommand)}
	objs := d.Rendering(a, r, config)
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
		return res, fmt.Errorf("release v%d of app %q renders no Deployment to run its release phase in", r.Version, a.Name)
	}
	command, args := render.CommandLine(r.ReleaseCommand)
	d.Progress.Update(fmt.Sprintf("running the release phase of v%d", r.Version))
	code, err := d.ReleasePhase(ctx, ReleasePhaseSpec{
		App: a, Release: r.Version, Process: dep.Labels[kube.LabelProcess],
		Command: append(command, args...), Deployment: dep,
	})
	if err != nil {
		res.Status = PhaseFailed
		return res, err
	}
	res.ExitCode = &code
	if code != 0 {
		res.Status = PhaseFailed
		return res, &ReleasePhaseError{App: a.Name, Release: r.Version, Code: code, Previous: previous, Process: dep.Labels[kube.LabelProcess]}
	}
	res.Status = PhaseSucceeded
	d.Progress.Update(fmt.Sprintf("release phase of v%d succeeded", r.Version))
	return res, nil
}

// releasePhaseFailure is the Failure a result carries for a release phase
// that exited non-zero.
func releasePhaseFailure(e *ReleasePhaseError) *rollout.Failure {
	code := int32(e.Code)
	return &rollout.Failure{Class: rollout.ClassReleasePhase, Process: e.Process, Message: e.Reason(), ContainerExitCode: &code}
}

// plannedReleasePhase is a dry run's word on the release phase: the plan
// line, and the result's releasePhase (nil when none would run).
func plannedReleasePhase(a *app.App, base, r *app.Release, opts Options) (string, *ReleasePhaseResult) {
	if !runsReleasePhase(a, base, r) {
		return "", nil
	}
	cmd := SanitizeCommand(r.ReleaseCommand)
	if opts.SkipReleasePhase {
		return fmt.Sprintf("release phase: %q skipped (--skip-release-phase)", cmd), &ReleasePhaseResult{Command: cmd, Status: PhaseSkipped}
	}
	return fmt.Sprintf("release phase: %q would run once in a one-off unit of v%d before anything rolls out", cmd, r.Version),
		&ReleasePhaseResult{Command: cmd, Status: PhasePlanned}
}

var (
	// NAME=value, as a shell assignment or an env(1) argument
	assignment = regexp.MustCompile(`(^|[\s'"])([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|[^\s'"]+)`)
	// scheme://user:password@host
	urlPassword = regexp.MustCompile(`(://[^:/@\s]+:)[^@\s]+@`)
	// --password=value, --api-token=value, ...: a flag whose name says secret
	secretFlag = regexp.MustCompile(`(?i)(^|[\s'"])(--?[a-z0-9_-]*(?:pass|secret|token|key|credential|auth)[a-z0-9_-]*)=("[^"]*"|'[^']*'|[^\s'"]+)`)
)

// SanitizeCommand is how a release-phase command is shown (dry run, JSON
// results): on one line, values of NAME=value assignments and passwords in
// URLs and of flags named like secrets (--password=...) hidden: a Procfile
// line may carry a credential. A secret passed as a separate argument
// (-p VALUE) cannot be told from any other. Whoever prints it to a terminal
// quotes it (%q), so control characters cannot reach one; JSON escapes
// them itself.
func SanitizeCommand(cmd string) string {
	cmd = text.OneLine(cmd)
	cmd = assignment.ReplaceAllString(cmd, "$1$2=(hidden)")
	cmd = secretFlag.ReplaceAllString(cmd, "$1$2=(hidden)")
	cmd = urlPassword.ReplaceAllString(cmd, "${1}(hidden)@")
	return cmd
}
