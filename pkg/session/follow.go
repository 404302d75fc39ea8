package session

import (
	"context"
)

// FollowPod follows a pod that something else made (a Job's, for 'tug job
// run'), as Run follows its own: it waits with a watch for the container to
// start (a pod that cannot start fails with the reason, as rollout.Failure
// or CommandError), streams the container's log from its first line to
// d.IO's stdout and returns its exit code. command is what the pod runs,
// for messages; what says whose pod it is ("job report of release v3").
// It deletes nothing: the pod's owner decides. context.DeadlineExceeded
// says the pod was stopped at its activeDeadlineSeconds.
func FollowPod(ctx context.Context, d Deps, pod, container string, command []string, what string) (int, error) {
	r := &runner{d: d, o: RunOptions{Command: command}, name: pod, container: container, progress: d.progress()}
	code, err := r.run(ctx, false, what)
	if r.spinning {
		r.spinning = false
		r.progress.Fail(pod + " ended")
	}
	return code, err
}
