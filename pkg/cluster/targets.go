package cluster

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/inputerr"
)

// Target is a cluster a command acts on, with a client for it.
type Target struct {
	Cluster
	// Implicit: no cluster is configured (or --context was given), and this
	// is simply the kubeconfig context the command line selects.
	Implicit bool
	Client   kubernetes.Interface
	// Namespace is the context's namespace (or -n), for namespaced objects
	// such as node containers.
	Namespace string
	// Err says why no client could be built (a context missing from the
	// kubeconfig, say); Client is nil then.
	Err error
}

// Connector builds a client for a kubeconfig context, with the same
// kubeconfig files and loading rules as the rest of tug. The empty name
// means the context the command line selects (--context, else the current
// one), with every flag as given.
type Connector func(kubeContext string) (kubernetes.Interface, string, error)

// Selection narrows the clusters a command acts on.
type Selection struct {
	// Only is a configured cluster's name (--cluster on node commands).
	Only string
	// ExplicitContext is --context: the command acts on that context only.
	ExplicitContext string
	// CurrentContext names the implicit target when nothing is configured.
	CurrentContext string
}

// Resolve lists the clusters a command spans: the one --cluster names,
// else the context --context names, else every configured cluster, else
// the kubeconfig's current context. An unknown --cluster is a
// *NotFoundError.
func Resolve(cfg *Config, connect Connector, sel Selection) ([]Target, error) {
	switch {
	case sel.Only != "":
		cl, ok := cfg.Get(sel.Only)
		if !ok {
			return nil, inputerr.Wrap(&NotFoundError{Name: sel.Only, Known: cfg.Names()})
		}
		if sel.ExplicitContext != "" && sel.ExplicitContext != cl.Context {
			return nil, invalid("--cluster %s is context %q, but --context says %q; pass one of them", cl.Name, cl.Context, sel.ExplicitContext)
		}
		return []Target{connectTo(connect, cl, false)}, nil
	case sel.ExplicitContext != "":
		return []Target{implicit(cfg, connect, sel.ExplicitContext)}, nil
	case len(cfg.Clusters) > 0:
		out := make([]Target, 0, len(cfg.Clusters))
		for _, cl := range cfg.Clusters {
			out = append(out, connectTo(connect, cl, false))
		}
		return out, nil
	default:
		return []Target{implicit(cfg, connect, sel.CurrentContext)}, nil
	}
}

// ResolvePool is the cluster that holds pool's nodes and apps: --cluster if
// given (it must not contradict a cluster that names the pool), else
// --context, else the configured mapping, else the current context.
func ResolvePool(cfg *Config, connect Connector, pool string, sel Selection) (Target, error) {
	owner, owned := cfg.OwnerOfPool(pool)
	if sel.Only != "" {
		if owned && owner.Name != sel.Only {
			return Target{}, invalid("pool %q belongs to cluster %q, not %q; see 'tug cluster list'", pool, owner.Name, sel.Only)
		}
		ts, err := Resolve(cfg, connect, sel)
		if err != nil {
			return Target{}, err
		}
		return ts[0], nil
	}
	if sel.ExplicitContext != "" {
		if owned && owner.Context != sel.ExplicitContext {
			return Target{}, invalid("pool %q belongs to cluster %q (context %q), not to context %q; see 'tug cluster list'", pool, owner.Name, owner.Context, sel.ExplicitContext)
		}
		return implicit(cfg, connect, sel.ExplicitContext), nil
	}
	if len(cfg.Clusters) == 0 {
		return implicit(cfg, connect, sel.CurrentContext), nil
	}
	cl, ok := cfg.ForPool(pool)
	if !ok {
		return Target{}, invalid("pool %q belongs to no cluster and none is the default; map it with 'tug cluster add NAME --context CONTEXT --pool %s', or pass --cluster", pool, pool)
	}
	return connectTo(connect, cl, false), nil
}

// ContextForPool is the kubeconfig context whose cluster holds pool; ok is
// false when the command line's context should be used (nothing mapped).
func (c *Config) ContextForPool(pool string) (kubeContext string, ok bool) {
	cl, ok := c.ForPool(pool)
	if !ok {
		return "", false
	}
	return cl.Context, true
}

func implicit(cfg *Config, connect Connector, kubeContext string) Target {
	// A configured cluster on that context lends its name and pools.
	for _, cl := range cfg.Clusters {
		if cl.Context == kubeContext && kubeContext != "" {
			t := connectTo(connect, cl, true)
			return t
		}
	}
	name := kubeContext
	if name == "" {
		name = "(current)"
	}
	return connectTo(connect, Cluster{Name: name, Context: kubeContext}, true)
}

func connectTo(connect Connector, cl Cluster, asGiven bool) Target {
	t := Target{Cluster: cl, Implicit: asGiven}
	ctxName := cl.Context
	if asGiven {
		ctxName = "" // the command line's own selection, every flag included
	}
	t.Client, t.Namespace, t.Err = connect(ctxName)
	if t.Err == nil && t.Client == nil {
		t.Err = fmt.Errorf("no client for cluster %q", cl.Name)
	}
	return t
}

// Names lists targets' names, sorted, for messages.
func Names(ts []Target) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
