package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"tug.dev/tug/pkg/inputerr"
)

// Finding an app: with clusters configured, an app command goes to the
// cluster that holds the app (tsuru's clusterForPool, done by asking rather
// than by trusting the map alone: the map may change after an app was
// placed). Every configured cluster is asked at once, one GET each.

// Copy is what one cluster holds of an app.
type Copy struct {
	Found bool
	// Namespace is where the cluster was searched (the context's, or -n).
	Namespace string
	// Pool is the app's pool, as its record says.
	Pool string
	// Move is the copy's part in an unfinished move between clusters:
	// MoveNone, MoveServing, MoveTarget or MoveSuperseded.
	Move MoveMark
	// Describe says where the move stands, for messages ("" with none),
	// MovePool is the pool the move is to, and MoveTo the cluster (tug's
	// name for it, as the move's mark records it).
	Describe string
	MovePool string
	MoveTo   string
}

// MoveMark ranks a copy of an app during a move: commands go to the copy
// that serves.
type MoveMark int

const (
	// MoveNone: an app's only copy, or the source of a move that still serves.
	MoveNone MoveMark = iota
	// MoveTarget: the copy a move is making; it serves only once the
	// source is superseded.
	MoveTarget
	// MoveSuperseded: the source of a move whose target serves now.
	MoveSuperseded
)

// Finder asks the cluster reached by kubeContext whether it holds app.
// An error means the cluster could not answer (unreachable, forbidden);
// an app it does not hold is a Copy with Found false.
type Finder func(ctx context.Context, kubeContext, appName string) (Copy, error)

// Searched is one cluster the lookup asked.
type Searched struct {
	Cluster
	Copy
	Err error
}

// Location is where an app was found.
type Location struct {
	App string
	// Found: Cluster is where commands for the app go.
	Found bool
	Cluster
	Copy Copy
	// Clusters are every cluster asked, in the config's order: one per
	// kubeconfig context (see byContext).
	Clusters []Searched
}

// Others are the other clusters that hold a copy of the app: the remains
// of an unfinished move.
func (l *Location) Others() []Searched {
	var out []Searched
	for _, s := range l.Clusters {
		if s.Err == nil && s.Found && (!l.Found || s.Name != l.Name) {
			out = append(out, s)
		}
	}
	return out
}

// Orphaned reports whether the app was found only as the new copy of a
// move that never switched over, with no configured cluster holding its
// old copy (removed by hand, or its cluster no longer in tug's map): a
// copy that may never have run, which commands reach but must not take
// for the app silently.
func (l *Location) Orphaned() bool {
	return l.Found && l.Copy.Move == MoveTarget && len(l.Others()) == 0 && len(l.Unreachable()) == 0
}

// Unreachable are the clusters that did not answer.
func (l *Location) Unreachable() []Searched {
	var out []Searched
	for _, s := range l.Clusters {
		if s.Err != nil {
			out = append(out, s)
		}
	}
	return out
}

// AnswerGrace is how long Locate waits for the other clusters once one of
// them holds an unmarked copy of the app (the best a copy can be): a slow or
// unreachable cluster elsewhere must not hold up every command for an app
// that is plainly found. What it would have said is only an ambiguity
// check (the same name in two clusters), not worth a request timeout.
var AnswerGrace = 2 * time.Second

