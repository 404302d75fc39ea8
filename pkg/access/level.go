// Package access is who may do what with tug in a namespace: four levels
// (viewer, developer, operator, admin), each a namespaced Role tug makes
// from what the commands of that level need; grants are RoleBindings
// labelled as tug's; a CI identity is a ServiceAccount whose tokens come
// from the TokenRequest API and are revoked by deleting it.
package access

import (
	"strings"

	"tug.dev/tug/pkg/inputerr"
)

// Level is what a tug user may do in a namespace. Each level holds every
// lower one.
type Level string

const (
	// Viewer lists apps, their units, logs and events; never config values
	// (no Secrets: release records hold the release's config).
	Viewer Level = "viewer"
	// Developer deploys, scales, restarts, runs, opens shells, sets config
	// and rolls back.
	Developer Level = "developer"
	// Operator adds domains, certificates, allow lists, maintenance,
	// services, jobs, volumes and registry credentials.
	Operator Level = "operator"
	// Admin creates and removes apps and grants access.
	Admin Level = "admin"
)

// AnnotationLevel is the cobra annotation with which each tug command
// declares the level it needs (cmd/tug's atLevel); docs/rbac/levels.md is
// generated from it.
const AnnotationLevel = "tug.dev/level"

// Levels are the levels, lowest first.
var Levels = []Level{Viewer, Developer, Operator, Admin}

// Rank is the level's place, 1 (viewer) to 4 (admin); 0 for no level.
func (l Level) Rank() int {
	for i, x := range Levels {
		if x == l {
			return i + 1
		}
	}
	return 0
}

// Below is the level under l; "" under viewer.
func (l Level) Below() Level {
	if r := l.Rank(); r > 1 {
		return Levels[r-2]
	}
	return ""
}

// Holds reports whether a holder of l may run what needs need.
func (l Level) Holds(need Level) bool { return l.Rank() >= need.Rank() && need.Rank() > 0 }

// RoleName is the namespaced Role of a level: tug-viewer, ... tug-admin.
func (l Level) RoleName() string { return "tug-" + string(l) }

// LevelOfRole is the level whose Role is name, or "".
func LevelOfRole(name string) Level {
	l := Level(strings.TrimPrefix(name, "tug-"))
	if l.Rank() == 0 || !strings.HasPrefix(name, "tug-") {
		return ""
	}
	return l
}

// ParseLevel reads a level a user typed (--role).
func ParseLevel(s string) (Level, error) {
	l := Level(strings.ToLower(strings.TrimSpace(s)))
	if l.Rank() == 0 {
		return "", inputerr.Errorf("unknown level %q: use viewer, developer, operator or admin", s)
	}
	return l, nil
}
