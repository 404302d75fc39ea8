package session

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/text"
)

// ShellOptions are `tug shell`'s.
type ShellOptions struct {
	App     string
	Unit    string // "" to choose one
	Process string // narrows the choice
	// Command replaces the default shell (bash, else sh): a command line,
	// run through /bin/sh -c when it needs a shell.
	Command string
}

// Shell opens an interactive shell in one of the app's units, with a TTY
// when stdin is a terminal (raw mode and live resize), and plain streams
// when it is not, so `echo 'ls /' | tug shell APP` works. The remote exit
// code comes back as an ExitError.
func Shell(ctx context.Context, d Deps, o ShellOptions) error {
	ctx, cancel := withHangup(ctx)
	defer cancel()
	f := d.finder()
	if err := f.load(ctx, Selection{App: o.App, Process: o.Process}); err != nil {
		return err
	}
	u, err := chooseUnit(ctx, d, f, o.Unit, o.Process)
	if err != nil {
		return err
	}
	tty := d.IO.IsStdinTTY()
	command, described := shellCommand(o.Command, tty, d.IO.TermType())
	described = auditShell(o.Command, described)
	wait := audit(ctx, d.Client, u.Pod, ReasonShell, d.User, described, "%s opened a shell: "+escapePct(described))
	err = withTerminal(ctx, d, tty, true, false, func(s Streams) error {
		return d.Executor.Exec(ctx, Target{Namespace: d.Namespace, Pod: u.Name, Container: u.Container}, command, s)
	})
	if aerr := wait(); aerr != nil {
		warnf(d.IO.Stderr(), "%v", aerr)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, exited := ExitCode(err); err != nil && !exited && o.Command == "" {
		if code, _, ok := startFailure(err); ok {
			return &CommandError{Code: code, Msg: fmt.Sprintf("no shell in unit %s: the image has no /bin/sh; name a command with --command", u.Name)}
		}
	}
	return remoteResult(err, "unit "+u.Name)
}

// chooseUnit picks the unit a single-unit command runs in: the one named;
// else, when a person can answer and there are several running units, the
// one they pick; else the first ready unit of the process (web by default).
func chooseUnit(ctx context.Context, d Deps, f *unitFinder, name, proc string) (Unit, error) {
	if name != "" {
		u, err := f.named(name)
		if err != nil {
			return Unit{}, err
		}
		if proc != "" && u.Process != proc {
			return Unit{}, inputerr.Errorf("unit %q runs process %q, not %q", name, u.Process, proc)
		}
		return u, nil
	}
	if d.IO.CanPrompt() && d.Prompter != nil {
		units, err := f.running(proc)
		if err != nil {
			return Unit{}, err
		}
		if len(units) == 1 {
			return units[0], nil
		}
		SortUnits(units)
		return promptUnit(ctx, d.Prompter, units)
	}
	p := proc
	if p == "" {
		p = f.defaultProcess()
	}
	units, err := f.running(p)
	if err != nil && proc == "" {
		// no unit of the default process runs: any unit will do
		if any, anyErr := f.running(""); anyErr == nil {
			return any[0], nil
		}
	}
	if err != nil {
		return Unit{}, err
	}
	return units[0], nil
}

func promptUnit(ctx context.Context, p Prompter, units []Unit) (Unit, error) {
	width := 0
	for _, u := range units {
		width = max(width, len(u.Name))
	}
	options := make([]string, len(units))
	byOption := map[string]Unit{}
	for i, u := range units {
		options[i] = fmt.Sprintf("%-*s  %s, %s, on %s, up %s", width, u.Name, u.Process, unitState(u), u.Node, text.Age(u.Created))
		byOption[options[i]] = u
	}
	choice, err := p.Select(ctx, "Which unit?", options, options[0])
	if err != nil {
		return Unit{}, err
	}
	return byOption[choice], nil
}

func escapePct(s string) string { return strings.ReplaceAll(s, "%", "%%") }

var termRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// shellCommand is what runs for a shell: bash when the image has it, else
// sh, through /bin/sh so that the choice costs no second round trip (and
// piped input is never consumed by a failed first try). With a TTY the
// local TERM goes along, so full-screen programs and line editing work
// (exec'd processes get no TERM otherwise). described is how audit events
// and messages show it.
func shellCommand(command string, tty bool, term string) (argv []string, described string) {
	if command != "" {
		return CommandLine(command), command
	}
	script := "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh"
	if tty {
		if !termRE.MatchString(term) {
			term = "xterm"
		}
		script = "TERM=" + term + "; export TERM; " + script
	}
	return []string{"/bin/sh", "-c", script}, "bash, else sh"
}

// CommandLine turns a command line typed as one string into argv: plain
// words are run directly (images without a shell work); anything that
// needs a shell (quotes, variables, pipes, globs, ...) runs under
// /bin/sh -c.
func CommandLine(line string) []string {
	if strings.ContainsAny(line, "\"'`$\\|&;<>(){}[]*?~#!\n") {
		return []string{"/bin/sh", "-c", line}
	}
	return strings.Fields(line)
}