// Locate asks every configured cluster at once whether it holds appName
// (each kubeconfig context once, however many tug names it has: see
// byContext) and picks the one commands should go to: the only holder; during an
// unfinished move, the copy that serves (not superseded, and of those
// the unmarked one). A cluster that does not answer is ignored when
// another holds an unmarked copy; when the best copy found is one side of
// an unfinished move, a silent cluster may hold the side that serves, so
// that is an *IncompleteError rather than a guess. Several equally good
// holders are an *AmbiguousError (a usage error: --context picks one).
// Found is false when no cluster holds the app; NotFound then explains
// the command's own not-found error.
func Locate(ctx context.Context, cfg *Config, appName string, find Finder) (*Location, error) {
	groups := byContext(cfg.Clusters)
	loc := &Location{App: appName, Clusters: make([]Searched, len(groups))}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		i int
		Searched
	}
	answers := make(chan answer, len(groups))
	for i, g := range groups {
		go func() {
			c, err := find(ctx, g[0].Context, appName)
			answers <- answer{i, Searched{Cluster: cfg.nameCopy(g, c, err), Copy: c, Err: err}}
		}()
	}
	var grace <-chan time.Time
	answered := make([]bool, len(groups))
	for pending := len(groups); pending > 0; pending-- {
		select {
		case a := <-answers:
			loc.Clusters[a.i], answered[a.i] = a.Searched, true
			if grace == nil && a.Err == nil && a.Found && a.Move == MoveNone {
				grace = time.After(AnswerGrace)
			}
			continue
		case <-grace:
		}
		for i, g := range groups {
			if !answered[i] {
				loc.Clusters[i] = Searched{Cluster: g[0], Err: fmt.Errorf("no answer within %s of another cluster's", AnswerGrace)}
			}
		}
		break
	}
	best, at := bestCopies(loc.Clusters)
	switch len(at) {
	case 0:
		return loc, nil
	case 1:
		if best != MoveNone && len(loc.Unreachable()) > 0 {
			return loc, &IncompleteError{App: appName, Copy: at[0], Silent: loc.Unreachable()}
		}
		loc.Found, loc.Cluster, loc.Copy = true, at[0].Cluster, at[0].Copy
		return loc, nil
	}
	return loc, inputerr.Wrap(&AmbiguousError{App: appName, In: at})
}

// bestCopies is the clusters that answered with the best copy of the app
// (the lowest MoveMark: an unmarked copy beats either side of an
// unfinished move), and that mark; -1 and none when no cluster holds it.
func bestCopies(searched []Searched) (best MoveMark, at []Searched) {
	best = -1
	for _, s := range searched {
		if s.Err != nil || !s.Found {
			continue
		}
		switch {
		case best < 0 || s.Move < best:
			best, at = s.Move, []Searched{s}
		case s.Move == best:
			at = append(at, s)
		}
	}
	return best, at
}

// byContext groups clusters by kubeconfig context, in the config's order
// of each context's first cluster. Config.Add lets several tug names share
// a context (CheckNodePool takes them for one cluster); Locate asks each
// context once, since asking it twice would find one copy twice and call
// the app ambiguous. The namespace asked is the context's (or -n), so one
// context is one (context, namespace) too.
func byContext(cls []Cluster) [][]Cluster {
	var groups [][]Cluster
	at := map[string]int{}
	for _, cl := range cls {
		i, ok := at[cl.Context]
		if !ok {
			i = len(groups)
			at[cl.Context] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], cl)
	}
	return groups
}

// nameCopy is the cluster, of those sharing one context, that a copy found
// there is reported under: the one tug's map gives the copy's pool, else
// the first in the config's order.
func (c *Config) nameCopy(group []Cluster, cp Copy, err error) Cluster {
	if err == nil && cp.Found && len(group) > 1 {
		if owner, ok := c.ForPool(cp.Pool); ok {
			for _, cl := range group {
				if cl.Name == owner.Name {
					return cl
				}
			}
		}
	}
	return group[0]
}

// IncompleteError is an app found only as one side of an unfinished move
// while a cluster that may hold the other side did not answer: sending
// the command to the side found could act on a copy that does not serve
// (a half-made target, or a source already replaced).
type IncompleteError struct {
	App    string
	Copy   Searched
	Silent []Searched
}

func (e *IncompleteError) Error() string {
	silent := make([]string, len(e.Silent))
	for i, s := range e.Silent {
		silent[i] = fmt.Sprintf("%s (%v)", s.Name, s.Err)
	}
	return fmt.Sprintf("app %q: the copy in cluster %q is one side of an unfinished move (%s), and %s did not answer, so which copy serves is unknown; try again when it answers, or pass --context to act on one copy",
		e.App, e.Copy.Name, e.Copy.Describe, strings.Join(silent, ", "))
}

