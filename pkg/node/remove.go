package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/text"
)

// RemoveOptions are `tug node remove`.
type RemoveOptions struct {
	// NoRebalance deletes the Node object and nothing else: its pods are
	// left to the pod garbage collector, and its units are recreated
	// elsewhere only once Kubernetes notices they are gone.
	NoRebalance bool
	// Timeout bounds moving the pods (0: no bound). When it passes, the
	// node stays cordoned and is not deleted.
	Timeout time.Duration
	// Force evicts pods that no controller will recreate.
	Force bool
	// DeleteEmptyDirData evicts pods whose emptyDir data will be lost.
	DeleteEmptyDirData bool
	// DryRun reports what would happen and changes nothing.
	DryRun bool
	// KeepNode moves the pods but keeps the Node object, cordoned: a drain.
	// It lets tests exercise removal on a shared cluster's real nodes.
	KeepNode bool
	// PodSelector limits the pods moved, as kubectl drain's --pod-selector.
	// Only with KeepNode: deleting a node under pods left on it would strand
	// them.
	PodSelector string
	// PodNamespace limits the pods moved to one namespace; only with
	// KeepNode, as PodSelector.
	PodNamespace string
	// Holder is who holds an app's deploy lock while its process is
	// surged (zero: this process, as "tug node remove").
	Holder lock.Holder
	// User is who runs the removal, as the API server knows them
	// (kube.WhoAmI): a refusal in an app's namespace names them in the
	// RoleBinding it says to create.
	User string
	// RetryDelay is the pause between eviction attempts a budget refused
	// (default 2s, or what the server asks for).
	RetryDelay time.Duration
	Progress   progress.Reporter
}

// PodRef names a pod, and for a unit its app and process.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	App       string `json:"app,omitempty"`
	Process   string `json:"process,omitempty"`
}

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// SkippedPod is a pod remove leaves on the node, and why.
type SkippedPod struct {
	PodRef
	Reason string `json:"reason"`
}

// Surge is a process given one more unit while its last ready unit moved.
type Surge struct {
	Namespace string `json:"namespace"`
	App       string `json:"app"`
	Process   string `json:"process"`
	From      int32  `json:"from"`
	To        int32  `json:"to"`
	// Restored: the unit count is back to From. False when someone else
	// changed the count meanwhile (theirs is kept) or restoring failed.
	Restored bool `json:"restored"`
	// Earlier: an earlier removal of this node raised the count and
	// stopped (killed) before it put it back; this run did.
	Earlier bool `json:"earlier,omitempty"`

	mark *surgeMark // the node's record of it, cleared once put back
}

// RemoveResult says what `node remove` did (or, with DryRun, would do).
// Its JSON shape is documented in docs/output.md.
type RemoveResult struct {
	Node    string `json:"node"`
	Cluster string `json:"cluster"`
	DryRun  bool   `json:"dryRun,omitempty"`
	// Cordoned: this run cordoned the node (it was schedulable before).
	Cordoned bool         `json:"cordoned"`
	Evicted  []PodRef     `json:"evicted"`
	Skipped  []SkippedPod `json:"skipped"`
	Surges   []Surge      `json:"surges"`
	Deleted  bool         `json:"deleted"`
}

// BlockedError says some pods cannot be moved without a flag; nothing was
// changed.
type BlockedError struct {
	Node string
	Pods []SkippedPod
}

func (e *BlockedError) Error() string {
	var force, emptyDir []string
	for _, p := range e.Pods {
		if p.Reason == blockUnmanaged {
			force = append(force, p.String())
		} else {
			emptyDir = append(emptyDir, p.String())
		}
	}
	var parts []string
	if len(force) > 0 {
		parts = append(parts, fmt.Sprintf("%d %s no controller would recreate (%s; --force evicts them anyway)", len(force), text.Plural(len(force), "pod", "pods"), strings.Join(force, ", ")))
	}
	if len(emptyDir) > 0 {
		parts = append(parts, fmt.Sprintf("%d %s with emptyDir data that would be lost (%s; --delete-emptydir-data evicts them anyway)", len(emptyDir), text.Plural(len(emptyDir), "pod", "pods"), strings.Join(emptyDir, ", ")))
	}
	return fmt.Sprintf("cannot move every pod off node %q: %s; nothing was changed", e.Node, strings.Join(parts, "; "))
}

// DrainError says moving the pods failed or timed out; the node stays
// cordoned and was not deleted.
type DrainError struct {
	Node    string
	Timeout time.Duration // set when the timeout passed
	Errs    []error
}

