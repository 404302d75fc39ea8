// Package node is tug's view of the machines apps run on: nodes grouped in
// pools (the node label tug.dev/pool) across every configured cluster, and
// the operator's verbs on them: list, info, add (adopt or register), update
// (pool, enable/disable, metadata) and remove, which moves units off the
// node first without ever leaving a process with no ready unit.
package node

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/kube"
)

// Keys tug sets on Nodes.
const (
	// TaintDisabled keeps new units off a node (tug node update --disable);
	// units already there keep running.
	TaintDisabled = "tug.dev/disabled"
	// MetadataPrefix prefixes the annotations that hold a node's metadata
	// (tug node add/update --metadata k=v).
	MetadataPrefix = "metadata.tug.dev/"
	// AnnotationIaaSID records the machine's id in the provider that made it.
	AnnotationIaaSID = "tug.dev/iaas-id"
)

// Node statuses, most urgent first: a node that is not ready says so even
// when it is also cordoned or disabled.
const (
	StatusReady    = "ready"
	StatusNotReady = "not-ready"
	StatusDisabled = "disabled"
	StatusCordoned = "cordoned"
)

// Node is one line of `tug node list`. Its JSON shape is documented in
// docs/output.md.
type Node struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	Address string `json:"address"`
	Pool    string `json:"pool,omitempty"`
	// Status is one of ready, not-ready, cordoned, disabled; the booleans
	// below give every fact when several hold.
	Status   string `json:"status"`
	Ready    bool   `json:"ready"`
	Cordoned bool   `json:"cordoned"`
	Disabled bool   `json:"disabled"`
	// Units is the number of tug units on the node; null when the pods
	// could not be listed (no permission to list pods in all namespaces).
	Units     *int      `json:"units"`
	Taints    []Taint   `json:"taints"`
	CreatedAt time.Time `json:"createdAt"`
}

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Short writes a taint compactly: well-known prefixes dropped,
// "disabled:NoSchedule", "not-ready:NoExecute", "gpu=a100:NoSchedule".
func (t Taint) Short() string {
	k := t.Key
	for _, p := range []string{"tug.dev/", "node.kubernetes.io/", "node-role.kubernetes.io/"} {
		k = strings.TrimPrefix(k, p)
	}
	if t.Value != "" {
		k += "=" + t.Value
	}
	return k + ":" + t.Effect
}

// ShortTaints joins a node's taints for a table cell.
func ShortTaints(ts []Taint) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.Short()
	}
	return strings.Join(s, ",")
}

// Summarize describes a Node as a list line; units is nil when unknown.
func Summarize(n *corev1.Node, cluster string, units *int) Node {
	out := Node{
		Name:      n.Name,
		Cluster:   cluster,
		Address:   MainAddress(n),
		Pool:      n.Labels[kube.LabelPool],
		Ready:     IsReady(n),
		Cordoned:  n.Spec.Unschedulable,
		Disabled:  IsDisabled(n),
		Units:     units,
		CreatedAt: n.CreationTimestamp.Time,
		Taints:    []Taint{},
	}
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	out.Status = status(out.Ready, out.Cordoned, out.Disabled)
	return out
}

func status(ready, cordoned, disabled bool) string {
	switch {
	case !ready:
		return StatusNotReady
	case cordoned:
		return StatusCordoned
	case disabled:
		return StatusDisabled
	}
	return StatusReady
}

// IsReady reports whether the node's kubelet says it is Ready. A Node
// registered by `tug node add` whose kubelet has not joined yet has no
// Ready condition at all, and is not ready.
func IsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// IsDisabled reports whether the node carries tug's disabled taint.
func IsDisabled(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintDisabled {
			return true
		}
	}
	return false
}

// MainAddress is the node's address as people use it: the internal IP, else
// the external IP, else the host name, else the node's name.
func MainAddress(n *corev1.Node) string {
	for _, want := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS} {
		for _, a := range n.Status.Addresses {
			if a.Type == want && a.Address != "" {
				return a.Address
			}
		}
	}
	return n.Name
}

// hasAddress reports whether addr is the node's name or one of its
// addresses.
func hasAddress(n *corev1.Node, addr string) bool {
	if n.Name == addr {
		return true
	}
	for _, a := range n.Status.Addresses {
		if a.Address == addr {
			return true
		}
	}
	return false
}

// Metadata is the node's tug metadata: its annotations under
// MetadataPrefix, without the prefix.
func Metadata(n *corev1.Node) map[string]string {
	var md map[string]string
	for k, v := range n.Annotations {
		if key, ok := strings.CutPrefix(k, MetadataPrefix); ok {
			if md == nil {
				md = map[string]string{}
			}
			md[key] = v
		}
	}
	return md
}

// setTaint adds or removes tug's disabled taint; it reports whether the
// node changed.
func setDisabled(n *corev1.Node, disabled bool) bool {
	has := IsDisabled(n)
	switch {
	case disabled && !has:
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintDisabled, Value: "true", Effect: corev1.TaintEffectNoSchedule})
		return true
	case !disabled && has:
		kept := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != TaintDisabled {
				kept = append(kept, t)
			}
		}
		n.Spec.Taints = kept
		return true
	}
	return false
}

// applyMetadata sets metadata keys on the node's annotations; an empty
// value deletes the key. It reports whether the node changed.
func applyMetadata(n *corev1.Node, md map[string]string) bool {
	changed := false
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := md[k]
		full := MetadataPrefix + k
		old, had := n.Annotations[full]
		switch {
		case v == "" && had:
			delete(n.Annotations, full)
			changed = true
		case v != "" && (!had || old != v):
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[full] = v
			changed = true
		}
	}
	return changed
}

// setPool puts the node in pool; it reports whether the node changed.
func setPool(n *corev1.Node, pool string) bool {
	if n.Labels[kube.LabelPool] == pool {
		return false
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[kube.LabelPool] = pool
	return true
}

// NotFoundError says no configured cluster has the node.
type NotFoundError struct {
	Name     string
	Clusters string // the clusters searched, for the message
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("node %q not found in cluster %s; see 'tug node list'", e.Name, e.Clusters)
}

// AmbiguousError says several clusters have a node of that name.
type AmbiguousError struct {
	Name     string
	Clusters []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("node %q is in several clusters (%s); pass --cluster", e.Name, strings.Join(e.Clusters, ", "))
}