// AmbiguousError says several clusters hold an app, none of them the
// obvious one: --context must say which.
type AmbiguousError struct {
	App string
	In  []Searched
}

func (e *AmbiguousError) Error() string {
	where := make([]string, len(e.In))
	for i, s := range e.In {
		where[i] = fmt.Sprintf("%s (context %q, namespace %q)", s.Name, s.Context, s.Namespace)
	}
	return fmt.Sprintf("app %q is in several clusters: %s; pass --context to say which one", e.App, strings.Join(where, ", "))
}

// NotFound adds to a command's "app not found" error (err) which
// clusters were searched and which could not be asked.
func (l *Location) NotFound(err error) error {
	if l == nil || l.Found || len(l.Clusters) == 0 {
		return err
	}
	var searched, failed []string
	for _, s := range l.Clusters {
		if s.Err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", s.Name, s.Err))
			continue
		}
		searched = append(searched, fmt.Sprintf("%s (namespace %q)", s.Name, s.Namespace))
	}
	sort.Strings(searched)
	msg := "searched clusters: " + strings.Join(searched, ", ")
	if len(searched) == 0 {
		msg = "no configured cluster could be searched"
	}
	if len(failed) > 0 {
		msg += "; unreachable, so not searched: " + strings.Join(failed, ", ")
	}
	return &NotFoundInClustersError{Err: err, Detail: msg}
}

// NotFoundInClustersError is an app that no configured cluster holds, nor
// the current context.
type NotFoundInClustersError struct {
	Err    error
	Detail string
}

func (e *NotFoundInClustersError) Error() string { return e.Err.Error() + "; " + e.Detail }
func (e *NotFoundInClustersError) Unwrap() error { return e.Err }

// Mismatch says why the app's copy in the context that --context names is
// not where the cluster map would send commands ("" when it is): its pool
// belongs to another cluster, or it is one side of an unfinished move.
// tug warns and acts on that copy as told: --context is how one reaches a
// misplaced copy to clean it up.
func (c *Config) Mismatch(appName, kubeContext string, cp Copy) string {
	if !cp.Found {
		return ""
	}
	if cp.Describe != "" {
		return fmt.Sprintf("app %q in context %q: %s", appName, kubeContext, cp.Describe)
	}
	if cp.Pool == "" {
		return ""
	}
	owner, ok := c.ForPool(cp.Pool)
	if !ok || owner.Context == kubeContext {
		return ""
	}
	return fmt.Sprintf("app %q is in pool %q, which tug's cluster map puts in cluster %q (context %q), not in context %q; acting on it there as --context says", appName, cp.Pool, owner.Name, owner.Context, kubeContext)
}

// MoveTo is the cluster an app that lives in kubeContext moves to when its
// pool becomes pool; ok is false when pool's cluster is that context's (or
// no cluster takes pool): then a pool change is a rollout where the app is.
func (c *Config) MoveTo(pool, kubeContext string) (Cluster, bool) {
	cl, ok := c.ForPool(pool)
	if !ok || cl.Context == kubeContext {
		return Cluster{}, false
	}
	return cl, true
}

// NameOf is the name of the cluster on kubeContext, else the context's own
// name, for messages and move marks.
func (c *Config) NameOf(kubeContext string) string {
	for _, cl := range c.Clusters {
		if cl.Context == kubeContext {
			return cl.Name
		}
	}
	return kubeContext
}

// HomePool is the pool to name when telling the user to keep the app in
// the cluster where loc found it: its own pool, unless the map now puts
// that pool in another cluster (then the first pool the map gives the
// app's cluster).
func (c *Config) HomePool(loc *Location) string {
	if _, elsewhere := c.MoveTo(loc.Copy.Pool, loc.Context); elsewhere && len(loc.Cluster.Pools) > 0 {
		return loc.Cluster.Pools[0]
	}
	return loc.Copy.Pool
}
