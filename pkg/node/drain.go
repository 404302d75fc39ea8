package node

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/render"
)

// drainer moves the pods off one node.
type drainer struct {
	client    kubernetes.Interface
	node      *corev1.Node
	nodeReady bool
	o         RemoveOptions

	mu    sync.Mutex
	res   *RemoveResult
	locks map[string]*sharedLock // by namespace/app, guarded by mu
}

// sharedLock is an app's deploy lock, held once for all of the app's
// processes this run surges (they must not wait for each other).
type sharedLock struct {
	ready chan struct{} // closed once acquired or failed
	lock  *deploy.Txn
	err   error
	refs  int
}

// process identifies an app's process in a namespace.
type process struct{ namespace, app, name string }

func (p process) String() string { return fmt.Sprintf("%s/%s (%s)", p.namespace, p.app, p.name) }

func (p process) selector() string { return kube.ProcessSelector(p.app, p.name) }

// run evicts every pod, app-aware for units: one goroutine per process and
// per other pod, as kubectl drain evicts all at once. It returns every
// failure.
func (d *drainer) run(ctx context.Context, pods []corev1.Pod) []error {
	groups := map[process][]corev1.Pod{}
	var others []corev1.Pod
	for _, p := range pods {
		if isUnit(&p) && !podFinished(&p) {
			k := process{p.Namespace, p.Labels[kube.LabelApp], p.Labels[kube.LabelProcess]}
			groups[k] = append(groups[k], p)
		} else {
			others = append(others, p)
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	for k, ps := range groups {
		wg.Add(1)
		go func() { defer wg.Done(); fail(d.moveProcess(ctx, k, ps)) }()
	}
	for _, p := range others {
		wg.Add(1)
		go func() { defer wg.Done(); fail(d.evictAndWait(ctx, p)) }()
	}
	wg.Wait()
	return errs
}

// moveProcess moves one process's units off the node. When none of the
// process's ready units is elsewhere, it first surges the process by one
// unit, under the app's deploy lock so no deploy resets the count
// meanwhile, and waits until a unit is ready on another node.
func (d *drainer) moveProcess(ctx context.Context, proc process, pods []corev1.Pod) error {
	if anyReady(pods) {
		elsewhere, err := d.readyElsewhere(ctx, proc)
		if err != nil {
			return fmt.Errorf("%s: %w", proc, kube.TranslateError(err))
		}
		if elsewhere == 0 {
			release, err := d.lockApp(ctx, proc)
			if err != nil {
				return err
			}
			defer release()
			// A deploy that held the lock may have changed the picture.
			if elsewhere, err = d.readyElsewhere(ctx, proc); err != nil {
				return fmt.Errorf("%s: %w", proc, kube.TranslateError(err))
			}
		}
		if elsewhere == 0 {
			s, err := d.surge(ctx, proc)
			if err != nil {
				return err
			}
			if s != nil {
				defer d.restore(s)
				if err := d.waitReadyElsewhere(ctx, proc); err != nil {
					return err
				}
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = d.evictAndWait(ctx, p) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func anyReady(pods []corev1.Pod) bool {
	for i := range pods {
		if kube.PodReady(&pods[i]) {
			return true
		}
	}
	return false
}

// readyElsewhere counts the process's ready units on other nodes.
func (d *drainer) readyElsewhere(ctx context.Context, proc process) (int, error) {
	pods, err := d.client.CoreV1().Pods(proc.namespace).List(ctx, metav1.ListOptions{LabelSelector: proc.selector()})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		if d.servesElsewhere(proc, &pods.Items[i]) {
			n++
		}
	}
	return n, nil
}

func (d *drainer) servesElsewhere(proc process, p *corev1.Pod) bool {
	return isUnit(p) && p.Namespace == proc.namespace && p.Labels[kube.LabelApp] == proc.app && p.Labels[kube.LabelProcess] == proc.name &&
		p.Spec.NodeName != "" && p.Spec.NodeName != d.node.Name && kube.PodReady(p)
}

// predictSurges says which processes a real run would surge.
func (d *drainer) predictSurges(ctx context.Context, pods []corev1.Pod) []Surge {
	seen := map[process]bool{}
	var out []Surge
	for _, p := range pods {
		if !isUnit(&p) || podFinished(&p) || !kube.PodReady(&p) {
			continue
		}
		k := process{p.Namespace, p.Labels[kube.LabelApp], p.Labels[kube.LabelProcess]}
		if seen[k] {
			continue
		}
		seen[k] = true
		if n, err := d.readyElsewhere(ctx, k); err != nil || n > 0 {
			continue
		}
		sc, err := d.client.AppsV1().Deployments(k.namespace).GetScale(ctx, render.DeploymentName(k.app, k.name), metav1.GetOptions{})
		if err != nil || sc.Spec.Replicas == 0 {
			continue
		}
		out = append(out, Surge{Namespace: k.namespace, App: k.app, Process: k.name, From: sc.Spec.Replicas, To: sc.Spec.Replicas + 1})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+out[i].App+out[i].Process < out[j].Namespace+out[j].App+out[j].Process
	})
	return out
}

// lockApp holds the app's deploy lock for proc until release is called;
// the app's other processes share the same hold.
func (d *drainer) lockApp(ctx context.Context, proc process) (release func(), err error) {
	key := proc.namespace + "/" + proc.app
	d.mu.Lock()
	if d.locks == nil {
		d.locks = map[string]*sharedLock{}
	}
	sl := d.locks[key]
	first := sl == nil
	if first {
		sl = &sharedLock{ready: make(chan struct{})}
		d.locks[key] = sl
	}
	sl.refs++
	d.mu.Unlock()

	release = func() {
		d.mu.Lock()
		sl.refs--
		last := sl.refs == 0
		if last {
			delete(d.locks, key)
		}
		d.mu.Unlock()
		if last && sl.lock != nil {
			sl.lock.End()
		}
	}
	if first {
		sl.lock, sl.err = d.acquire(ctx, proc)
		close(sl.ready)
	} else {
		select {
		case <-sl.ready:
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	if sl.err != nil {
		release()
		return nil, sl.err
	}
	return release, nil
}

// acquire takes the app's deploy lock, waiting while a deploy holds it:
// deploy.Hold, the transaction's lock without its record, which the
// admin's Role (docs/rbac, tug-cluster-admin-apps) does not let it read.
// A drain changes no record, only the count of units (surge).
func (d *drainer) acquire(ctx context.Context, proc process) (*deploy.Txn, error) {
	holder := d.o.Holder
	if holder == (lock.Holder{}) {
		holder = lock.Self("tug node remove")
	}
	holder.What = "moving units off node " + d.node.Name
	for {
		l, err := deploy.Hold(ctx, deploy.Deps{Client: d.client, Namespace: proc.namespace, Holder: holder}, proc.app)
		var held *lock.HeldError
		if !errors.As(err, &held) {
			if err != nil {
				return nil, d.appsRoleRefusal(proc, "taking the app's deploy lock", err)
			}
			return l, nil
		}
		d.o.Progress.Update(fmt.Sprintf("%s/%s: waiting for %s to finish changing the app", proc.namespace, proc.app, held.Holder))
		if err := kube.Pause(ctx, d.o.RetryDelay); err != nil {
			return nil, fmt.Errorf("%s: the app stayed locked by %s: %w", proc, held.Holder, err)
		}
	}
}

// surge adds one unit to the process's Deployment through its scale
// subresource. It returns nil when the process has no Deployment tug knows
// (its pods are then simply evicted). The node records the surge first
// (AnnotationSurges), so a removal killed before it puts the count back
// leaves what the next one needs to.
func (d *drainer) surge(ctx context.Context, proc process) (*Surge, error) {
	name := render.DeploymentName(proc.app, proc.name)
	// the lock this drain holds, as the lease names it
	holder, err := d.lockHolder(ctx, proc)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the app's deploy lock: %w", proc, kube.TranslateError(err))
	}
	var s *Surge
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := d.client.AppsV1().Deployments(proc.namespace).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		from := sc.Spec.Replicas
		if from == 0 {
			return nil // being stopped: its units are going away anyway
		}
		m := surgeMark{Namespace: proc.namespace, App: proc.app, Process: proc.name, From: from, To: from + 1, Lock: holder}
		if err := d.setMark(ctx, m, true); err != nil {
			return err
		}
		sc.Spec.Replicas = from + 1
		if _, err := d.client.AppsV1().Deployments(proc.namespace).UpdateScale(ctx, name, sc, metav1.UpdateOptions{FieldManager: kube.FieldManager}); err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
			_ = d.setMark(cctx, m, false)
			cancel()
			return err
		}
		s = m.surge()
		s.mark = &m
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, d.appsRoleRefusal(proc, "adding a unit elsewhere", err)
	}
	if s == nil {
		return nil, nil
	}
	d.o.Progress.Update(fmt.Sprintf("%s: starting a unit on another node before moving its last ready one (%d -> %d units)", proc, s.From, s.To))
	return s, nil
}

// restore puts the unit count back, unless someone changed it meanwhile.
// It runs on the way out, after Ctrl-C too, so it has its own deadline.
func (d *drainer) restore(s *Surge) {
	if err := d.putBack(s); err != nil {
		d.o.Progress.Update(err.Error())
	}
}

// putBack sets the count from s.To back to s.From, unless someone changed
// it meanwhile (theirs wins), records s in the result, and clears the
// node's mark of it. When the count cannot be written the mark stays, for
// the next removal of the node to finish, without its lock (this run
// releases the lock, so the lease can no longer tell): that one puts the
// count back if it is still s.To.
func (d *drainer) putBack(s *Surge) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	name := render.DeploymentName(s.App, s.Process)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := d.client.AppsV1().Deployments(s.Namespace).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sc.Spec.Replicas != s.To {
			return nil // changed by someone else: theirs wins
		}
		sc.Spec.Replicas = s.From
		if _, err := d.client.AppsV1().Deployments(s.Namespace).UpdateScale(ctx, name, sc, metav1.UpdateOptions{FieldManager: kube.FieldManager}); err != nil {
			return err
		}
		s.Restored = true
		return nil
	})
	if apierrors.IsNotFound(err) {
		err = nil // the process is gone: nothing to put back
	}
	out := *s
	out.mark = nil
	d.mu.Lock()
	d.res.Surges = append(d.res.Surges, out)
	d.mu.Unlock()
	if err != nil {
		if m := s.mark; m != nil && m.Lock != "" {
			mctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			unlocked := *m
			unlocked.Lock = ""
			if d.setMark(mctx, unlocked, true) == nil {
				_ = d.setMark(mctx, *m, false)
			}
			cancel()
		}
		return fmt.Errorf("%s/%s (%s): could not restore %d units: %v", s.Namespace, s.App, s.Process, s.From, kube.TranslateError(err))
	}
	if s.mark != nil {
		if err := d.setMark(ctx, *s.mark, false); err != nil {
			return fmt.Errorf("%s/%s (%s): clearing node %s's record of the raised unit count: %w", s.Namespace, s.App, s.Process, d.node.Name, err)
		}
	}
	return nil
}

