package main

import (
	"context"
	"fmt"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/metrics"
)

// startUnitUsage starts the one LIST of PodMetrics a unit listing makes,
// alongside its LIST of pods; -o name needs none. The caller defers stop.
func startUnitUsage(ctx context.Context, s *app.Store, o *unitListOptions) (use func([]app.Unit) *metrics.Unavailable, stop func()) {
	if o.format == unitFormat(cli.OutputName) {
		return func([]app.Unit) *metrics.Unavailable { return nil }, func() {}
	}
	return metrics.Fetch(ctx, metrics.FromClient(s.Client), s.Namespace, metrics.Selector(o.ListUnitsOptions))
}

// usageHint is the one line under a table whose usage is unknown.
func usageHint(ios *cli.IOStreams, missing *metrics.Unavailable) {
	if missing != nil {
		fmt.Fprintln(ios.ErrOut, missing.Hint())
	}
}
