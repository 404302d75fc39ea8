package service

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/rollout"
)

// CreateOptions are a new service.
type CreateOptions struct {
	Name    string
	Plan    string
	Version string // "": the plan's default
	Size    string // "": the plan's default
	// Timeout bounds the wait for the service to accept connections.
	Timeout time.Duration
	// Review, when set, makes the service a review app's own: labelled
	// as the review's, and removed with it.
	Review *ReviewOwner
}

// Validate checks what needs no cluster; its error is an input error.
func (o CreateOptions) Validate() error {
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	if o.Plan == "" {
		return inputerr.Errorf("which plan? give --plan (see 'tug service plans')")
	}
	if err := validName("plan", o.Plan); err != nil {
		return err
	}
	if o.Size != "" {
		if q, err := resource.ParseQuantity(o.Size); err != nil || q.Sign() <= 0 {
			return inputerr.Errorf("invalid --size %q: want a quantity such as 1Gi", o.Size)
		}
	}
	return nil
}

// Create makes a service from its plan and waits until it accepts
// connections. It is safe to run again after it was stopped (a kill, a
// timeout): the record written first names what was asked, the
// credentials are made only once, the objects are applied again, and the
// wait starts over. A failure says why as a deploy's does (image pull,
// crash with the last log lines, unschedulable, a volume that cannot be
// bound) and keeps what was made, for 'service info' and a re-run, or
// 'service remove'.
func Create(ctx context.Context, d Deps, o CreateOptions) (*Info, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// under the service's lock: a create run again over a rotate would
	// write the old login back into the binding just before the rotate
	// revokes it
	ctx, unlock, err := d.Hold(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, resumed, err := startCreate(ctx, d, o)
	if err != nil {
		return nil, err
	}
	if resumed {
		d.Progress.Update(fmt.Sprintf("service %q was being created; finishing it", o.Name))
	}
	if err := ensureCredentials(ctx, d.Client, d.Namespace, rec); err != nil {
		return nil, err
	}
	objs, err := rec.Spec.Render(rec.params(d.Namespace))
	if err != nil {
		return nil, err
	}
	d.Progress.Update(fmt.Sprintf("creating service %s (%s %s)", o.Name, rec.Plan, rec.Version))
	if err := d.apply(ctx, o.Name, objs); err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	d.Progress.Update(fmt.Sprintf("waiting for service %s to accept connections", o.Name))
	if err := d.bindWhenReady(ctx, rec, timeout); err != nil {
		return nil, err
	}
	// without the volume's use: that is a df in the unit (an exec round
	// trip), 'service info's alone (docs/output.md), and a service just
	// made holds next to nothing
	if rec, err = readRecord(ctx, d.Client, d.Namespace, o.Name); err != nil {
		return nil, err
	}
	return d.info(ctx, rec)
}

// bindWhenReady waits for the service to accept connections, then writes
// its binding (a bind needs it, so not before); the binding's values are
// read while the unit starts.
func (d Deps) bindWhenReady(ctx context.Context, rec *Record, timeout time.Duration) error {
	type rendered struct {
		values map[string]string
		err    error
	}
	binding := make(chan rendered, 1)
	go func() {
		v, err := d.bindingValues(ctx, rec)
		binding <- rendered{v, err}
	}()
	if err := d.waitReady(ctx, rec, timeout); err != nil {
		return err
	}
	b := <-binding
	if b.err != nil {
		// read again: a plan whose credentials an operator writes (or
		// whose host Service it makes) may have had none when the unit
		// was starting
		if b.values, b.err = d.bindingValues(ctx, rec); b.err != nil {
			return b.err
		}
	}
	return d.putBinding(ctx, rec, b.values)
}

// startCreate reads the plan and writes the record, or finds the record a
// stopped create left and goes on with it.
func startCreate(ctx context.Context, d Deps, o CreateOptions) (*Record, bool, error) {
	cur, err := readRecord(ctx, d.Client, d.Namespace, o.Name)
	if err == nil {
		if cur.Plan != o.Plan || (o.Version != "" && cur.Version != o.Version) {
			return nil, false, inputerr.Errorf("service %q already exists (plan %s %s) in namespace %q; see 'tug service info %s'", o.Name, cur.Plan, cur.Version, d.Namespace, o.Name)
		}
		if o.Size != "" && !sameQuantity(o.Size, cur.Size) {
			return nil, false, inputerr.Errorf("service %q already exists with a volume of %s; tug does not resize a service's volume (see docs/services.md)", o.Name, cur.Size)
		}
		if !cur.Review.same(o.Review) {
			// a service of the app's, or of a review: never taken over
			if o.Review == nil {
				return nil, false, inputerr.Errorf("service %q already exists in namespace %q: it is %s service; 'tug review down %s --name %s' removes it", o.Name, d.Namespace, cur.Review.describe(), cur.Review.Of, cur.Review.Name)
			}
			return nil, false, inputerr.Errorf("service %q already exists in namespace %q and is not %s; see 'tug service info %s'", o.Name, d.Namespace, o.Review.describe(), o.Name)
		}
		return cur, true, nil
	}
	if !inputerr.Is(err) {
		return nil, false, err
	}
	cat, err := ReadCatalog(ctx, d.Client)
	if err != nil {
		return nil, false, err
	}
	plan, err := cat.Plan(o.Plan)
	if err != nil {
		return nil, false, err
	}
	version, err := plan.Version(o.Version)
	if err != nil {
		return nil, false, err
	}
	settings, err := clustersettings.Read(ctx, d.Client)
	if err != nil {
		return nil, false, err
	}
	image := settings.For("").ServiceImage(plan.Name, version)
	if image == "" {
		image = plan.Images[version]
	}
	size := o.Size
	if size == "" {
		size = plan.DefaultSize
	}
	rec := &Record{Name: o.Name, Plan: plan.Name, Version: version, Size: size, Image: image, CreatedAt: time.Now().UTC(), Spec: plan, Review: o.Review}
	if err := writeRecord(ctx, d.Client, d.Namespace, rec); apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("configmap %q exists and is not a service record of tug's: remove it or choose another name", ObjectName(o.Name))
	} else if err != nil {
		return nil, false, err
	}
	return rec, false, nil
}

// sameQuantity is whether two sizes are the same amount (1Gi, 1024Mi).
func sameQuantity(a, b string) bool {
	qa, errA := resource.ParseQuantity(a)
	qb, errB := resource.ParseQuantity(b)
	return errA == nil && errB == nil && qa.Cmp(qb) == 0
}

// waitReady waits until a unit of the service is Ready (the plan's
// readiness probe passes: for postgres, pg_isready), failing at once on
// what waiting will not fix.
func (d Deps) waitReady(ctx context.Context, rec *Record, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *corev1.Pod
	var failure *rollout.Failure
	err := kube.Until(ctx, kube.Pods(d.Client, d.Namespace, metav1.ListOptions{LabelSelector: LabelService + "=" + rec.Name}), func(pods map[string]*corev1.Pod) (bool, error) {
		for _, p := range pods {
			if kube.PodReady(p) {
				return true, nil
			}
			last = p
			if f := diagnose(p); f != nil && !d.claimBoundSince(ctx, p, f) {
				failure = f
				return true, nil
			}
		}
		return false, nil
	})
	if failure != nil {
		return d.explain(ctx, rec, last, failure)
	}
	if ctx.Err() != nil && err != nil {
		f := &rollout.Failure{Class: rollout.ClassTimeout, Message: fmt.Sprintf("service %q did not accept connections within %s%s", rec.Name, timeout, podState(last))}
		return &CreateError{Service: rec.Name, Failure: f}
	}
	return err
}
