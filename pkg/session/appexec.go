package session

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"tug.dev/tug/pkg/text"
)

// ExecOptions are `tug app exec`'s.
type ExecOptions struct {
	App     string
	Process string // narrows the units; "" for web (one unit) or all (--all)
	Unit    string
	All     bool
	Command []string
	Stdin   bool // one unit only
	TTY     bool // one unit only
}

// maxParallel bounds the sessions `app exec --all` opens at once.
const maxParallel = 32

// Exec runs a command in one unit, or in every running unit with All.
//
// In one unit, output is passed through as is and the exit code is the
// remote command's (an ExitError). In every unit, each line of output is
// prefixed with its unit's name (stdout lines on stdout, stderr lines on
// stderr) and the result is an *ExecError with the exit code of the first
// unit, in the order units are listed (web first, then by name), whose
// command did not succeed: its exit code, or 1 when the command could not be
// run there at all (126 or 127 when it is not executable or not found).
func Exec(ctx context.Context, d Deps, o ExecOptions) error {
	ctx, cancel := withHangup(ctx)
	defer cancel()
	f := d.finder()
	if err := f.load(ctx, Selection{App: o.App, Process: o.Process}); err != nil {
		return err
	}
	command := AuditCommand(o.Command)
	if !o.All {
		u, err := chooseUnit(ctx, d, f, o.Unit, o.Process)
		if err != nil {
			return err
		}
		wait := audit(ctx, d.Client, u.Pod, ReasonExec, d.User, command, "%s ran: "+escapePct(command))
		err = withTerminal(ctx, d, o.TTY, o.Stdin, false, func(s Streams) error {
			return d.Executor.Exec(ctx, u.target(d.Namespace), o.Command, s)
		})
		if aerr := wait(); aerr != nil {
			warnf(d.IO.Stderr(), "%v", aerr)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return remoteResult(err, "unit "+u.Name)
	}

	units, err := f.running(o.Process)
	if err != nil {
		return err
	}
	results := execAll(ctx, d, units, o.Command, command)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return summarize(results)
}

func (u Unit) target(ns string) Target {
	return Target{Namespace: ns, Pod: u.Name, Container: u.Container}
}

// unitResult is how a command ended in one unit.
type unitResult struct {
	Unit string
	Code int   // exit code; 0 for success
	Err  error // the command could not be run (Code then says how bad)
}

func execAll(ctx context.Context, d Deps, units []Unit, argv []string, command string) []unitResult {
	width := 0
	for _, u := range units {
		width = max(width, len(u.Name))
	}
	colors := NewColorizer(d.IO.ColorEnabled())
	errColors := NewColorizer(d.IO.ErrColorEnabled())
	stdout, stderr := NewSyncWriter(d.IO.Stdout()), NewSyncWriter(d.IO.Stderr())
	results := make([]unitResult, len(units))
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				results[i] = unitResult{Unit: u.Name, Code: 1, Err: ctx.Err()}
				return
			}
			wait := audit(ctx, d.Client, u.Pod, ReasonExec, d.User, command, "%s ran: "+escapePct(command))
			out := NewPrefixWriter(stdout, colors.UnitPrefix(u.Name, width))
			errOut := NewPrefixWriter(stderr, errColors.UnitPrefix(u.Name, width))
			err := d.Executor.Exec(ctx, u.target(d.Namespace), argv, Streams{Stdout: out, Stderr: errOut})
			_ = out.Close()
			r := unitResult{Unit: u.Name}
			if err != nil {
				if code, ok := ExitCode(err); ok {
					r.Code = code
				} else {
					r.Code, r.Err = 1, err
					if code, why, ok := startFailure(err); ok {
						r.Code, r.Err = code, fmt.Errorf("%s: %s", why, runtimeMessage(err.Error()))
					}
					fmt.Fprintf(errOut, "error: %s\n", text.Excerpt(r.Err.Error()))
				}
			}
			if aerr := wait(); aerr != nil {
				fmt.Fprintf(errOut, "warning: %v\n", aerr)
			}
			_ = errOut.Close()
			results[i] = r
		}()
	}
	wg.Wait()
	return results
}

// ExecError is the outcome of `app exec --all` when some unit's command
// did not succeed.
type ExecError struct {
	Code    int
	Failed  int
	Total   int
	Details []string
}

func (e *ExecError) Error() string {
	return fmt.Sprintf("the command failed in %d of %d units: %s", e.Failed, e.Total, strings.Join(e.Details, ", "))
}

func (e *ExecError) ExitCode() int { return e.Code }

func summarize(results []unitResult) error {
	e := &ExecError{Total: len(results)}
	for _, r := range results {
		if r.Code == 0 && r.Err == nil {
			continue
		}
		if e.Failed == 0 {
			e.Code = r.Code
		}
		e.Failed++
		if r.Err != nil {
			e.Details = append(e.Details, fmt.Sprintf("%s (%s)", r.Unit, text.Excerpt(r.Err.Error())))
		} else {
			e.Details = append(e.Details, fmt.Sprintf("%s (exit %d)", r.Unit, r.Code))
		}
	}
	if e.Failed == 0 {
		return nil
	}
	return e
}