// waitReadyElsewhere waits until the process has a ready unit on another
// node, saying why while it has none (the scheduler's reason for a pending
// unit, typically: no other node in the pool).
func (d *drainer) waitReadyElsewhere(ctx context.Context, proc process) error {
	last := ""
	err := kube.WaitPods(ctx, d.client, proc.namespace, metav1.ListOptions{LabelSelector: proc.selector()}, func(pods map[string]*corev1.Pod) bool {
		for _, p := range pods {
			if d.servesElsewhere(proc, p) {
				return true
			}
		}
		if why := pendingReason(pods); why != "" && why != last {
			last = why
			d.o.Progress.Update(fmt.Sprintf("%s: waiting for a unit on another node: %s", proc, why))
		}
		return false
	})
	if err != nil {
		why := ""
		if last != "" {
			why = " (" + last + ")"
		}
		return fmt.Errorf("%s: no unit became ready on another node%s: %w", proc, why, kube.TranslateError(err))
	}
	return nil
}

// pendingReason is the scheduler's message for a unit it cannot place.
func pendingReason(pods map[string]*corev1.Pod) string {
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, c := range pods[k].Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				return c.Message
			}
		}
	}
	return ""
}

// evictAndWait evicts a pod and waits until it is gone.
func (d *drainer) evictAndWait(ctx context.Context, p corev1.Pod) error {
	ref := refOf(&p)
	if err := d.evict(ctx, &p); err != nil {
		return fmt.Errorf("pod %s: %w", ref, err)
	}
	d.mu.Lock()
	d.res.Evicted = append(d.res.Evicted, ref)
	d.mu.Unlock()
	if err := d.waitGone(ctx, &p); err != nil {
		return fmt.Errorf("pod %s did not stop: %w", ref, kube.TranslateError(err))
	}
	return nil
}

