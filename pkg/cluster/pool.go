package cluster

// Rules that tie pools to clusters: an app lives in its pool's cluster (a
// pool set to another cluster's pool moves it: move.App); a node only
// joins a pool its cluster holds.

// CurrentContext names the kubeconfig context in use; it is only asked for
// when a rule needs it.
type CurrentContext func() (string, error)

// CheckPoolContext refuses to create an app in a pool that the cluster map
// puts in another cluster than the context in use (an existing app moves
// instead: 'tug app pool set'). Nothing is refused when no cluster is configured, or the
// pool belongs to none (not even a default).
func (c *Config) CheckPoolContext(pool string, current CurrentContext) error {
	if pool == "" || len(c.Clusters) == 0 {
		return nil
	}
	cl, ok := c.ForPool(pool)
	if !ok {
		return nil
	}
	cur, err := current()
	if err != nil {
		return err
	}
	if cl.Context != cur {
		return invalid("pool %q is in cluster %q (context %q), not in context %q; create the app there: leave out --context (see 'tug cluster list')", pool, cl.Name, cl.Context, cur)
	}
	return nil
}

// RouteToPool is the kubeconfig context an app command for an app in pool
// must use: the pool's cluster's, or "" for the command line's own (no pool,
// or a pool no cluster holds). An explicit --context wins, but must be the
// pool's cluster's (CheckPoolContext).
func (c *Config) RouteToPool(pool, explicitContext string) (kubeContext string, err error) {
	if pool == "" {
		return "", nil
	}
	if explicitContext != "" {
		return "", c.CheckPoolContext(pool, func() (string, error) { return explicitContext, nil })
	}
	kubeContext, _ = c.ContextForPool(pool)
	return kubeContext, nil
}

// CheckNodePool refuses to move a node of cluster in into a pool another
// cluster names: its apps would never be scheduled there.
func (c *Config) CheckNodePool(pool string, in Cluster, nodeName string) error {
	if owner, ok := c.OwnerOfPool(pool); ok && owner.Name != in.Name && owner.Context != in.Context {
		return invalid("pool %q belongs to cluster %q, but node %q is in cluster %q; see 'tug cluster list'", pool, owner.Name, nodeName, in.Name)
	}
	return nil
}
