package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// ClusterTimeout bounds how long one cluster may take to answer a listing,
// so a cluster whose address swallows packets cannot hold up the others.
const ClusterTimeout = 20 * time.Second

// ClusterError says a cluster could not be read; the other clusters'
// results stand.
type ClusterError struct {
	Cluster string `json:"cluster"`
	Context string `json:"context"`
	Error   string `json:"error"`
}

// ListOptions select nodes.
type ListOptions struct {
	Pool string
}

// Validate checks the pool filter, if any.
func (o ListOptions) Validate() error {
	if o.Pool == "" {
		return nil
	}
	return inputerr.Wrap(kube.ValidateLabelValue("pool", o.Pool))
}

// ListResult is `tug node list`: the nodes of every cluster that answered,
// and the clusters that did not. Its JSON shape is documented in
// docs/output.md.
type ListResult struct {
	Nodes       []Node         `json:"nodes"`
	Unreachable []ClusterError `json:"unreachable"`
	// Warnings are partial failures: the nodes are listed, a detail is
	// missing (e.g. units, without permission to list pods everywhere).
	Warnings []string `json:"warnings"`
}

// List lists the nodes of every target, one goroutine per cluster. A
// cluster that fails is reported in Unreachable; List itself fails only
// when every cluster failed, with that failure (so a single cluster's
// missing permission reads as the sentence naming it).
func List(ctx context.Context, targets []cluster.Target, o ListOptions) (*ListResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	parts, err := forEachCluster(ctx, targets, func(ctx context.Context, t cluster.Target) ([]Node, string, error) {
		return listCluster(ctx, t, o)
	})
	if err != nil {
		return nil, err
	}
	res := &ListResult{Nodes: []Node{}}
	res.Unreachable, res.Warnings, err = gather(targets, parts, func(nodes []Node) { res.Nodes = append(res.Nodes, nodes...) })
	if err != nil {
		return nil, err
	}
	sort.Slice(res.Nodes, func(i, j int) bool {
		a, b := res.Nodes[i], res.Nodes[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.Name < b.Name
	})
	return res, nil
}

func listCluster(ctx context.Context, t cluster.Target, o ListOptions) ([]Node, string, error) {
	opts := metav1.ListOptions{}
	if o.Pool != "" {
		opts.LabelSelector = kube.LabelPool + "=" + o.Pool
	}
	nodes, err := t.Client.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	counts, err := unitCounts(ctx, t.Client)
	warning := ""
	if err != nil {
		warning = fmt.Sprintf("cluster %s: units not counted: %v", t.Name, kube.TranslateError(err))
	}
	out := make([]Node, 0, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		var units *int
		if counts != nil {
			c := counts[n.Name]
			units = &c
		}
		out = append(out, Summarize(n, t.Name, units))
	}
	return out, warning, nil
}

// unitSelector selects tug's units: pods of an app's process.
var unitSelector = kube.LabelManagedBy + "=" + kube.ManagedBy + "," + kube.LabelApp + "," + kube.LabelProcess

// unitCounts counts live tug units per node in all namespaces with one
// request whose cost does not depend on anything but the units' number:
// their names and nodes as a Table (server-side printing, what kubectl get
// reads) without the objects, from the API server's watch cache
// (resourceVersion 0: as fresh as the server's cache, which counts may
// be, instead of a read of every pod from etcd). The selectors leave out
// one-off runs, finished pods and pods not on a node. A few hundred bytes
// a unit, where whole pods are kilobytes: at 10,000 units that is the
// difference between ~70 ms and ~800 ms (docs/benchmarks.md). A server
// or client that cannot answer with a table gets the pods themselves, in
// pages of kube.PageSize.
func unitCounts(ctx context.Context, client kubernetes.Interface) (map[string]int, error) {
	if counts, ok, err := unitCountsTable(ctx, client); ok || err != nil {
		return counts, err
	}
	counts := map[string]int{}
	err := kube.EachPod(ctx, client, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: unitSelector}, func() { clear(counts) }, func(p *corev1.Pod) {
		if isUnit(p) && p.Spec.NodeName != "" && !podFinished(p) {
			counts[p.Spec.NodeName]++
		}
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// The Table request of unitCounts. Its selectors say what isUnit and
// podFinished say for a pod.
var (
	unitTableLabels = unitSelector + "," + kube.LabelKind + "!=run"
	unitTableFields = "spec.nodeName!=,status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// unitCountsTable is unitCounts' table read; ok is false (with no error)
// when the answer is not a table with a Node column, or the client has no
// REST client to ask with (a fake one).
func unitCountsTable(ctx context.Context, client kubernetes.Interface) (counts map[string]int, ok bool, err error) {
	rc, isREST := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !isREST || rc == nil {
		return nil, false, nil
	}
	body, err := rc.Get().Resource("pods").
		Param("labelSelector", unitTableLabels).
		Param("fieldSelector", unitTableFields).
		Param("resourceVersion", "0").
		Param("includeObject", string(metav1.IncludeNone)).
		SetHeader("Accept", tableAccept).
		DoRaw(ctx)
	if err != nil {
		if apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	var t metav1.Table
	if json.Unmarshal(body, &t) != nil || t.Kind != "Table" {
		return nil, false, nil
	}
	col := slices.IndexFunc(t.ColumnDefinitions, func(c metav1.TableColumnDefinition) bool { return c.Name == "Node" })
	if col < 0 {
		return nil, false, nil
	}
	counts = map[string]int{}
	for _, r := range t.Rows {
		if col < len(r.Cells) {
			if n, _ := r.Cells[col].(string); n != "" && n != "<none>" {
				counts[n]++
			}
		}
	}
	return counts, true, nil
}

// isUnit reports whether a pod is a unit of an app's process (one-off run
// pods carry the app's labels too, but are not units).
func isUnit(p *corev1.Pod) bool {
	return p.Labels[kube.LabelManagedBy] == kube.ManagedBy && p.Labels[kube.LabelApp] != "" &&
		p.Labels[kube.LabelProcess] != "" && p.Labels[kube.LabelKind] != "run"
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ValidateRef checks what names a node on the command line: a Node's name
// (a DNS subdomain) or an IP address. Its error is an input error, so a
// typo is reported as one even when no cluster answers.
func ValidateRef(nameOrAddress string) error {
	if nameOrAddress == "" {
		return inputerr.Errorf("node name is empty")
	}
	if _, err := netip.ParseAddr(nameOrAddress); err == nil {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(nameOrAddress); len(errs) > 0 {
		return inputerr.Errorf("invalid node %q: give a node's name (lower-case letters, digits, '-' and '.') or one of its IP addresses; see 'tug node list'", nameOrAddress)
	}
	return nil
}

// Found is a node and the cluster it is in.
type Found struct {
	Target cluster.Target
	Node   *corev1.Node
}

// Find looks for a node by name, or by one of its addresses, in every
// target. It fails with *NotFoundError when no cluster has it,
// *AmbiguousError when several do, and with the cluster's error when a
// cluster that could hold it did not answer.
func Find(ctx context.Context, targets []cluster.Target, nameOrAddress string) (*Found, error) {
	hits, err := forEachCluster(ctx, targets, func(ctx context.Context, t cluster.Target) (*corev1.Node, string, error) {
		n, err := findIn(ctx, t.Client, nameOrAddress)
		return n, "", err
	})
	if err != nil {
		return nil, err
	}
	var found []int
	var failed []error
	for i, h := range hits {
		switch {
		case h.err != nil:
			failed = append(failed, fmt.Errorf("cluster %s: %w", targets[i].Name, kube.TranslateError(h.err)))
		case h.value != nil:
			found = append(found, i)
		}
	}
	switch {
	case len(found) == 1:
		return &Found{Target: targets[found[0]], Node: hits[found[0]].value}, nil
	case len(found) > 1:
		names := make([]string, len(found))
		for j, i := range found {
			names[j] = targets[i].Name
		}
		return nil, inputerr.Wrap(&AmbiguousError{Name: nameOrAddress, Clusters: names})
	case len(failed) == 1 && len(targets) == 1:
		return nil, kube.TranslateError(hits[0].err)
	case len(failed) > 0:
		return nil, fmt.Errorf("node %q not found in the clusters that answered, and %w", nameOrAddress, errors.Join(failed...))
	}
	return nil, inputerr.Wrap(&NotFoundError{Name: nameOrAddress, Clusters: cluster.Names(targets)})
}

// findIn gets the node by name, else looks for it among the nodes'
// addresses; nil without error when the cluster does not have it.
func findIn(ctx context.Context, client kubernetes.Interface, nameOrAddress string) (*corev1.Node, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, nameOrAddress, metav1.GetOptions{})
	if err == nil {
		return n, nil
	}
	if !apierrors.IsNotFound(err) && !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
		return nil, err
	}
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if hasAddress(&list.Items[i], nameOrAddress) {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}
