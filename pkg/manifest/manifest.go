// Package manifest reads tug.yaml, an app's settings as code: its
// processes (command, units, limits, healthcheck), its release-phase
// command, its rollout settings and its jobs, applied by 'tug app deploy'
// as one release (docs/manifest.md). Every key and value is checked before
// anything is sent to the cluster; an error names the key and its line.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	yaml "go.yaml.in/yaml/v3"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
)

// FileName is the manifest 'tug app deploy' looks for in the app's folder.
const FileName = "tug.yaml"

// MaxBytes caps a manifest's size: it is a few screens of settings.
const MaxBytes = 256 << 10

// Manifest is a tug.yaml as read. A top-level section that is present is
// the whole truth of what it covers: processes lists every process type
// (with the Procfile's, see Processes) and its limits and healthcheck
// (absent: none), settings every rollout setting (absent: tug's default),
// jobs every job. A section that is absent leaves that part of the app as
// the release before had it.
type Manifest struct {
	// Path is where it was read from, for messages.
	Path string
	// Processes by name; nil when the file has no processes section.
	Processes map[string]Process
	// Release is the release-phase command; nil when not given, "" for none.
	Release *string
	// Settings are the rollout settings; nil when not given.
	Settings *app.Rollout
	// Jobs by name; nil when the file has no jobs section.
	Jobs map[string]app.Job
	// Services maps each bound service to its variables' prefix ("": the
	// plan's); nil when the file has no services section.
	Services map[string]string
	// ResolveService finds how a release binds a service the base release
	// does not bind yet (service.Binding); set by the command, which has
	// the cluster.
	ResolveService func(service, prefix string) (app.ServiceBinding, error)
	// App, Namespace and Context say which app the folder is, and where:
	// a command run in the folder (or below it) that is given no app
	// takes them (FindUp).
	App, Namespace, Context string
	// lines are the lines of processes' commands, for messages.
	lines map[string]int
}

// Process is one process type of the manifest.
type Process struct {
	// Command is the command line; nil: the Procfile's, else the image's.
	Command *string
	// Units is the unit count; nil keeps the current one (1 when new).
	Units       *int32
	Limits      app.Limits
	Healthcheck *app.Healthcheck
}

// Find is the manifest a deploy reads: path when given (it must exist),
// else tug.yaml in dir when there is one; nil when there is none.
func Find(path, dir string) (*Manifest, error) {
	shown := path
	if path == "" {
		path, shown = filepath.Join(dir, FileName), "./"+FileName
		if dir != "" {
			shown = path
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	b, err := app.ReadFileArgLimit("--manifest", path, MaxBytes)
	if err != nil {
		return nil, err
	}
	return Parse(shown, b)
}

// FindUp is the tug.yaml of folder dir or of the nearest folder above it
// that has one, read as Find reads it; nil when none has. Its Path says
// where it is relative to dir ("./tug.yaml", "../tug.yaml").
func FindUp(dir string) (*Manifest, error) {
	rel := "."
	for d := dir; ; {
		path := filepath.Join(d, FileName)
		if _, err := os.Stat(path); err == nil {
			b, err := app.ReadFileArgLimit("tug.yaml", path, MaxBytes)
			if err != nil {
				return nil, err
			}
			return Parse(rel+"/"+FileName, b)
		}
		up := filepath.Dir(d)
		if up == d {
			return nil, nil
		}
		d = up
		if rel == "." {
			rel = ".."
		} else {
			rel += "/.."
		}
	}
}

// Parse reads a manifest; every error is an input error naming the file,
// the line and the key.
func Parse(path string, data []byte) (*Manifest, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return &Manifest{Path: path}, nil
		}
		return nil, inputerr.Errorf("%s: %v", path, err)
	}
	m := &Manifest{Path: path, lines: map[string]int{}}
	p := parser{path: path}
	root := doc.Content[0]
	if err := p.each(root, "", func(key string, k, v *yaml.Node) error {
		switch key {
		case "processes":
			return p.processes(m, v)
		case "release":
			s, err := p.str(key, v)
			m.Release = &s
			return err
		case "settings":
			return p.settings(m, v)
		case "jobs":
			return p.jobs(m, v)
		case "services":
			return p.services(m, v)
		case "app":
			name, err := p.str(key, v)
			if err == nil {
				if verr := app.ValidateName(name); verr != nil {
					return p.errAt(v, key, "%v", verr)
				}
			}
			m.App = name
			return err
		case "namespace":
			var err error
			m.Namespace, err = p.str(key, v)
			return err
		case "context":
			var err error
			m.Context, err = p.str(key, v)
			return err
		}
		return p.unknown(k, "", "app, namespace, context, processes, release, settings, jobs, services")
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// parser reads the nodes of one file.
type parser struct{ path string }

// errAt is an input error at node n's line, naming the key.
func (p parser) errAt(n *yaml.Node, key, format string, a ...any) error {
	return inputerr.Errorf("%s:%d: %s: %s", p.path, n.Line, key, fmt.Sprintf(format, a...))
}

func (p parser) unknown(k *yaml.Node, parent, known string) error {
	key := k.Value
	if parent != "" {
		key = parent + "." + k.Value
	}
	return p.errAt(k, key, "unknown key (known here: %s)", known)
}

// each calls f for each key of mapping n, in order; a key given twice is an
// error, as is a node that is not a mapping.
func (p parser) each(n *yaml.Node, where string, f func(key string, k, v *yaml.Node) error) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		what := where
		if what == "" {
			what = "the file"
		}
		return inputerr.Errorf("%s:%d: %s must be a mapping of keys to values", p.path, n.Line, what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return p.errAt(k, join(where, k.Value), "given twice")
		}
		seen[k.Value] = true
		if err := f(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// str is a scalar's text; a mapping or list where text belongs is an error.
func (p parser) str(key string, v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", p.errAt(v, key, "want a single value, not a %s", kindName(v))
	}
	if v.Tag == "!!null" {
		return "", nil
	}
	return v.Value, nil
}

func kindName(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// integer is a whole number in [lo, hi].
func (p parser) integer(key string, v *yaml.Node, lo, hi int64) (int64, error) {
	s, err := p.str(key, v)
	if err != nil {
		return 0, err
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || fmt.Sprint(n) != s {
		return 0, p.errAt(v, key, "want a whole number, not %q", s)
	}
	if n < lo || n > hi {
		return 0, p.errAt(v, key, "must be from %d to %d, not %d", lo, hi, n)
	}
	return n, nil
}
