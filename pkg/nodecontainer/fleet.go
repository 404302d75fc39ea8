package nodecontainer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
)

// Fleet runs a node container command on each of its clusters in turn: the
// pool's cluster, or every configured one. A cluster that cannot be reached
// stops a change (a half-applied agent is worse than none) but only warns
// in a listing.
type Fleet struct {
	Targets []cluster.Target
	// Wait bounds waiting for the pods of each cluster to roll out; 0 does
	// not wait.
	Wait     time.Duration
	Progress progress.Reporter
}

func (f Fleet) progress() progress.Reporter {
	if f.Progress == nil {
		return progress.Nop{}
	}
	return f.Progress
}

func client(t cluster.Target) *Client {
	return &Client{Kube: t.Client, Namespace: t.Namespace, Cluster: t.Name}
}

// Add adds or updates the node container in every cluster and waits for it.
func (f Fleet) Add(ctx context.Context, o AddOptions) ([]Container, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var all []Container
	for _, t := range f.Targets {
		if t.Err != nil {
			return nil, fmt.Errorf("cluster %s: %w", t.Name, t.Err)
		}
		c := client(t)
		ct, created, err := c.Add(ctx, o)
		if err != nil {
			return nil, err
		}
		verb := "updated"
		if created {
			verb = "added"
		}
		f.progress().Done(fmt.Sprintf("node container %s %s in cluster %s (daemonset %s/%s)", ct.Name, verb, t.Name, ct.Namespace, ct.DaemonSet))
		done, err := f.wait(ctx, c, []Container{*ct})
		if err != nil {
			return nil, err
		}
		all = append(all, done...)
	}
	return all, nil
}

// List lists the node containers of every cluster. Clusters that did not
// answer are returned as warnings; it fails only when none answered.
func (f Fleet) List(ctx context.Context) (all []Container, warnings []error, err error) {
	all = []Container{}
	for _, t := range f.Targets {
		if t.Err != nil {
			warnings = append(warnings, fmt.Errorf("cluster %s: %w", t.Name, kube.TranslateError(t.Err)))
			continue
		}
		cts, err := client(t).List(ctx)
		if err != nil {
			warnings = append(warnings, fmt.Errorf("cluster %s: %w", t.Name, err))
			continue
		}
		all = append(all, cts...)
	}
	if len(f.Targets) > 0 && len(warnings) == len(f.Targets) {
		return nil, nil, errors.Join(warnings...)
	}
	return all, warnings, nil
}

// Upgrade rolls the node container onto image (or the same spec again) in
// every cluster that has it, and waits for it.
func (f Fleet) Upgrade(ctx context.Context, name, pool, image string) ([]Container, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	var all []Container
	err := f.eachHaving(name, func(t cluster.Target) error {
		c := client(t)
		cts, err := c.Upgrade(ctx, name, pool, image)
		if err != nil {
			return err
		}
		done, err := f.wait(ctx, c, cts)
		all = append(all, done...)
		return err
	})
	return all, err
}

// Remove deletes the node container (only the pool's version with pool)
// from every cluster that has it.
func (f Fleet) Remove(ctx context.Context, name, pool string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return f.eachHaving(name, func(t cluster.Target) error {
		removed, err := client(t).Remove(ctx, name, pool, f.progress())
		for _, r := range removed {
			f.progress().Done(fmt.Sprintf("node container %s removed from cluster %s (daemonset %s/%s)", r.Name, t.Name, r.Namespace, r.DaemonSet))
		}
		return err
	})
}

// eachHaving runs do on each cluster; with several clusters, one that does
// not have the node container is skipped, and none having it is an error.
func (f Fleet) eachHaving(name string, do func(cluster.Target) error) error {
	notFound := 0
	for _, t := range f.Targets {
		if t.Err != nil {
			return fmt.Errorf("cluster %s: %w", t.Name, t.Err)
		}
		err := do(t)
		var nf *NotFoundError
		if errors.As(err, &nf) && len(f.Targets) > 1 {
			notFound++
			continue
		}
		if err != nil {
			return err
		}
	}
	if len(f.Targets) > 1 && notFound == len(f.Targets) {
		return inputerr.Errorf("node container %q not found in any cluster; see 'tug node-container list'", name)
	}
	return nil
}

func (f Fleet) wait(ctx context.Context, c *Client, cts []Container) ([]Container, error) {
	if f.Wait <= 0 || len(cts) == 0 {
		return cts, nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.Wait)
	defer cancel()
	p := f.progress()
	out, err := c.WaitRolledOut(ctx, cts, p)
	if err != nil {
		p.Fail(fmt.Sprintf("node container %s not rolled out in cluster %s", cts[0].Name, c.Cluster))
		return nil, err
	}
	p.Done(fmt.Sprintf("node container %s rolled out in cluster %s", cts[0].Name, c.Cluster))
	return out, nil
}
