package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Objects is every object of the kinds tug writes in namespace ns, by
// "Kind/name", each as its JSON: two snapshots are equal only when nothing
// was created, changed or deleted. (The fake clientset cannot list every
// kind at once.)
func Objects(t *testing.T, c kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	ctx, all := context.Background(), metav1.ListOptions{}
	out := map[string]string{}
	add := func(kind string, list any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("listing %s: %v", kind, err)
		}
		b, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Items []struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"items"`
		}
		var raw struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		for i, it := range l.Items {
			out[fmt.Sprintf("%s/%s", kind, it.Metadata.Name)] = string(raw.Items[i])
		}
	}
	l1, err := c.CoreV1().Secrets(ns).List(ctx, all)
	add("Secret", l1, err)
	l2, err := c.CoreV1().ConfigMaps(ns).List(ctx, all)
	add("ConfigMap", l2, err)
	l3, err := c.CoordinationV1().Leases(ns).List(ctx, all)
	add("Lease", l3, err)
	l4, err := c.AppsV1().Deployments(ns).List(ctx, all)
	add("Deployment", l4, err)
	l5, err := c.CoreV1().Services(ns).List(ctx, all)
	add("Service", l5, err)
	l6, err := c.CoreV1().Pods(ns).List(ctx, all)
	add("Pod", l6, err)
	l7, err := c.NetworkingV1().Ingresses(ns).List(ctx, all)
	add("Ingress", l7, err)
	l8, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, all)
	add("HorizontalPodAutoscaler", l8, err)
	l9, err := c.BatchV1().CronJobs(ns).List(ctx, all)
	add("CronJob", l9, err)
	l10, err := c.BatchV1().Jobs(ns).List(ctx, all)
	add("Job", l10, err)
	return out
}

// Diff names what differs between two snapshots of Objects.
func Diff(before, after map[string]string) []string {
	var d []string
	for k, v := range after {
		switch w, ok := before[k]; {
		case !ok:
			d = append(d, "created "+k)
		case w != v:
			d = append(d, "changed "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, "deleted "+k)
		}
	}
	sort.Strings(d)
	return d
}
