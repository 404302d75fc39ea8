package session

import "context"

// ExecIn runs argv in one container on the user's terminal, as 'shell'
// does: with a TTY when wantTTY and stdin is a terminal (raw mode,
// resizes, restored on every exit), the remote exit code passed through.
// 'service connect' uses it for a service's unit, which is no app's unit.
func ExecIn(ctx context.Context, d Deps, t Target, argv []string, wantTTY bool) error {
	err := withTerminal(ctx, d, wantTTY, true, false, func(s Streams) error {
		return d.Executor.Exec(ctx, t, argv, s)
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return remoteResult(err, "unit "+t.Pod)
}
