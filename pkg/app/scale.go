package app

import (
	"fmt"
	"strconv"
	"strings"

	"tug.dev/tug/pkg/inputerr"
)

// MaxUnits is the most units one process may have: what scale, unit add
// and autoscale accept, and what a relative change may reach.
const MaxUnits = 10000

// ScaleOp is one argument of `tug app scale`: web=3, web+1 or web-1.
type ScaleOp struct {
	Process string
	Op      byte // '=', '+' or '-'
	N       int32
}

// ParseScale reads Deis-style scale arguments.
func ParseScale(args []string) ([]ScaleOp, error) {
	if len(args) == 0 {
		return nil, inputerr.Errorf("nothing to scale: give PROCESS=N, PROCESS+N or PROCESS-N")
	}
	seen := map[string]bool{}
	ops := make([]ScaleOp, 0, len(args))
	for _, arg := range args {
		i := strings.IndexAny(arg, "=+-") // process names have none of these
		if i <= 0 || i == len(arg)-1 {
			return nil, inputerr.Errorf("invalid scale %q: want PROCESS=N, PROCESS+N or PROCESS-N", arg)
		}
		name, op, num := arg[:i], arg[i], arg[i+1:]
		if op == '=' && strings.HasPrefix(num, "-") {
			return nil, inputerr.Errorf("invalid scale %q: a unit count cannot be negative", arg)
		}
		if err := ValidateProcessName(name); err != nil {
			return nil, inputerr.Errorf("invalid scale %q: %w", arg, err)
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n > MaxUnits {
			return nil, inputerr.Errorf("invalid scale %q: %q is not a unit count from 0 to %d", arg, num, MaxUnits)
		}
		if seen[name] {
			return nil, inputerr.Errorf("process %q is scaled twice", name)
		}
		seen[name] = true
		ops = append(ops, ScaleOp{Process: name, Op: op, N: int32(n)})
	}
	return ops, nil
}

// ParseUnitCount reads the N of `tug unit add|remove APP N`: 1 to 10000.
func ParseUnitCount(s string) (int32, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxUnits {
		return 0, inputerr.Errorf("invalid unit count %q: want a whole number from 1 to %d", s, MaxUnits)
	}
	return int32(n), nil
}

// UnknownProcessError names a process the app does not have, and the ones it has.
type UnknownProcessError struct {
	App, Process string
	Known        []string
}

func (e *UnknownProcessError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("app %q has no processes yet; deploy it first", e.App)
	}
	return fmt.Sprintf("app %q has no process %q; its processes are %s", e.App, e.Process, strings.Join(e.Known, ", "))
}

// Process returns the named process, or an UnknownProcessError.
func (a *App) Process(name string) (Process, error) {
	p, ok := a.Processes[name]
	if !ok {
		return Process{}, inputerr.Wrap(&UnknownProcessError{App: a.Name, Process: name, Known: a.ProcessNames()})
	}
	return p, nil
}

// DefaultProcess is the process a command means when none is named: the
// only one, else web.
func (a *App) DefaultProcess() (string, error) {
	names := a.ProcessNames()
	switch {
	case len(names) == 1:
		return names[0], nil
	case len(names) == 0:
		return "", inputerr.Wrap(&UnknownProcessError{App: a.Name})
	}
	if _, ok := a.Processes[WebProcess]; ok {
		return WebProcess, nil
	}
	return "", fmt.Errorf("app %q has several processes (%s): choose one with -p", a.Name, strings.Join(names, ", "))
}

// ApplyScale changes the app's unit counts. It refuses autoscaled processes
// and counts below zero or above MaxUnits (input errors), changing nothing
// unless every operation is valid.
func (a *App) ApplyScale(ops []ScaleOp) error {
	next := map[string]Process{}
	for _, op := range ops {
		p, err := a.Process(op.Process)
		if err != nil {
			return err
		}
		if p.Autoscale != nil {
			return fmt.Errorf("process %q of app %q autoscales between %d and %d units; change that with 'tug app autoscale set' or stop it with 'tug app autoscale unset'",
				op.Process, a.Name, p.Autoscale.Min, p.Autoscale.Max)
		}
		switch op.Op {
		case '=':
			p.Replicas = op.N
		case '+':
			if int64(p.Replicas)+int64(op.N) > MaxUnits {
				return inputerr.Errorf("process %q has %d units; adding %d would make %d, more than the limit of %d", op.Process, p.Replicas, op.N, int64(p.Replicas)+int64(op.N), MaxUnits)
			}
			p.Replicas += op.N
		case '-':
			if op.N > p.Replicas {
				return fmt.Errorf("process %q has %d units; cannot remove %d", op.Process, p.Replicas, op.N)
			}
			p.Replicas -= op.N
		}
		p.Stopped = false
		next[op.Process] = p
	}
	for name, p := range next {
		a.Processes[name] = p
	}
	return nil
}
