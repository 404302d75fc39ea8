// Package nodecontainer runs tsuru's node containers on Kubernetes: a
// container that runs once on every node of a pool (a log shipper, a
// monitoring agent), as one DaemonSet per pool. A node container without a
// pool runs on every node except those of pools that have their own
// version of it, as tsuru's pool-specific configs override the default.
package nodecontainer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/node"
)

const (
	// LabelName carries the node container's name on its DaemonSets and pods.
	LabelName = "tug.dev/node-container"
	// annotationRestartedAt on the pod template rolls every pod (upgrade
	// without a new image re-pulls a moving tag such as :latest).
	annotationRestartedAt = "tug.dev/restarted-at"
	maxNameLen            = 30
)

// ValidateName checks a node container's name: a DNS label short enough
// that every DaemonSet and pod name made from it stays valid.
func ValidateName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 || len(name) > maxNameLen {
		return inputerr.Errorf("invalid node container name %q: use at most %d lower-case letters, digits and '-', starting and ending with a letter or digit", name, maxNameLen)
	}
	return nil
}

// Container is one node container in one pool of one cluster: a DaemonSet.
// Its JSON shape is documented in docs/output.md.
type Container struct {
	Name      string `json:"name"`
	Pool      string `json:"pool,omitempty"` // "": every node not in a pool of its own
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	DaemonSet string `json:"daemonSet"`
	Image     string `json:"image"`
	// Desired is how many nodes should run it; Ready how many do, ready;
	// UpToDate how many run the current spec.
	Desired   int32     `json:"desired"`
	Ready     int32     `json:"ready"`
	UpToDate  int32     `json:"upToDate"`
	CreatedAt time.Time `json:"createdAt"`
}

// DaemonSetName is the DaemonSet of a node container in a pool ("" = the
// default one). A pool that is not a valid name part (label values allow
// upper case, '_' and '.') is replaced by a short hash.
func DaemonSetName(name, pool string) string {
	base := "nc-" + name
	if pool == "" {
		return base
	}
	if validName.MatchString(pool) && len(base)+1+len(pool) <= 63 {
		return base + "-" + pool
	}
	sum := sha256.Sum256([]byte(pool))
	return base + "-p" + hex.EncodeToString(sum[:])[:10]
}

var validName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// AddOptions are `tug node-container add`.
type AddOptions struct {
	Name       string
	Image      string
	Pool       string
	Env        []corev1.EnvVar
	Privileged bool
}

// Validate checks the options before anything is read.
func (o AddOptions) Validate() error {
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	if strings.TrimSpace(o.Image) == "" || strings.ContainsAny(o.Image, " \t\n") {
		return inputerr.Errorf("invalid image %q: give an image reference such as registry.example.com/agent:1.2", o.Image)
	}
	if o.Pool != "" {
		if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
			return inputerr.Wrap(err)
		}
	}
	return nil
}

// ParseEnv turns K=V pairs into container variables, refusing bad names.
func ParseEnv(pairs []string) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	seen := map[string]int{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, inputerr.Errorf("invalid --env %q: want NAME=VALUE", p)
		}
		if errs := validation.IsEnvVarName(k); len(errs) > 0 {
			return nil, inputerr.Errorf("invalid variable name %q in --env: %s", k, strings.Join(errs, "; "))
		}
		if i, dup := seen[k]; dup {
			out[i].Value = v
			continue
		}
		seen[k] = len(out)
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out, nil
}

func labelsFor(name, pool string) map[string]string {
	l := map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelName: name}
	if pool != "" {
		l[kube.LabelPool] = pool
	}
	return l
}

// selectorFor tells a pool's DaemonSet's pods from the default one's:
// DaemonSets of one name must never select each other's pods.
func selectorFor(name, pool string) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelName: name}}
	if pool != "" {
		sel.MatchLabels[kube.LabelPool] = pool
	} else {
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: kube.LabelPool, Operator: metav1.LabelSelectorOpDoesNotExist}}
	}
	return sel
}

// render builds the DaemonSet of a node container. excluded are the pools
// with their own version, which the default one leaves alone.
func render(o AddOptions, ns string, excluded []string) *appsv1.DaemonSet {
	c := corev1.Container{Name: o.Name, Image: o.Image, Env: o.Env}
	if o.Privileged {
		c.SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
	}
	spec := corev1.PodSpec{
		Containers: []corev1.Container{c},
		// Node containers serve the node, so they run on disabled nodes
		// too: disabling keeps only new app units away.
		Tolerations: []corev1.Toleration{{Key: node.TaintDisabled, Operator: corev1.TolerationOpExists}},
	}
	if o.Pool != "" {
		spec.NodeSelector = map[string]string{kube.LabelPool: o.Pool}
	} else if len(excluded) > 0 {
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: kube.LabelPool, Operator: corev1.NodeSelectorOpNotIn, Values: excluded}},
			}}},
		}}
	}
	maxUnavailable := intstr.FromInt32(1)
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName(o.Name, o.Pool), Namespace: ns, Labels: labelsFor(o.Name, o.Pool)},
		Spec: appsv1.DaemonSetSpec{
			Selector: selectorFor(o.Name, o.Pool),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labelsFor(o.Name, o.Pool)},
				Spec:       spec,
			},
		},
	}
}