func (e *DrainError) Error() string {
	head := fmt.Sprintf("moving pods off node %q failed", e.Node)
	if e.Timeout > 0 {
		head = fmt.Sprintf("timed out after %s moving pods off node %q", e.Timeout, e.Node)
	}
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	sort.Strings(msgs)
	return fmt.Sprintf("%s: %s; the node stays cordoned and was not deleted: retry 'tug node remove %s', or put it back in service with 'tug node update %s --enable'",
		head, strings.Join(msgs, "; "), e.Node, e.Node)
}

func (e *DrainError) Unwrap() []error { return e.Errs }

const (
	blockUnmanaged = "not managed by a controller"
	blockEmptyDir  = "uses emptyDir data"
	skipDaemonSet  = "DaemonSet pod (it goes with the node)"
	skipMirror     = "static pod (the kubelet owns it)"
)

// plan is what remove will do with the pods on the node.
type plan struct {
	evict   []corev1.Pod
	skipped []SkippedPod
	blocked []SkippedPod
}

// classify says whether a pod is evicted (""/""), skipped (skip), or needs
// a flag first (block).
func classify(p *corev1.Pod, o RemoveOptions) (skip, block string) {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return skipMirror, ""
	}
	if podFinished(p) {
		return "", "" // nothing runs; evicting it only tidies up
	}
	ctrl := metav1.GetControllerOf(p)
	if ctrl != nil && ctrl.Kind == "DaemonSet" {
		return skipDaemonSet, ""
	}
	if ctrl == nil && !o.Force {
		return "", blockUnmanaged
	}
	if !o.DeleteEmptyDirData {
		for _, v := range p.Spec.Volumes {
			if v.EmptyDir != nil {
				return "", blockEmptyDir
			}
		}
	}
	return "", ""
}

func refOf(p *corev1.Pod) PodRef {
	r := PodRef{Namespace: p.Namespace, Name: p.Name}
	if isUnit(p) {
		r.App, r.Process = p.Labels[kube.LabelApp], p.Labels[kube.LabelProcess]
	}
	return r
}

func makePlan(ctx context.Context, f *Found, o RemoveOptions) (*plan, error) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", f.Node.Name).String()}
	if o.PodSelector != "" {
		opts.LabelSelector = o.PodSelector
	}
	pods, err := f.Target.Client.CoreV1().Pods(o.PodNamespace).List(ctx, opts)
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	pl := &plan{}
	for i := range pods.Items {
		p := pods.Items[i]
		skip, block := classify(&p, o)
		switch {
		case skip != "":
			pl.skipped = append(pl.skipped, SkippedPod{PodRef: refOf(&p), Reason: skip})
		case block != "":
			pl.blocked = append(pl.blocked, SkippedPod{PodRef: refOf(&p), Reason: block})
		default:
			pl.evict = append(pl.evict, p)
		}
	}
	return pl, nil
}

// Validate refuses option combinations that cannot work, before anything
// is read; the messages name the command's flags.
func (o RemoveOptions) Validate() error {
	if o.NoRebalance && (o.Force || o.DeleteEmptyDirData || o.KeepNode || o.PodSelector != "" || o.PodNamespace != "") {
		return badInput("--no-rebalance moves nothing; it cannot be combined with --force, --delete-emptydir-data, --keep-node, --pod-selector or --pod-namespace")
	}
	if (o.PodSelector != "" || o.PodNamespace != "") && !o.KeepNode {
		return badInput("--pod-selector and --pod-namespace need --keep-node: deleting the node would strand the pods they leave")
	}
	if o.Timeout < 0 {
		return badInput("invalid --timeout %s: must not be negative", o.Timeout)
	}
	if o.PodSelector != "" {
		if _, err := labels.Parse(o.PodSelector); err != nil {
			return badInput("invalid pod selector %q: %v", o.PodSelector, err)
		}
	}
	return nil
}

