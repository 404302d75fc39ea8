package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/render"
)

// MergeProcesses merges the manifest's process types into what the deploy's
// flags and Procfile say (pc, and the Procfile's release-phase command):
//   - --process TYPE=CMD wins over the manifest's command for TYPE, and
//     --remove-process drops a type the manifest lists;
//   - a Procfile beside tug.yaml gives the commands tug.yaml leaves out,
//     and its types join the list; a type both give a command to must be
//     given the same one, else the deploy is refused (exit 2) naming both,
//     so the two files never silently disagree. The same holds for the
//     release-phase command.
//
// Without a processes section the deploy's own change is kept as it is.
func (m *Manifest) MergeProcesses(pc app.ProcessChange, release string) (app.ProcessChange, string, error) {
	rel, err := m.release(pc, release)
	if m == nil || m.Processes == nil || err != nil {
		return pc, rel, err
	}
	set := map[string]string{}
	procfile := pc.Complete
	for _, name := range slices.Sorted(maps.Keys(m.Processes)) {
		p := m.Processes[name]
		theirs, named := pc.Set[name]
		switch {
		case p.Command == nil && named:
			set[name] = theirs
		case p.Command == nil:
			set[name] = "" // the image's own command
		case procfile && named && theirs != *p.Command:
			return pc, "", inputerr.Errorf("%s:%d: processes.%s.command %q differs from %s's %q: give the command in one of them", m.Path, m.lines[name], name, *p.Command, pc.From, theirs)
		default:
			set[name] = *p.Command
		}
	}
	// what the flags or the Procfile add (flags win over the manifest)
	maps.Copy(set, pc.Set)
	remove := pc.Remove[:0:0]
	for _, name := range pc.Remove {
		if _, ok := set[name]; ok {
			delete(set, name)
			continue
		}
		remove = append(remove, name)
	}
	from := m.Path
	if pc.From != "" {
		from += " and " + pc.From
	}
	return app.ProcessChange{Set: set, Complete: true, Remove: remove, From: from}, rel, nil
}

// release is the release-phase command: the manifest's, unless a Procfile
// gives a different one.
func (m *Manifest) release(pc app.ProcessChange, release string) (string, error) {
	if m == nil || m.Release == nil {
		return release, nil
	}
	if release != "" && release != *m.Release {
		return "", inputerr.Errorf("%s: release %q differs from %s's release: %q; give it in one of them", m.Path, *m.Release, pc.From, release)
	}
	return *m.Release, nil
}

// Change wraps a deploy's change so the release it makes also carries what
// the manifest says: the limits and healthchecks of its processes, its
// rollout settings and jobs, and the units of each process (in the app's
// record, written with the release under the same lock). Nothing is
// written unless the whole release is.
func (m *Manifest) Change(inner deploy.Change) deploy.Change {
	if m == nil {
		return inner
	}
	return func(a *app.App, base *app.Release, config app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r, cfg, err := inner(a, base, config)
		if err != nil || r == nil {
			return r, cfg, err
		}
		if err := m.applyProcesses(a, r); err != nil {
			return nil, nil, err
		}
		if m.Release != nil {
			r.ReleaseCommand = *m.Release
		}
		if m.Settings != nil {
			r.Rollout = *m.Settings
		}
		if m.Jobs != nil {
			r.Jobs = maps.Clone(m.Jobs)
			if len(r.Jobs) == 0 {
				r.Jobs = nil
			}
		}
		if m.Services != nil {
			before := r.Services
			if r.Services, err = m.bindings(before); err != nil {
				return nil, nil, err
			}
			if err := m.configClash(a.Name, before, r.Services, cfg); err != nil {
				return nil, nil, err
			}
		}
		return r, cfg, nil
	}
}

