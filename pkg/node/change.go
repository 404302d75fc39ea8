package node

import (
	"context"
	"net"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

func badInput(format string, a ...any) error { return inputerr.Errorf(format, a...) }

// ParseMetadata parses k=v pairs; an empty value ("k=") means delete the
// key when allowDelete, and is refused otherwise.
func ParseMetadata(pairs []string, allowDelete bool) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	md := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, badInput("invalid metadata %q: want KEY=VALUE (KEY= deletes KEY)", p)
		}
		if errs := validation.IsQualifiedName(MetadataPrefix + k); len(errs) > 0 {
			return nil, badInput("invalid metadata key %q: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", k)
		}
		if v == "" && !allowDelete {
			return nil, badInput("metadata %q has no value; give KEY=VALUE", p)
		}
		md[k] = v
	}
	return md, nil
}

// NodeName turns what the user typed for `node add` into a Node name: a
// host name or IP address, with a URL's scheme, port and path dropped
// (tsuru took node URLs). Node names are lower case.
func NodeName(address string) (string, error) {
	host := strings.TrimSpace(address)
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil || u.Hostname() == "" {
			return "", badInput("invalid node address %q: give a host name or an IP address", address)
		}
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return "", badInput("invalid node address %q: give a host name or an IP address (a node's name is lower-case letters, digits, '-' and '.')", address)
	}
	return host, nil
}

// AddOptions are `tug node add`.
type AddOptions struct {
	// Address is the node's name or one of its addresses; a Node is
	// registered under this name when none matches.
	Address  string
	Pool     string
	IaaSID   string
	Metadata map[string]string
}

// Validate checks the options before anything is read: a pool is given and
// valid, and the address can name a node.
func (o AddOptions) Validate() error {
	if o.Pool == "" {
		return badInput("missing --pool: the pool the node joins")
	}
	if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
		return inputerr.Wrap(err)
	}
	_, err := NodeName(o.Address)
	return err
}

// AddResult says what `node add` did.
type AddResult struct {
	Node Node `json:"node"`
	// Registered: no Node matched, and tug created one for a kubelet that
	// will join under this name. Otherwise an existing Node was adopted.
	Registered bool `json:"registered"`
	// Changed is false when the node already was exactly as asked.
	Changed bool `json:"changed"`
}

// Add adopts a Node whose name or address is o.Address into o.Pool, or
// registers a new Node object for a machine whose kubelet will join under
// that name. Adding twice updates: pool, metadata and IaaS id are set
// again, and nothing else changes.
func Add(ctx context.Context, t cluster.Target, o AddOptions) (*AddResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	name, err := NodeName(o.Address)
	if err != nil {
		return nil, err
	}
	if t.Err != nil {
		return nil, t.Err
	}
	nodes := t.Client.CoreV1().Nodes()
	existing, err := findIn(ctx, t.Client, strings.TrimSpace(o.Address))
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	if existing == nil && name != strings.TrimSpace(o.Address) {
		if existing, err = findIn(ctx, t.Client, name); err != nil {
			return nil, kube.TranslateError(err)
		}
	}
	if existing != nil {
		var changed bool
		updated, err := modify(ctx, t.Client, existing.Name, func(n *corev1.Node) bool {
			c := setPool(n, o.Pool)
			c = applyMetadata(n, o.Metadata) || c
			c = setIaaSID(n, o.IaaSID) || c
			changed = c
			return c
		})
		if err != nil {
			return nil, err
		}
		return &AddResult{Node: Summarize(updated, t.Name, nil), Changed: changed}, nil
	}

	created, err := nodes.Create(ctx, registeredNode(name, o), metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		// Someone registered it in between: adopt it instead.
		return Add(ctx, t, o)
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return &AddResult{Node: Summarize(created, t.Name, nil), Registered: true, Changed: true}, nil
}

// registeredNode is the Node object tug node add registers for a machine
// whose kubelet has not joined yet under name: in o's pool, with o's
// metadata and IaaS id, the address the user gave, and not ready.
func registeredNode(name string, o AddOptions) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelPool: o.Pool}},
	}
	applyMetadata(n, o.Metadata)
	setIaaSID(n, o.IaaSID)
	// The kubelet fills the status when it joins; until then the address
	// the user gave is how people find the machine.
	addrType := corev1.NodeHostName
	if net.ParseIP(name) != nil {
		addrType = corev1.NodeInternalIP
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: addrType, Address: name}}
	// Not ready until the kubelet says otherwise. Without a Ready
	// condition, the node lifecycle controller removes the not-ready taint
	// the API server put on the new Node, and for a minute the scheduler
	// would bind pods to a machine that cannot run them.
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotJoined",
		Message:           "registered by tug node add; no kubelet has joined under this name yet",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	return n
}

// setIaaSID records the machine's provider id: always as an annotation, and
// as the Node's providerID when that is still empty (the API server lets it
// be set once).
func setIaaSID(n *corev1.Node, id string) bool {
	if id == "" {
		return false
	}
	changed := false
	if n.Annotations[AnnotationIaaSID] != id {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[AnnotationIaaSID] = id
		changed = true
	}
	if n.Spec.ProviderID == "" {
		n.Spec.ProviderID = id
		changed = true
	}
	return changed
}

// UpdateOptions are `tug node update`; zero values leave things as they are.
type UpdateOptions struct {
	Pool     string
	Enable   bool
	Disable  bool
	Metadata map[string]string // an empty value deletes the key
}

// Validate refuses contradictory or empty updates before anything is read.
func (o UpdateOptions) Validate() error {
	if o.Enable && o.Disable {
		return badInput("--enable and --disable contradict each other; pass one")
	}
	if o.Pool != "" {
		if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
			return inputerr.Wrap(err)
		}
	}
	if o.Pool == "" && !o.Enable && !o.Disable && len(o.Metadata) == 0 {
		return badInput("nothing to update: pass --pool, --enable, --disable or --metadata")
	}
	return nil
}

// UpdateResult says what `node update` did.
type UpdateResult struct {
	Node    Node `json:"node"`
	Changed bool `json:"changed"`
}

// Update changes a found node. --disable adds the NoSchedule taint
// tug.dev/disabled, so new units go elsewhere while the ones there keep
// running; --enable removes it, and also undoes the cordon an interrupted
// `node remove` leaves, so the node takes units again.
func Update(ctx context.Context, f *Found, o UpdateOptions) (*UpdateResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var changed bool
	n, err := modify(ctx, f.Target.Client, f.Node.Name, func(n *corev1.Node) bool {
		c := false
		if o.Pool != "" {
			c = setPool(n, o.Pool) || c
		}
		if o.Disable {
			c = setDisabled(n, true) || c
		}
		if o.Enable {
			c = setDisabled(n, false) || c
			if n.Spec.Unschedulable {
				n.Spec.Unschedulable = false
				c = true
			}
		}
		c = applyMetadata(n, o.Metadata) || c
		changed = c
		return c
	})
	if err != nil {
		return nil, err
	}
	return &UpdateResult{Node: Summarize(n, f.Target.Name, nil), Changed: changed}, nil
}

// modify reads the node, lets change edit it, and writes it back with its
// resourceVersion, retrying on conflict: taints are a list the API server
// replaces whole, so a blind patch could drop a taint someone else just
// added. change reports whether it changed anything; nothing is written
// when it did not.
func modify(ctx context.Context, client kubernetes.Interface, name string, change func(*corev1.Node) bool) (*corev1.Node, error) {
	var out *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !change(n) {
			out = n
			return nil
		}
		out, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		return err
	})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return out, nil
}