// Remove takes a node out of its cluster. With rebalance (the default) it
// cordons the node, moves its pods off through the Eviction API, so
// PodDisruptionBudgets are respected, and deletes the Node once they are
// gone. Units move app-aware: before the last ready unit of a process
// leaves, the process gets one more unit elsewhere and Remove waits for it
// to be ready; the count is restored afterwards. Pods that cannot be moved
// safely (no controller, emptyDir data) stop it before anything changes,
// unless a flag allows them. On failure or timeout the node stays cordoned
// and is not deleted.
func Remove(ctx context.Context, f *Found, o RemoveOptions) (*RemoveResult, error) {
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 2 * time.Second
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	node := f.Node
	if !o.DryRun {
		if err := preflight(ctx, f.Target.Client, node.Name, o); err != nil {
			return nil, err
		}
	}
	res := &RemoveResult{Node: node.Name, Cluster: f.Target.Name, DryRun: o.DryRun, Evicted: []PodRef{}, Skipped: []SkippedPod{}, Surges: []Surge{}}
	if o.NoRebalance {
		if !o.DryRun {
			if err := deleteNode(ctx, f); err != nil {
				return res, err
			}
		}
		res.Deleted = true // or would be, with --dry-run
		return res, nil
	}
	pl, err := makePlan(ctx, f, o)
	if err != nil {
		return nil, err
	}
	if len(pl.blocked) > 0 {
		return nil, &BlockedError{Node: node.Name, Pods: pl.blocked}
	}
	d := &drainer{client: f.Target.Client, node: node, nodeReady: IsReady(node), o: o, res: res}
	if o.DryRun {
		res.Skipped = append(res.Skipped, pl.skipped...)
		for i := range pl.evict {
			res.Evicted = append(res.Evicted, refOf(&pl.evict[i]))
		}
		res.Surges = append(res.Surges, d.predictSurges(ctx, pl.evict)...)
		res.Deleted = !o.KeepNode
		return res, nil
	}
	if err := d.lockPreflight(ctx, pl.evict); err != nil {
		return nil, err
	}
	if res, err := d.drain(ctx, f); err != nil {
		return res, err
	}
	if o.KeepNode {
		return res, nil
	}
	o.Progress.Update(fmt.Sprintf("deleting node %s", node.Name))
	if err := deleteNode(ctx, f); err != nil {
		return res, err
	}
	res.Deleted = true
	return res, nil
}

// drain cordons the node and moves its pods off, within --timeout: the
// plan is made again once the node is cordoned, so pods scheduled in
// between are caught; a plan that is blocked then uncordons it and
// returns no result (nothing was moved).
func (d *drainer) drain(ctx context.Context, f *Found) (*RemoveResult, error) {
	o, res, node := d.o, d.res, d.node
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if o.Timeout > 0 {
		dctx, cancel = context.WithTimeout(ctx, o.Timeout)
	}
	defer cancel()
	if err := d.cordon(dctx); err != nil {
		return res, err
	}
	pl, err := makePlan(dctx, f, o)
	if err == nil && len(pl.blocked) > 0 {
		err = &BlockedError{Node: node.Name, Pods: pl.blocked}
	}
	if err != nil {
		if res.Cordoned {
			d.uncordon()
			res.Cordoned = false
		}
		return nil, err
	}
	res.Skipped = append(res.Skipped, pl.skipped...)
	// what an earlier, stopped removal of the node left raised
	earlier, errs := d.claimEarlier(dctx, surgeMarks(node))
	errs = append(errs, d.run(dctx, pl.evict)...)
	errs = append(errs, d.finishEarlier(earlier)...)
	res.sort()
	if len(errs) == 0 {
		return res, nil
	}
	if ctx.Err() != nil {
		return res, ctx.Err() // interrupted: the caller says so
	}
	de := &DrainError{Node: node.Name, Errs: errs}
	if errors.Is(dctx.Err(), context.DeadlineExceeded) {
		de.Timeout = o.Timeout
	}
	return res, de
}

// cordon marks the node unschedulable unless it already is.
func (d *drainer) cordon(ctx context.Context) error {
	if d.node.Spec.Unschedulable {
		return nil
	}
	d.o.Progress.Update(fmt.Sprintf("cordoning node %s", d.node.Name))
	if _, err := modify(ctx, d.client, d.node.Name, func(n *corev1.Node) bool {
		if n.Spec.Unschedulable {
			return false
		}
		n.Spec.Unschedulable = true
		return true
	}); err != nil {
		return err
	}
	d.res.Cordoned = true
	return nil
}

// sort orders what the goroutines appended, for stable output.
func (r *RemoveResult) sort() {
	sort.Slice(r.Evicted, func(i, j int) bool { return r.Evicted[i].String() < r.Evicted[j].String() })
	sort.Slice(r.Surges, func(i, j int) bool {
		a, b := r.Surges[i], r.Surges[j]
		return a.Namespace+"/"+a.App+"/"+a.Process < b.Namespace+"/"+b.App+"/"+b.Process
	})
}

// deleteNode deletes the Node found, and not a namesake registered since.
func deleteNode(ctx context.Context, f *Found) error {
	uid := f.Node.UID
	err := f.Target.Client.CoreV1().Nodes().Delete(ctx, f.Node.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}
