package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/text"
)

// Every command whose first argument is an app (it declares argApp first,
// traits.go) goes to the cluster that holds the app, found by
// cluster.Locate, before the command builds any client. This is the one
// place that routes: commands added later are covered by their declaration
// (TestEveryAppCommandIsRouted). With no cluster configured nothing is
// asked and nothing changes; --context is used as given, and so is a
// cluster or identity named by hand (--cluster, --server, --user, --token,
// client certificates) or a connection made differently by hand
// (--insecure-skip-tls-verify, --proxy-url): cli.ConfigFlags.PinsCluster,
// which tug never carries to another context.

// annotationRouted marks the commands routeAppCommands wrapped.
const annotationRouted = "tug.dev/routed"

// routeAppCommands wraps the RunE of every app command under root.
func routeAppCommands(root *cobra.Command, f *cli.Factory) {
	for _, c := range root.Commands() {
		routeAppCommands(c, f)
	}
	if !takesApp(root) || root.RunE == nil || root.Annotations[annotationRouted] != "" {
		return
	}
	run := root.RunE
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return run(cmd, args)
		}
		loc, err := routeApp(cmd, f, args[0])
		if err != nil {
			return err
		}
		if loc != nil {
			cmd.SetContext(context.WithValue(cmd.Context(), locationKey{}, loc))
		}
		err = run(cmd, args)
		var nf *app.NotFoundError
		if loc != nil && errors.As(err, &nf) && nf.What == "app" && nf.Name == args[0] {
			return loc.NotFound(err)
		}
		return err
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[annotationRouted] = "true"
}

type locationKey struct{}

// routedLocation is where routing found the command's app, from the
// context its RunE runs with (nil when it did
// not look: nothing configured, or --context given).
func routedLocation(ctx context.Context) *cluster.Location {
	loc, _ := ctx.Value(locationKey{}).(*cluster.Location)
	return loc
}

// routeApp points f at the cluster that holds appName. It returns the
// lookup's result, or nil when it did not look.
func routeApp(cmd *cobra.Command, f *cli.Factory, appName string) (*cluster.Location, error) {
	if app.ValidateName(appName) != nil {
		return nil, nil // the command says what is wrong with the name
	}
	cf := f.ConfigFlags
	if cf.PinsCluster() {
		return nil, nil // a cluster or identity picked by hand, not through a context
	}
	cfg, err := loadClusters()
	if err != nil || len(cfg.Clusters) == 0 {
		return nil, err
	}
	ctx := cmd.Context()
	if cf.Context != "" {
		// As given; only warn when the copy there is not where the map (or
		// a move) says the app lives. The same client serves the command.
		if cp, err := findApp(ctx, f, appName); err == nil {
			if w := cfg.Mismatch(appName, cf.Context, cp); w != "" {
				fmt.Fprintf(f.IOStreams.ErrOut, "warning: %s\n", w)
			}
		}
		return nil, nil
	}
	finders := appFinder(f)
	loc, err := cluster.Locate(ctx, cfg, appName, finders.find)
	if err != nil {
		return nil, err
	}
	if silent := loc.Unreachable(); len(silent) > 0 {
		if deletes(cmd) {
			return nil, &silentClusterError{App: appName, Command: cmd.CommandPath(), Silent: silent}
		}
		// Not found: the command's own error says which clusters were not
		// searched, unless it runs in a context tug's map does not name.
		if loc.Found || !mapsCurrentContext(f, cfg) {
			fmt.Fprintf(f.IOStreams.ErrOut, "warning: app %q was not looked for in %s%s\n",
				appName, describeSilent(silent), map[bool]string{true: fmt.Sprintf("; going on with its copy in cluster %q", loc.Name)}[loc.Found])
		}
	}
	if !loc.Found {
		return loc, nil // the current context, whose error NotFound explains
	}
	f.Adopt(finders.factory(loc.Context)) // its connection is open already
	warnMoveCopies(f, cfg, appName, loc)
	return loc, nil
}

