package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/kube"
)

// perCluster is one cluster's answer to a fan-out.
type perCluster[T any] struct {
	value   T
	warning string
	err     error
}

// forEachCluster asks every target at once (tsuru's forEachCluster), each
// under ClusterTimeout, so a slow or dead cluster costs one timeout, not
// one per cluster. A target that could not even be reached (t.Err) is
// answered with its error without being asked.
func forEachCluster[T any](ctx context.Context, targets []cluster.Target, ask func(context.Context, cluster.Target) (T, string, error)) ([]perCluster[T], error) {
	out := make([]perCluster[T], len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if t.Err != nil {
				out[i].err = t.Err
				return
			}
			cctx, cancel := context.WithTimeout(ctx, ClusterTimeout)
			defer cancel()
			out[i].value, out[i].warning, out[i].err = ask(cctx, t)
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}

// gather collects a fan-out's values, warnings and unreachable clusters.
// It fails only when every cluster failed: with that cluster's own error
// when there was one (so a missing permission reads as the sentence naming
// it), else with all of them.
func gather[T any](targets []cluster.Target, parts []perCluster[T], add func(T)) (unreachable []ClusterError, warnings []string, err error) {
	unreachable, warnings = []ClusterError{}, []string{}
	var errs []error
	for i, p := range parts {
		if p.err != nil {
			e := kube.TranslateError(p.err)
			errs = append(errs, e)
			unreachable = append(unreachable, ClusterError{Cluster: targets[i].Name, Context: targets[i].Context, Error: e.Error()})
			continue
		}
		add(p.value)
		if p.warning != "" {
			warnings = append(warnings, p.warning)
		}
	}
	switch {
	case len(errs) == 0 || len(errs) < len(targets):
		return unreachable, warnings, nil
	case len(errs) == 1:
		return nil, nil, errs[0]
	default:
		return nil, nil, fmt.Errorf("no cluster answered: %w", errors.Join(errs...))
	}
}
