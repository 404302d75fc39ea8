package node

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"tug.dev/tug/pkg/kube"
)

// Info is `tug node info`. Its JSON shape is documented in docs/output.md.
type Info struct {
	Name        string            `json:"name"`
	Cluster     string            `json:"cluster"`
	Pool        string            `json:"pool,omitempty"`
	Status      string            `json:"status"`
	Ready       bool              `json:"ready"`
	Cordoned    bool              `json:"cordoned"`
	Disabled    bool              `json:"disabled"`
	Addresses   []Address         `json:"addresses"`
	ProviderID  string            `json:"providerID,omitempty"`
	IaaSID      string            `json:"iaasID,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Capacity    map[string]string `json:"capacity,omitempty"`
	Allocatable map[string]string `json:"allocatable,omitempty"`
	Conditions  []Condition       `json:"conditions"`
	Taints      []Taint           `json:"taints"`
	System      System            `json:"system"`
	CreatedAt   time.Time         `json:"createdAt"`
	// Units are the tug units on the node; empty, with Warning saying
	// why, when pods could not be listed.
	Units   []Unit `json:"units"`
	Warning string `json:"warning,omitempty"`
}

// Address is one of a node's addresses.
type Address struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// Condition is a node condition as the kubelet reports it.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

// System is what the kubelet says about the machine.
type System struct {
	KubeletVersion   string `json:"kubeletVersion,omitempty"`
	OSImage          string `json:"osImage,omitempty"`
	Architecture     string `json:"architecture,omitempty"`
	ContainerRuntime string `json:"containerRuntime,omitempty"`
}

// Unit is a tug unit on a node.
type Unit struct {
	Namespace string `json:"namespace"`
	App       string `json:"app"`
	Process   string `json:"process"`
	Name      string `json:"name"`
	Ready     bool   `json:"ready"`
	Phase     string `json:"phase"`
	IP        string `json:"ip,omitempty"`
}

// GetInfo describes a found node, with the units on it (one LIST of pods
// on the node, in all namespaces).
func GetInfo(ctx context.Context, f *Found) (*Info, error) {
	n := f.Node
	sum := Summarize(n, f.Target.Name, nil)
	info := &Info{
		Name: n.Name, Cluster: f.Target.Name, Pool: sum.Pool, Status: sum.Status,
		Ready: sum.Ready, Cordoned: sum.Cordoned, Disabled: sum.Disabled,
		ProviderID: n.Spec.ProviderID, IaaSID: n.Annotations[AnnotationIaaSID],
		Metadata: Metadata(n), Labels: n.Labels,
		Capacity: quantities(n.Status.Capacity), Allocatable: quantities(n.Status.Allocatable),
		Conditions: []Condition{}, Taints: sum.Taints,
		System: System{
			KubeletVersion: n.Status.NodeInfo.KubeletVersion, OSImage: n.Status.NodeInfo.OSImage,
			Architecture: n.Status.NodeInfo.Architecture, ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion,
		},
		CreatedAt: n.CreationTimestamp.Time,
		Units:     []Unit{},
	}
	if info.Taints == nil {
		info.Taints = []Taint{}
	}
	for _, a := range n.Status.Addresses {
		info.Addresses = append(info.Addresses, Address{Type: string(a.Type), Address: a.Address})
	}
	if info.Addresses == nil {
		info.Addresses = []Address{}
	}
	for _, c := range n.Status.Conditions {
		info.Conditions = append(info.Conditions, Condition{
			Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time,
		})
	}
	pods, err := f.Target.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: unitSelector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String(),
	})
	if err != nil {
		info.Warning = fmt.Sprintf("units not listed: %v", kube.TranslateError(err))
		return info, nil
	}
	info.Units = unitsOf(pods.Items)
	return info, nil
}

// unitsOf is the units among a node's pods (not the finished ones), by
// namespace, app, then name.
func unitsOf(pods []corev1.Pod) []Unit {
	units := []Unit{}
	for i := range pods {
		p := &pods[i]
		if !isUnit(p) || podFinished(p) {
			continue
		}
		units = append(units, Unit{
			Namespace: p.Namespace, App: p.Labels[kube.LabelApp], Process: p.Labels[kube.LabelProcess],
			Name: p.Name, Ready: kube.PodReady(p), Phase: string(p.Status.Phase), IP: p.Status.PodIP,
		})
	}
	sort.Slice(units, func(i, j int) bool {
		a, b := units[i], units[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.App != b.App {
			return a.App < b.App
		}
		return a.Name < b.Name
	})
	return units
}

func quantities(l corev1.ResourceList) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}