func (m *Manifest) applyProcesses(a *app.App, r *app.Release) error {
	for _, name := range slices.Sorted(maps.Keys(m.Processes)) {
		p := m.Processes[name]
		if _, ok := r.Processes[name]; !ok {
			continue // removed by --remove-process
		}
		if p.Limits.IsZero() {
			delete(r.Limits, name)
		} else {
			if r.Limits == nil {
				r.Limits = map[string]app.Limits{}
			}
			r.Limits[name] = p.Limits
		}
		if p.Healthcheck == nil {
			delete(r.Healthchecks, name)
		} else {
			if r.Healthchecks == nil {
				r.Healthchecks = map[string]app.Healthcheck{}
			}
			r.Healthchecks[name] = *p.Healthcheck
		}
		if p.Units == nil {
			continue
		}
		cur := a.Processes[name]
		if cur.Autoscale != nil {
			return inputerr.Errorf("%s: processes.%s.units: the process is autoscaled (%d-%d units); remove units from the file or the autoscaler ('tug app autoscale unset %s %s')", m.Path, name, cur.Autoscale.Min, cur.Autoscale.Max, a.Name, name)
		}
		cur.Replicas = *p.Units
		if a.Processes == nil {
			a.Processes = map[string]app.Process{}
		}
		a.Processes[name] = cur
	}
	return nil
}

// Describe says, for the deploy's progress, what the manifest sets.
func (m *Manifest) Describe() string {
	if m == nil {
		return ""
	}
	var parts []string
	if m.Processes != nil {
		parts = append(parts, "processes "+strings.Join(slices.Sorted(maps.Keys(m.Processes)), ", "))
	}
	if m.Jobs != nil {
		parts = append(parts, "jobs "+strings.Join(slices.Sorted(maps.Keys(m.Jobs)), ", "))
	}
	if m.Settings != nil {
		parts = append(parts, "settings")
	}
	if len(m.Services) > 0 {
		parts = append(parts, "services "+strings.Join(slices.Sorted(maps.Keys(m.Services)), ", "))
	} else if m.Services != nil {
		parts = append(parts, "no services")
	}
	if m.Release != nil {
		parts = append(parts, "release")
	}
	if len(parts) == 0 {
		return "read " + m.Path + " (empty)"
	}
	return "read " + m.Path + ": " + strings.Join(parts, "; ")
}

// bindings are the release's service bindings as the services section
// says: a binding the release has already is kept (its prefix changed if
// the file names another), a new one is resolved from the cluster.
func (m *Manifest) bindings(cur []app.ServiceBinding) ([]app.ServiceBinding, error) {
	var out []app.ServiceBinding
	for _, name := range slices.Sorted(maps.Keys(m.Services)) {
		prefix := m.Services[name]
		i := slices.IndexFunc(cur, func(b app.ServiceBinding) bool { return b.Service == name })
		if i >= 0 {
			b := cur[i]
			if prefix != "" {
				b.Prefix = prefix
			}
			out = append(out, b)
			continue
		}
		if m.ResolveService == nil {
			return nil, fmt.Errorf("%s: services.%s: cannot bind a service here", m.Path, name)
		}
		b, err := m.ResolveService(name, prefix)
		if err != nil {
			return nil, fmt.Errorf("%s: services.%s: %w", m.Path, name, err)
		}
		out = append(out, b)
	}
	seen := map[string]string{}
	for _, b := range out {
		if other, dup := seen[b.Prefix]; dup {
			return nil, inputerr.Errorf("%s: services %s and %s both give %s_URL; give one another prefix with as:", m.Path, other, b.Service, b.Prefix)
		}
		seen[b.Prefix] = b.Service
	}
	return out, nil
}

// configClash refuses, as 'tug service bind' does, a binding the file adds
// (or gives another prefix) whose variables the app's config already sets:
// which value a unit sees would depend on their order in its spec.
// Bindings the release has already, unchanged, were checked when made.
func (m *Manifest) configClash(appName string, before, after []app.ServiceBinding, config app.ConfigMap) error {
	for _, b := range after {
		if slices.ContainsFunc(before, func(o app.ServiceBinding) bool { return o.Service == b.Service && o.Prefix == b.Prefix }) {
			continue
		}
		for _, v := range render.BindingVariables(b) {
			if _, ok := config[v]; ok {
				return inputerr.Errorf("%s: services.%s: app %q's config sets %s, which binding service %q would set too: unset it first ('tug env unset %s %s') or give the binding another prefix with as:", m.Path, b.Service, appName, v, b.Service, appName, v)
			}
		}
	}
	return nil
}
