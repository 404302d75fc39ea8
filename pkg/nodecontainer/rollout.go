package nodecontainer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
)

func applyDaemonSet(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	data, err := json.Marshal(ds)
	if err != nil {
		return nil, err
	}
	return client.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true)})
}

// Upgrade rolls a node container's pods, one node at a time: with image,
// onto that image; without, onto the same spec again, which pulls a moving
// tag (such as :latest) afresh. Only pool's version when pool != "".
func (c *Client) Upgrade(ctx context.Context, name, pool, image string) ([]Container, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if image != "" && strings.ContainsAny(image, " \t\n") {
		return nil, inputerr.Errorf("invalid image %q", image)
	}
	list, err := c.selected(ctx, name, pool)
	if err != nil {
		return nil, err
	}
	dss := c.Kube.AppsV1().DaemonSets(c.Namespace)
	now := time.Now().UTC().Format(time.RFC3339)
	var out []Container
	for _, ds := range list {
		var updated *appsv1.DaemonSet
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := dss.Get(ctx, ds.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if image != "" && len(cur.Spec.Template.Spec.Containers) > 0 && cur.Spec.Template.Spec.Containers[0].Image != image {
				cur.Spec.Template.Spec.Containers[0].Image = image
			} else {
				if cur.Spec.Template.Annotations == nil {
					cur.Spec.Template.Annotations = map[string]string{}
				}
				cur.Spec.Template.Annotations[annotationRestartedAt] = now
			}
			updated, err = dss.Update(ctx, cur, metav1.UpdateOptions{FieldManager: kube.FieldManager})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("upgrading daemonset %s: %w", ds.Name, kube.TranslateError(err))
		}
		out = append(out, c.describe(updated))
	}
	return out, nil
}

// WaitRolledOut waits until every listed node container runs its current
// spec, ready, on every node it should, saying how far each got.
func (c *Client) WaitRolledOut(ctx context.Context, cts []Container, p progress.Reporter) ([]Container, error) {
	if p == nil {
		p = progress.Nop{}
	}
	want := map[string]bool{}
	for _, ct := range cts {
		want[ct.DaemonSet] = true
	}
	state := map[string]*appsv1.DaemonSet{}
	check := func() bool {
		var waiting []string
		for name := range want {
			ds := state[name]
			if ds == nil || !rolledOut(ds) {
				waiting = append(waiting, name)
			}
		}
		if len(waiting) == 0 {
			return true
		}
		sort.Strings(waiting)
		if ds := state[waiting[0]]; ds != nil {
			p.Update(fmt.Sprintf("node container %s: %d of %d nodes up to date, %d ready", ds.Labels[LabelName],
				ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled, ds.Status.NumberReady))
		}
		return false
	}
	sel := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy + "," + LabelName}
	err := kube.Until(ctx, kube.DaemonSets(c.Kube, c.Namespace, sel), func(dss map[string]*appsv1.DaemonSet) (bool, error) {
		clear(state)
		for _, ds := range dss {
			state[ds.Name] = ds
		}
		return check(), nil
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, c.why(ctx, state, want)
	case err != nil:
		return nil, kube.TranslateError(err)
	}
	return c.final(state, cts), nil
}

func (c *Client) final(state map[string]*appsv1.DaemonSet, cts []Container) []Container {
	out := make([]Container, 0, len(cts))
	for _, ct := range cts {
		if ds := state[ct.DaemonSet]; ds != nil {
			out = append(out, c.describe(ds))
		}
	}
	return out
}

// rolledOut: the controller has seen the current spec and every node that
// should run it runs it, available.
func rolledOut(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation &&
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled &&
		s.NumberAvailable == s.DesiredNumberScheduled &&
		s.NumberUnavailable == 0
}

// why explains a rollout that did not finish: the first pod that is not
// ready and what its container waits for.
func (c *Client) why(ctx context.Context, state map[string]*appsv1.DaemonSet, want map[string]bool) error {
	cause := ctx.Err()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ds := state[n]
		if ds == nil || rolledOut(ds) {
			continue
		}
		detail := fmt.Sprintf("%d of %d nodes up to date, %d ready", ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled, ds.Status.NumberReady)
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pods, err := c.Kube.CoreV1().Pods(c.Namespace).List(lctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(ds.Spec.Selector)})
		cancel()
		if err == nil {
			if reason := notReadyReason(pods.Items); reason != "" {
				detail += "; " + reason
			}
		}
		return fmt.Errorf("node container %s (daemonset %s) did not roll out: %s: %w", ds.Labels[LabelName], ds.Name, detail, cause)
	}
	return cause
}

func notReadyReason(pods []corev1.Pod) string {
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				msg := fmt.Sprintf("pod %s on %s: %s", p.Name, p.Spec.NodeName, w.Reason)
				if w.Message != "" {
					msg += " (" + w.Message + ")"
				}
				return msg
			}
		}
	}
	return ""
}

// Remove deletes a node container's DaemonSets (only pool's version when
// pool != "") and waits until their pods are gone.
func (c *Client) Remove(ctx context.Context, name, pool string, p progress.Reporter) ([]Container, error) {
	if p == nil {
		p = progress.Nop{}
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	list, err := c.selected(ctx, name, pool)
	if err != nil {
		return nil, err
	}
	dss := c.Kube.AppsV1().DaemonSets(c.Namespace)
	var removed []Container
	for _, ds := range list {
		err := dss.Delete(ctx, ds.Name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			return removed, fmt.Errorf("removing daemonset %s: %w", ds.Name, kube.TranslateError(err))
		}
		removed = append(removed, c.describe(&ds))
	}
	if pool != "" {
		if err := c.syncDefault(ctx, name); err != nil {
			return removed, err
		}
	}
	sel := kube.LabelManagedBy + "=" + kube.ManagedBy + "," + LabelName + "=" + name
	if pool != "" {
		sel += "," + kube.LabelPool + "=" + pool
	}
	p.Update(fmt.Sprintf("waiting for the pods of node container %s to stop", name))
	if err := waitNoPods(ctx, c.Kube, c.Namespace, sel); err != nil {
		return removed, fmt.Errorf("node container %s removed, but its pods did not stop: %w", name, kube.TranslateError(err))
	}
	return removed, nil
}

// waitNoPods watches until no pod matches selector.
func waitNoPods(ctx context.Context, client kubernetes.Interface, ns, selector string) error {
	return kube.WaitPods(ctx, client, ns, metav1.ListOptions{LabelSelector: selector}, func(pods map[string]*corev1.Pod) bool {
		return len(pods) == 0
	})
}