// Client is a node container store: the DaemonSets in one namespace of
// one cluster.
type Client struct {
	Kube      kubernetes.Interface
	Namespace string
	Cluster   string
}

// Add creates the node container's DaemonSet for the pool, or updates it
// when it exists (adding twice updates). Adding a pool's version takes
// that pool's nodes away from the default version.
func (c *Client) Add(ctx context.Context, o AddOptions) (*Container, bool, error) {
	if err := o.Validate(); err != nil {
		return nil, false, err
	}
	dss := c.Kube.AppsV1().DaemonSets(c.Namespace)
	name := DaemonSetName(o.Name, o.Pool)
	_, err := dss.Get(ctx, name, metav1.GetOptions{})
	existed := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, false, kube.TranslateError(err)
	}
	var excluded []string
	if o.Pool == "" {
		if excluded, err = c.poolsOf(ctx, o.Name); err != nil {
			return nil, false, err
		}
	}
	got, err := c.apply(ctx, render(o, c.Namespace, excluded))
	if err != nil {
		return nil, false, err
	}
	if o.Pool != "" {
		if err := c.syncDefault(ctx, o.Name); err != nil {
			return nil, false, err
		}
	}
	ct := c.describe(got)
	return &ct, !existed, nil
}

// apply writes the whole DaemonSet with server-side apply as tug.
func (c *Client) apply(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	got, err := applyDaemonSet(ctx, c.Kube, ds)
	if err != nil {
		return nil, fmt.Errorf("applying daemonset %s: %w", ds.Name, kube.TranslateError(err))
	}
	return got, nil
}

// poolsOf lists the pools that have their own version of the container.
func (c *Client) poolsOf(ctx context.Context, name string) ([]string, error) {
	list, err := c.list(ctx, name)
	if err != nil {
		return nil, err
	}
	var pools []string
	for _, ds := range list {
		if p := ds.Labels[kube.LabelPool]; p != "" {
			pools = append(pools, p)
		}
	}
	sort.Strings(pools)
	return pools, nil
}

// syncDefault points the default version away from the pools that have
// their own (tsuru's pool override), after one was added or removed.
func (c *Client) syncDefault(ctx context.Context, name string) error {
	pools, err := c.poolsOf(ctx, name)
	if err != nil {
		return err
	}
	dss := c.Kube.AppsV1().DaemonSets(c.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := dss.Get(ctx, DaemonSetName(name, ""), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		spec := &ds.Spec.Template.Spec
		if len(pools) == 0 {
			spec.Affinity = nil
		} else {
			spec.Affinity = render(AddOptions{Name: name}, c.Namespace, pools).Spec.Template.Spec.Affinity
		}
		_, err = dss.Update(ctx, ds, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating the default version of node container %s: %w", name, kube.TranslateError(err))
	}
	return nil
}

func (c *Client) list(ctx context.Context, name string) ([]appsv1.DaemonSet, error) {
	sel := kube.LabelManagedBy + "=" + kube.ManagedBy + "," + LabelName
	if name != "" {
		sel += "=" + name
	}
	list, err := c.Kube.AppsV1().DaemonSets(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return list.Items, nil
}

// List lists the node containers (every DaemonSet tug made for one).
func (c *Client) List(ctx context.Context) ([]Container, error) {
	list, err := c.list(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(list))
	for i := range list {
		out = append(out, c.describe(&list[i]))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Pool < out[j].Pool
	})
	return out, nil
}

func (c *Client) describe(ds *appsv1.DaemonSet) Container {
	ct := Container{
		Name: ds.Labels[LabelName], Pool: ds.Labels[kube.LabelPool], Cluster: c.Cluster, Namespace: ds.Namespace,
		DaemonSet: ds.Name, Desired: ds.Status.DesiredNumberScheduled, Ready: ds.Status.NumberReady,
		UpToDate: ds.Status.UpdatedNumberScheduled, CreatedAt: ds.CreationTimestamp.Time,
	}
	if cs := ds.Spec.Template.Spec.Containers; len(cs) > 0 {
		ct.Image = cs[0].Image
	}
	return ct
}

// NotFoundError says there is no such node container.
type NotFoundError struct{ Name, Pool, Namespace string }

func (e *NotFoundError) Error() string {
	where := ""
	if e.Pool != "" {
		where = fmt.Sprintf(" for pool %q", e.Pool)
	}
	return fmt.Sprintf("node container %q%s not found in namespace %q; see 'tug node-container list'", e.Name, where, e.Namespace)
}

// selected lists the DaemonSets of name, only pool's when pool != "".
func (c *Client) selected(ctx context.Context, name, pool string) ([]appsv1.DaemonSet, error) {
	list, err := c.list(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []appsv1.DaemonSet
	for _, ds := range list {
		if pool == "" || ds.Labels[kube.LabelPool] == pool {
			out = append(out, ds)
		}
	}
	if len(out) == 0 {
		return nil, inputerr.Wrap(&NotFoundError{Name: name, Pool: pool, Namespace: c.Namespace})
	}
	return out, nil
}