// evict asks the Eviction API to evict the pod, retrying while a
// PodDisruptionBudget (or the server's load) refuses, and saying which
// budget blocks.
func (d *drainer) evict(ctx context.Context, p *corev1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	lastReason := ""
	for {
		d.o.Progress.Update(fmt.Sprintf("evicting pod %s/%s", p.Namespace, p.Name))
		err := d.client.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
		out := ClassifyEviction(err)
		switch out.Kind {
		case EvictDone:
			return nil
		case EvictFailed:
			return out.Err
		}
		if out.Reason != lastReason {
			lastReason = out.Reason
		}
		d.o.Progress.Update(fmt.Sprintf("pod %s/%s: %s; retrying", p.Namespace, p.Name, out.Reason))
		delay := d.o.RetryDelay
		if out.RetryAfter > 0 && out.RetryAfter < 10*time.Second {
			delay = max(delay, out.RetryAfter)
		}
		if err := kube.Pause(ctx, delay); err != nil {
			return fmt.Errorf("%s", lastReason)
		}
	}
}

// EvictionOutcome is what an eviction attempt's answer means.
type EvictionOutcome struct {
	Kind EvictionKind
	// Reason, for EvictRetry, says what refused: "blocked by
	// PodDisruptionBudget web: it needs 1 healthy pods and has 1".
	Reason string
	// Budget names the refusing PodDisruptionBudget, when the server says.
	Budget     string
	RetryAfter time.Duration
	Err        error
}

