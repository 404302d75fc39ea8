package events

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// Follow calls emit with each of the app's events that happens from now
// on, until ctx ends (then it returns nil): it watches the namespace's
// Events and the app's pods (a unit's new exit). shown are the events
// already printed: they are not emitted again, and an event repeated by
// Kubernetes (its count and time change) is emitted anew. emit is called
// from one goroutine at a time.
func Follow(ctx context.Context, client kubernetes.Interface, namespace string, o Options, shown []Event, emit func(Event)) error {
	var mu sync.Mutex
	seen := map[string]bool{}
	for _, e := range shown {
		seen[key(e)] = true
	}
	from := time.Now().Add(-o.Since)
	offer := func(evs ...Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range Sorted(evs) {
			if k := key(e); !seen[k] && (o.Since <= 0 || !e.Time.Before(from)) {
				seen[k] = true
				emit(e)
			}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return kube.UntilChange(gctx, eventsLW(client, namespace), func(c kube.Change[*corev1.Event]) (bool, error) {
			var evs []Event
			for _, e := range changed(c) {
				if o.Owns(e.InvolvedObject.Name) {
					evs = append(evs, FromEvent(e))
				}
			}
			offer(evs...)
			return false, nil
		})
	})
	g.Go(func() error {
		pods := kube.Pods(client, namespace, metav1.ListOptions{LabelSelector: kube.AppSelector(o.App)})
		return kube.UntilChange(gctx, pods, func(c kube.Change[*corev1.Pod]) (bool, error) {
			var evs []Event
			for _, p := range changed(c) {
				evs = append(evs, FromPod(p)...)
			}
			offer(evs...)
			return false, nil
		})
	})
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return kube.TranslateError(err)
}

// changed is what a change brings: every object after a (re)list, else the
// one that was added or modified.
func changed[T kube.Object](c kube.Change[T]) []T {
	if c.Listed {
		out := make([]T, 0, len(c.Objects))
		for _, o := range c.Objects {
			out = append(out, o)
		}
		return out
	}
	if c.Type == watch.Added || c.Type == watch.Modified {
		return []T{c.Object}
	}
	return nil
}

// key identifies an event's occurrence: the same Event seen again with a
// new count or time is a new one.
func key(e Event) string {
	return fmt.Sprintf("%s|%s|%s|%d|%s", e.Object, e.Reason, e.Time.UTC().Format(time.RFC3339Nano), e.Count, e.Message)
}

func eventsLW(client kubernetes.Interface, ns string) kube.ListWatch[*corev1.Event] {
	c := client.CoreV1().Events(ns)
	return kube.ListWatch[*corev1.Event]{Watch: c.Watch,
		List: func(ctx context.Context, opts metav1.ListOptions) ([]*corev1.Event, string, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			out := make([]*corev1.Event, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out, l.ResourceVersion, nil
		}}
}
