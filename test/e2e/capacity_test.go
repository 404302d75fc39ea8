package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cluster the e2e tests run on is not empty: `make demo` leaves its
// apps running (README: make demo, then make test), other test runs share
// it, and this run's tests run side by side. A test that needs a node to be
// full or to have room sizes its requests from what the nodes have free
// when it starts, never from constants.

// nodeFree is what a schedulable node has left for pods' requests:
// allocatable minus what its non-terminated pods request, as the
// scheduler counts it.
type nodeFree struct {
	Name   string
	CPU    resource.Quantity // millicores
	Memory resource.Quantity
	Pods   int64
}

// freeCapacity lists the ready, schedulable real nodes (kubelet joined, not
// cordoned, no NoSchedule or NoExecute taint) with what they have free,
// sorted by name.
func (h *H) freeCapacity() []nodeFree {
	h.t.Helper()
	ctx := context.Background()
	nodes, err := h.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	pods, err := h.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed",
	})
	if err != nil {
		h.t.Fatal(err)
	}
	type used struct {
		cpu, mem resource.Quantity
		pods     int64
	}
	onNode := map[string]*used{}
	for i := range pods.Items {
		p := &pods.Items[i]
		u := onNode[p.Spec.NodeName]
		if u == nil {
			u = &used{}
			onNode[p.Spec.NodeName] = u
		}
		req := podRequests(p)
		u.cpu.Add(req[corev1.ResourceCPU])
		u.mem.Add(req[corev1.ResourceMemory])
		u.pods++
	}
	var out []nodeFree
	for _, n := range nodes.Items {
		if n.Status.NodeInfo.KubeletVersion == "" || n.Spec.Unschedulable || !nodeIsReady(&n) ||
			slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}) {
			continue
		}
		f := nodeFree{Name: n.Name, CPU: n.Status.Allocatable.Cpu().DeepCopy(), Memory: n.Status.Allocatable.Memory().DeepCopy(), Pods: n.Status.Allocatable.Pods().Value()}
		if u := onNode[n.Name]; u != nil {
			f.CPU.Sub(u.cpu)
			f.Memory.Sub(u.mem)
			f.Pods -= u.pods
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b nodeFree) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podRequests is what the scheduler reserves for a pod: the larger of its
// containers' requests summed and any one init container's, plus overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for k, v := range c.Resources.Requests {
			q := out[k]
			q.Add(v)
			out[k] = q
		}
	}
	for _, c := range p.Spec.InitContainers {
		for k, v := range c.Resources.Requests {
			if q := out[k]; v.Cmp(q) > 0 {
				out[k] = v.DeepCopy()
			}
		}
	}
	for k, v := range p.Spec.Overhead {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
	return out
}

func (f nodeFree) String() string {
	return fmt.Sprintf("%s: %dm CPU, %s memory, %d pods free", f.Name, f.CPU.MilliValue(), f.Memory.String(), f.Pods)
}
