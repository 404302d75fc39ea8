package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// InterruptedError is a rollout cut short after its release was stored
// (Ctrl-C, SIGTERM, a lost lock, the API failing): the release is recorded
// interrupted, and NextStep says what runs now and how to finish or undo
// it. It unwraps to the cause, so a Ctrl-C still reads as one.
type InterruptedError struct {
	App string
	// Release is the interrupted release; Previous the one that ran before
	// it (0: none).
	Release, Previous int
	// Units counts the app's units by the release they run, as they were
	// when the rollout stopped (nil when they could not be read).
	Units map[int]int
	Err   error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("%v; %s", e.Err, e.NextStep())
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// NextStep is the one line a user needs after the interruption.
func (e *InterruptedError) NextStep() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the rollout of v%d of app %q stopped before it finished", e.Release, e.App)
	if e.Units != nil {
		fmt.Fprintf(&b, ": %s", describeUnits(e.Units))
	}
	fmt.Fprintf(&b, "; 'tug release rollback %s v%d' finishes it", e.App, e.Release)
	if e.Previous > 0 {
		fmt.Fprintf(&b, ", 'tug release rollback %s v%d' goes back", e.App, e.Previous)
	}
	return b.String()
}

// describeUnits says "v21 runs 2 units, v22 1" (or "no unit runs").
func describeUnits(units map[int]int) string {
	if len(units) == 0 {
		return "no unit runs"
	}
	vs := slices.Sorted(maps.Keys(units))
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("v%d runs %d %s", v, units[v], text.Plural(units[v], "unit", "units"))
	}
	return strings.Join(parts, ", ")
}

// unitsByRelease counts the app's units (its processes' pods, not one-off
// runs or the maintenance page) that are not stopping, by the release
// their template carries. It reads on a detached context: it runs
// once the command's own may be gone.
func unitsByRelease(ctx context.Context, d Deps, appName string) map[int]int {
	ctx, cancel := Detached(ctx)
	defer cancel()
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return nil
	}
	units := map[int]int{}
	for _, p := range pods.Items {
		v, err := strconv.Atoi(p.Labels[kube.LabelRelease])
		if err != nil || p.Labels[kube.LabelProcess] == "" || p.Labels[kube.LabelKind] != "" || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		units[v]++
	}
	return units
}
