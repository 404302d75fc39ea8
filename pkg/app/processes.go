package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"tug.dev/tug/pkg/inputerr"
)

// ProcessChange is what a deploy says about the app's process types. A
// deploy changes only what it names: process types carry over from the
// release before, unless the deploy gives the whole list (a Procfile) or
// removes one by name (--remove-process). Removing a type is never a side
// effect of naming another.
type ProcessChange struct {
	// Set adds these process types or changes their commands; a command
	// "" runs the image's own command.
	Set map[string]string
	// Complete says Set is the whole list (a Procfile): every type it does
	// not name is removed.
	Complete bool
	// Remove drops these process types.
	Remove []string
	// From says where Set came from, for messages: "--process",
	// "Procfile ./Procfile", "" when the deploy named no process.
	From string
}

// Apply makes the process types of the next release from base's (those of
// the release the deploy starts from; nil before the first deploy). It
// returns them and the types base had that the result drops, sorted. An app
// whose deploys never named a process runs the image's own command as web.
func (c ProcessChange) Apply(base map[string]string) (procs map[string]string, removed []string, err error) {
	switch {
	case c.Complete:
		procs = maps.Clone(c.Set)
	case len(base) > 0:
		procs = maps.Clone(base)
		maps.Copy(procs, c.Set)
	case len(c.Set) > 0:
		procs = maps.Clone(c.Set)
	default:
		procs = map[string]string{WebProcess: ""}
	}
	for _, name := range c.Remove {
		if _, set := c.Set[name]; set {
			return nil, nil, inputerr.Errorf("process %q is both set (%s) and removed (--remove-process)", name, c.From)
		}
		if _, ok := procs[name]; !ok {
			return nil, nil, inputerr.Errorf("--remove-process %s: the app has no process %q (it has %s)", name, name, describeProcesses(procs))
		}
		delete(procs, name)
	}
	if len(procs) == 0 {
		return nil, nil, inputerr.Errorf("the deploy would leave the app no process to run; keep one (--process TYPE=CMD)")
	}
	for name := range base {
		if _, ok := procs[name]; !ok {
			removed = append(removed, name)
		}
	}
	SortProcesses(removed)
	return procs, removed, nil
}

// Describe says in a phrase where the processes come from and what they
// are, for a deploy's first line: `processes from Procfile ./Procfile:
// web, worker`.
func (c ProcessChange) Describe() string {
	if c.From == "" {
		return ""
	}
	names := slices.Collect(maps.Keys(c.Set))
	SortProcesses(names)
	return fmt.Sprintf("processes from %s: %s", c.From, strings.Join(names, ", "))
}

// Guarded says which of the removed process types a deploy may remove only
// when the user says so (a terminal asks, a pipe needs --yes): those with
// units, and web while domains route to it.
func Guarded(a *App, removed []string) []string {
	var guarded []string
	for _, name := range removed {
		p, ok := a.Processes[name]
		if ok && p.Units() > 0 || p.Autoscale != nil || name == WebProcess && len(a.Domains) > 0 {
			guarded = append(guarded, name)
		}
	}
	return guarded
}

func describeProcesses(procs map[string]string) string {
	if len(procs) == 0 {
		return "none"
	}
	names := slices.Collect(maps.Keys(procs))
	SortProcesses(names)
	return strings.Join(names, ", ")
}
