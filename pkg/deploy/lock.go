package deploy

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// The deploy lock is a Lease per app. Whoever changes what runs (deploy, env
// change, rollback) holds it and renews it; a tug killed mid-deploy stops
// renewing, and the lease expires after LeaseDuration, so the next deploy
// proceeds without manual repair.
const (
	LeaseDuration = 15 * time.Second
	renewEvery    = 5 * time.Second
)

// LockName is the Lease that serialises an app's deploys.
func LockName(appName string) string { return "tug-lock-" + appName }

// LockedError says another deploy of the app is in progress.
type LockedError struct {
	App, Holder string
	Since       time.Time
	Renewed     time.Time
	Expires     time.Time
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("app %q is being changed by %s since %s (lease renewed %s ago); wait for it to finish, or retry after %s if that tug was killed",
		e.App, e.Holder, e.Since.Local().Format("15:04:05"), time.Since(e.Renewed).Round(time.Second), e.Expires.Local().Format("15:04:05"))
}

// Lock is a held deploy lock; Unlock releases it.
type Lock struct {
	client    kubernetes.Interface
	namespace string
	name      string
	holder    string
	stop      context.CancelFunc
	done      chan struct{}
	mu        sync.Mutex
	lost      error
}

// Lost says whether the lock was taken from us (its renewal found another
// holder): whoever holds it now may be changing the app too.
func (l *Lock) Lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// AcquireLock takes app's deploy lock for holder, or fails at once with a
// LockedError naming who holds it. An expired lease is taken over.
func AcquireLock(ctx context.Context, client kubernetes.Interface, namespace, appName, holder string) (*Lock, error) {
	leases := client.CoordinationV1().Leases(namespace)
	now := metav1.NewMicroTime(time.Now())
	secs := int32(LeaseDuration / time.Second)
	labels := kube.AppLabels(appName)
	labels[kube.LabelKind] = "lock"
	want := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LockName(appName), Namespace: namespace, Labels: labels},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now,
		},
	}
	created, err := leases.Create(ctx, want, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := leases.Get(ctx, want.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, kube.TranslateError(gerr)
		}
		if held := heldError(appName, cur); held != nil {
			return nil, held
		}
		// expired: take it over; a conflict means someone else just did
		cur.Spec = want.Spec
		cur.Labels = labels
		created, err = leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		if apierrors.IsConflict(err) {
			if latest, gerr := leases.Get(ctx, want.Name, metav1.GetOptions{}); gerr == nil {
				if held := heldError(appName, latest); held != nil {
					return nil, held
				}
			}
		}
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	renewCtx, stop := context.WithCancel(context.Background())
	l := &Lock{client: client, namespace: namespace, name: created.Name, holder: holder, stop: stop, done: make(chan struct{})}
	go l.renew(renewCtx, created)
	return l, nil
}

func heldError(appName string, l *coordinationv1.Lease) *LockedError {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil || l.Spec.HolderIdentity == nil {
		return nil
	}
	expires := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if time.Now().After(expires) {
		return nil
	}
	since := l.Spec.RenewTime.Time
	if l.Spec.AcquireTime != nil {
		since = l.Spec.AcquireTime.Time
	}
	return &LockedError{App: appName, Holder: *l.Spec.HolderIdentity, Since: since, Renewed: l.Spec.RenewTime.Time, Expires: expires}
}

func (l *Lock) renew(ctx context.Context, lease *coordinationv1.Lease) {
	defer close(l.done)
	t := time.NewTicker(renewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &now
			updated, err := l.client.CoordinationV1().Leases(l.namespace).Update(ctx, lease, metav1.UpdateOptions{FieldManager: kube.FieldManager})
			switch {
			case err == nil:
				lease = updated
			case ctx.Err() != nil:
				return
			case apierrors.IsConflict(err):
				// someone else wrote the lease: ours only if it still names us
				cur, gerr := l.client.CoordinationV1().Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
				if gerr == nil && cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity == l.holder {
					lease = cur
					continue
				}
				l.mu.Lock()
				l.lost = fmt.Errorf("lost the deploy lock of app %q to another tug", l.name)
				l.mu.Unlock()
				return
			}
			// other errors (the API briefly unreachable): try again next tick
		}
	}
}

// Unlock stops renewing and deletes the lease, so the next deploy need not
// wait for it to expire. It uses its own short deadline: it runs on the way
// out, often after the command's context was cancelled by Ctrl-C.
func (l *Lock) Unlock() {
	l.stop()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Delete only our own lease: another tug may have taken it over after
	// ours expired. The precondition closes the gap between Get and Delete.
	cur, err := l.client.CoordinationV1().Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
	if err != nil || cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != l.holder {
		return
	}
	_ = l.client.CoordinationV1().Leases(l.namespace).Delete(ctx, l.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion},
	})
}
