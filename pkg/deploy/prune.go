package deploy

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// prune caps an app's release history at what release current (the one
// that runs) says, never removing current (see app.ReleasesToPrune).
func prune(ctx context.Context, store *app.Store, a *app.App, current int) error {
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return err
	}
	inUse, err := releasesInUse(ctx, store, a)
	if err != nil {
		return err
	}
	return store.PruneReleasesIn(ctx, a.Name, rels, app.HistoryLimit(a, rels, current), current, inUse...)
}

// releasesInUse are the releases a's units run or will run, which pruning
// must keep: their Secret holds the config those units read through
// envFrom, and a canary's release is what a promote makes the deployed
// one. The record names its canary; the app's Deployments (one LIST)
// name the release of every unit they start, a canary's, or one a
// '--no-rollback' failure left running.
func releasesInUse(ctx context.Context, store *app.Store, a *app.App) ([]int, error) {
	var inUse []int
	if a.Canary != nil {
		inUse = append(inUse, a.Canary.Release)
	}
	deps, err := store.Client.AppsV1().Deployments(store.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(a.Name)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	for _, d := range deps.Items {
		if v, err := strconv.Atoi(d.Spec.Template.Labels[kube.LabelRelease]); err == nil {
			inUse = append(inUse, v)
		}
	}
	return inUse, nil
}