// EvictionKind classifies an eviction attempt.
type EvictionKind int

const (
	// EvictDone: the pod is being evicted, or is gone already.
	EvictDone EvictionKind = iota
	// EvictRetry: refused for now (a budget, the server's load); try again.
	EvictRetry
	// EvictFailed: refused for good.
	EvictFailed
)

var budgetName = regexp.MustCompile(`disruption budget (\S+)`)

// ClassifyEviction turns the Eviction API's answer into what to do next.
// A 429 is a PodDisruptionBudget saying no (the status names it in a
// cause) or the server shedding load; both pass with time.
func ClassifyEviction(err error) EvictionOutcome {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return EvictionOutcome{Kind: EvictDone}
	case apierrors.IsTooManyRequests(err):
		out := EvictionOutcome{Kind: EvictRetry, Reason: "the cluster asked to retry later"}
		if secs, ok := apierrors.SuggestsClientDelay(err); ok && secs > 0 {
			out.RetryAfter = time.Duration(secs) * time.Second
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			st := status.Status()
			if st.Details != nil {
				for _, c := range st.Details.Causes {
					if c.Type != policyv1.DisruptionBudgetCause {
						continue
					}
					if m := budgetName.FindStringSubmatch(c.Message); m != nil {
						out.Budget = m[1]
					}
					out.Reason = "blocked by PodDisruptionBudget"
					if out.Budget != "" {
						out.Reason += " " + out.Budget
					}
					out.Reason += ": " + budgetDetail(c.Message)
					return out
				}
			}
			if msg := st.Message; msg != "" {
				out.Reason = "the cluster refused for now: " + strings.TrimSuffix(lowerFirst(msg), ".")
			}
		}
		return out
	case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace is being deleted, and the pod with it.
		return EvictionOutcome{Kind: EvictDone}
	case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "more than one PodDisruptionBudget"):
		return EvictionOutcome{Kind: EvictFailed, Err: errors.New("more than one PodDisruptionBudget covers it, and the Eviction API refuses such pods; leave one budget per pod")}
	}
	return EvictionOutcome{Kind: EvictFailed, Err: kube.TranslateError(err)}
}

// budgetDetail rewrites the server's "The disruption budget web needs 1
// healthy pods and has 1 currently" as "it needs 1 healthy pods and has 1
// currently".
func budgetDetail(msg string) string {
	msg = strings.TrimSuffix(msg, ".")
	if m := budgetName.FindStringIndex(msg); m != nil {
		if rest := strings.TrimSpace(msg[m[1]:]); rest != "" {
			return "it " + rest
		}
	}
	return lowerFirst(msg)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// waitGone waits until the pod is deleted (or replaced by a namesake). On a
// node that is not ready no kubelet will finish a pod: being marked for
// deletion is all that can happen, and the pod garbage collector removes
// it once the Node is deleted.
func (d *drainer) waitGone(ctx context.Context, p *corev1.Pod) error {
	d.o.Progress.Update(fmt.Sprintf("waiting for pod %s/%s to stop", p.Namespace, p.Name))
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.Name).String()}
	return kube.WaitPods(ctx, d.client, p.Namespace, opts, func(pods map[string]*corev1.Pod) bool {
		cur, ok := pods[p.Namespace+"/"+p.Name]
		if !ok || cur.UID != p.UID {
			return true
		}
		return !d.nodeReady && cur.DeletionTimestamp != nil
	})
}

// uncordon undoes this run's cordon when it stops before moving anything.
func (d *drainer) uncordon() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, _ = modify(ctx, d.client, d.node.Name, func(n *corev1.Node) bool {
		if !n.Spec.Unschedulable {
			return false
		}
		n.Spec.Unschedulable = false
		return true
	})
}