// warnMoveCopies warns, for an app found in a cluster, about the copies an
// unfinished move left: the new copy without its old one, other copies,
// the old copy without its new one; each names the command that finishes
// it. A copy's move description and pools come from its record, which
// anyone who can write there may have written: sanitized, as all text
// from a cluster is before it reaches a terminal.
func warnMoveCopies(f *cli.Factory, cfg *cluster.Config, appName string, loc *cluster.Location) {
	if loc.Orphaned() {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: app %q in cluster %q is the new copy of a move that never finished (%s), and no configured cluster holds its old copy any more; it may not run as the app did: '%s app pool set %s %s' says what to do\n",
			appName, loc.Name, cli.Sanitize(loc.Copy.Describe), f.CommandName, appName, movePool(loc, cluster.Searched{}))
	}
	for _, o := range loc.Others() {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: app %q also has a copy in cluster %q (%s); '%s app pool set %s %s' finishes the move\n",
			appName, o.Name, cli.Sanitize(o.Describe), f.CommandName, appName, movePool(loc, o))
	}
	if loc.Copy.Move == cluster.MoveSuperseded && len(loc.Others()) == 0 {
		// found at all, a superseded copy means every cluster answered
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: app %q in cluster %q is the old copy of a move that switched over (%s), and no configured cluster holds the new copy any more; '%s app pool set %s %s' makes this copy the app again\n",
			appName, loc.Name, cli.Sanitize(loc.Copy.Describe), f.CommandName, appName, cli.Sanitize(cfg.HomePool(loc)))
	}
}

// movePool is the pool of the move a leftover copy belongs to, sanitized
// (it comes from a record).
func movePool(loc *cluster.Location, o cluster.Searched) string {
	for _, p := range []string{o.MovePool, loc.Copy.MovePool, loc.Copy.Pool} {
		if p != "" {
			return cli.Sanitize(p)
		}
	}
	return "POOL"
}

// silentClusterError refuses a command that deletes while a configured
// cluster did not answer the lookup: that cluster may hold the app the user
// means, and the copy found (or the current context's) another team's app
// of the same name, which the command would delete instead. --context
// picks the cluster by hand.
type silentClusterError struct {
	App, Command string
	Silent       []cluster.Searched
}

func (e *silentClusterError) Error() string {
	return fmt.Sprintf("%s: not done: app %q was not looked for in %s; it may be there, and what was found another app of the same name: try again when it answers, or pass --context to pick the cluster",
		e.Command, e.App, describeSilent(e.Silent))
}

// describeSilent names the clusters that did not answer, and why, on one
// line: `cluster "gpu", which did not answer (REASON)`.
func describeSilent(silent []cluster.Searched) string {
	names, why := make([]string, len(silent)), make([]string, len(silent))
	for i, s := range silent {
		names[i] = fmt.Sprintf("%q", s.Name)
		why[i] = cli.Sanitize(text.OneLine(s.Err.Error()))
		if len(silent) > 1 {
			why[i] = s.Name + ": " + why[i]
		}
	}
	return fmt.Sprintf("%s %s, which did not answer (%s)", text.Plural(len(silent), "cluster", "clusters"), strings.Join(names, ", "), strings.Join(why, "; "))
}

// mapsCurrentContext reports whether tug's map names the context the
// command falls back to when no cluster holds its app.
func mapsCurrentContext(f *cli.Factory, cfg *cluster.Config) bool {
	here, err := f.ContextName()
	if err != nil {
		return false
	}
	for _, cl := range cfg.Clusters {
		if cl.Context == here {
			return true
		}
	}
	return false
}

// contextFinders ask contexts, with the command line's other flags (-n
// included), whether they hold an app: one GET of the app's record each.
// The Factory made for each context is kept, so the command can go on
// with the one that holds the app.
type contextFinders struct {
	f         *cli.Factory
	mu        sync.Mutex
	factories map[string]*cli.Factory
}

func appFinder(f *cli.Factory) *contextFinders {
	return &contextFinders{f: f, factories: map[string]*cli.Factory{}}
}

func (c *contextFinders) factory(kubeContext string) *cli.Factory {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.factories[kubeContext]
	if !ok {
		g = c.f.ForContext(kubeContext)
		c.factories[kubeContext] = g
	}
	return g
}

func (c *contextFinders) find(ctx context.Context, kubeContext, appName string) (cluster.Copy, error) {
	return findApp(ctx, c.factory(kubeContext), appName)
}

func findApp(ctx context.Context, f *cli.Factory, appName string) (cluster.Copy, error) {
	s, err := appStore(f)
	if err != nil {
		return cluster.Copy{}, err
	}
	cp := cluster.Copy{Namespace: s.Namespace}
	a, err := s.GetApp(ctx, appName)
	if app.IsNotFound(err) {
		return cp, nil
	}
	if err != nil {
		return cp, err
	}
	return a.LocateCopy(s.Namespace), nil
}
