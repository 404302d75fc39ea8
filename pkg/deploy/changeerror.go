package deploy

import "tug.dev/tug/pkg/rollout"

// A ChangeError is a change to an app that failed once it began: the one
// shape every such error shares, whatever the change (a rollout, a
// formation change, a move). Its Kind and its Diagnosis alone decide the
// command's exit code (Kind.ExitCode, docs/exit-codes.md); the concrete
// types (*Error, *ReshapeError, *ReleasePhaseError, *RemovalError,
// move.Error, move.UnfinishedError) add what their message says: what
// was put back, what is left, what to run next.
type ChangeError interface {
	error
	// Kind says which change failed, and how.
	Kind() Kind
	// Diagnosis is why the units did not come up, when that is why the
	// change failed; nil otherwise.
	Diagnosis() *rollout.Failure
}

// Kind is what kind of change failed.
type Kind string

const (
	// KindRollout: a release's units did not come up (*Error); rolled back
	// unless --no-rollback. Exit code: the failure class's, 10-15.
	KindRollout Kind = "rollout"
	// KindFormation: changed unit counts did not come up (*ReshapeError);
	// the previous ones were put back. Exit code: the class's, 10-15.
	KindFormation Kind = "formation"
	// KindReleasePhase: the release phase exited non-zero
	// (*ReleasePhaseError); nothing was rolled out. Exit code 17.
	KindReleasePhase Kind = "release-phase"
	// KindRefused: the change would remove what it was not told it may
	// (*RemovalError); nothing changed. Exit code 2, as for bad input.
	KindRefused Kind = "refused"
	// KindMove: a move failed before its switch (move.Error); the app
	// serves where it was. KindUnfinishedMove: the app serves in the
	// target, but its old copy is left (move.UnfinishedError). Neither has
	// a code of its own: the exit code is that of what stopped the move (a
	// failed rollout's 10-15, else 1).
	KindMove           Kind = "move"
	KindUnfinishedMove Kind = "unfinished-move"
)

// ExitCode is the exit code of a change of kind k that failed with
// diagnosis f (nil: none); 0 for the move kinds, whose code is their
// cause's.
func (k Kind) ExitCode(f *rollout.Failure) int {
	switch k {
	case KindRollout, KindFormation:
		return f.ExitCode()
	case KindReleasePhase:
		return rollout.CodeReleasePhase
	case KindRefused:
		return 2
	}
	return 0
}

func (e *Error) Kind() Kind                              { return KindRollout }
func (e *Error) Diagnosis() *rollout.Failure             { return e.Result.Failure }
func (e *ReshapeError) Kind() Kind                       { return KindFormation }
func (e *ReshapeError) Diagnosis() *rollout.Failure      { return e.Failure }
func (e *ReleasePhaseError) Kind() Kind                  { return KindReleasePhase }
func (e *ReleasePhaseError) Diagnosis() *rollout.Failure { return releasePhaseFailure(e) }
func (e *RemovalError) Kind() Kind                       { return KindRefused }
func (e *RemovalError) Diagnosis() *rollout.Failure      { return nil }

// ExitCode is the code of the change's kind (docs/exit-codes.md).
func (e *Error) ExitCode() int { return e.Kind().ExitCode(e.Diagnosis()) }

// ExitCode is the code of the change's kind (docs/exit-codes.md).
func (e *ReshapeError) ExitCode() int { return e.Kind().ExitCode(e.Diagnosis()) }

// ExitCode is the code of the change's kind: rollout.CodeReleasePhase,
// whatever the phase's own code.
func (e *ReleasePhaseError) ExitCode() int { return e.Kind().ExitCode(nil) }

// ExitCode: removing what was not asked for is an input error.
func (e *RemovalError) ExitCode() int { return e.Kind().ExitCode(nil) }
