package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// Rotated is what a rotate did (docs/output.md).
type Rotated struct {
	Service string `json:"service"`
	// Username is the login the apps use now; Revoked the one refused.
	Username string   `json:"username"`
	Revoked  string   `json:"revoked"`
	Apps     []string `json:"apps"`
	// RevokedAt is when the database refuses the old login from: now, or
	// when the last of the old units must have stopped.
	RevokedAt time.Time `json:"revokedAt"`
	// StillOld are running pods of bound apps that no rollout replaces
	// (a CronJob's run, a one-off run) started before the binding held
	// the new login: they read the old one, refused from now on.
	StillOld []string `json:"stillOld,omitempty"`
}

// RolloutFailedError is a rotate stopped by an app that did not roll out
// with the new credentials (its own error says whether it was rolled
// back, or refused before any change: a held lock, a canary); both
// logins stay valid.
type RolloutFailedError struct {
	Service, App string
	Err          error
}

func (e *RolloutFailedError) Error() string {
	return fmt.Sprintf("app %q did not roll out with the new credentials of service %q (%v); both logins stay valid (the old is not revoked): fix the app and run 'tug service rotate %s' again", e.App, e.Service, e.Err, e.Service)
}

func (e *RolloutFailedError) Unwrap() error { return e.Err }

// Rotate gives a service new credentials with no moment when an app's
// are refused: the other login role of the plan gets a new password;
// the credentials and the binding Secret name it; every bound app is
// rolled out (restart) and checked, one after the other; only then is
// the old login's password taken away. A rollout that fails rolls that
// app back and stops, with both logins valid. The rotation is written in
// the record first: a rotate run after a kill or a failure finishes that
// rotation (rolls the apps out again, then revokes), never begins
// another over it.
func Rotate(ctx context.Context, d Deps, name string, restart func(ctx context.Context, app string) error) (*Rotated, error) {
	if _, err := readRecord(ctx, d.Client, d.Namespace, name); err != nil {
		return nil, err
	}
	// one rotate (or bind, remove, update) of a service at a time: two
	// rotates at once would give one login two passwords in turn
	ctx, unlock, err := d.Hold(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return nil, err
	}
	if rec.External {
		return nil, fmt.Errorf("service %q is external: give it its new URI with 'tug service update %s --uri URI'", name, name)
	}
	if rec.Spec.Rotate == nil {
		return nil, fmt.Errorf("plan %q does not say how to rotate credentials", rec.Plan)
	}
	rot, err := d.startRotation(ctx, rec)
	if err != nil {
		return nil, err
	}
	if err := d.writeBinding(ctx, rec); err != nil {
		return nil, err
	}
	out, err := d.rollOutRotation(ctx, rec, rot, restart)
	if err != nil {
		return nil, err
	}
	_, err = editRecord(ctx, d.Client, d.Namespace, name, func(r *Record) error {
		r.Rotation = nil
		return nil
	})
	return out, err
}

// rollOutRotation rolls every bound app out with the new login, side by
// side, then has the old login refused once no old unit can use it.
func (d Deps) rollOutRotation(ctx context.Context, rec *Record, rot *Rotation, restart func(ctx context.Context, app string) error) (*Rotated, error) {
	out := &Rotated{Service: rec.Name, Username: rot.To, Revoked: rot.From, Apps: []string{}}
	// bound apps are listed again after each pass, from what runs: the
	// old login is revoked only once no app found bound is left to roll out
	for pass := 0; ; pass++ {
		apps, err := boundApps(ctx, d, rec)
		if err != nil {
			return nil, err
		}
		// an app whose binding is only in a release that never ran (a
		// failed first deploy) has no unit to roll: its first units read
		// the binding, which names the new login by now
		todo := slices.DeleteFunc(apps, func(a BoundApp) bool { return !a.live || slices.Contains(out.Apps, a.App) })
		if len(todo) == 0 {
			break
		}
		if pass == 3 {
			return nil, fmt.Errorf("apps %s still use the old credentials of service %q after rolling out; the old credentials stay valid: run the rotate again", appNames(todo), rec.Name)
		}
		if err := d.restartAll(ctx, rec.Name, todo, restart); err != nil {
			return nil, err
		}
		for _, a := range todo {
			out.Apps = append(out.Apps, a.App)
		}
	}
	return out, d.revokeOld(ctx, rec, rot, out)
}

// restartAll rolls the apps out side by side (the rotate waits for the
// slowest, not the sum), each under its own app lock. Every rollout runs
// to its end, even after another failed: one stopped half way would be
// rolled back for no fault of its own.
func (d Deps) restartAll(ctx context.Context, service string, apps []BoundApp, restart func(ctx context.Context, app string) error) error {
	errs := make([]error, len(apps))
	var wg sync.WaitGroup
	for i, a := range apps {
		wg.Go(func() {
			d.Progress.Update(fmt.Sprintf("rolling out app %s with the new credentials", a.App))
			if err := restart(ctx, a.App); err != nil {
				errs[i] = &RolloutFailedError{Service: service, App: a.App, Err: err}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// revokeOld has the old login refused. A unit being stopped keeps serving
// a while (its stop delay) with the old credentials. When the plan can
// set a deadline (RevokeAfter) and the caller does not ask to wait, the
// database refuses the login from when the last such unit must have
// stopped (its grace period, counted from now: later than its deletion,
// whatever the clocks say); otherwise tug waits for those units to stop
// and revokes it at once.
func (d Deps) revokeOld(ctx context.Context, rec *Record, rot *Rotation, out *Rotated) error {
	grace, err := d.stoppingGrace(ctx, out.Apps)
	if err != nil {
		return err
	}
	after := rec.Spec.Rotate.RevokeAfter
	if len(after) == 0 || d.WaitUnits {
		for _, a := range out.Apps {
			d.Progress.Update(fmt.Sprintf("waiting for the old units of app %s to stop", a))
			if err := d.waitNoTerminating(ctx, a); err != nil {
				return fmt.Errorf("every app runs with the new credentials, but the old units of %s did not stop (%v); the old credentials stay valid: run the rotate again", a, err)
			}
		}
		grace = 0
	}
	if out.StillOld, err = d.settleOldRuns(ctx, rec, rot); err != nil {
		return err
	}
	if grace == 0 {
		d.Progress.Update(fmt.Sprintf("taking away the password of login %s", rot.From))
		if err := d.unitCommand(ctx, rec, rec.Spec.Rotate.Revoke, rot.From+"\n"); err != nil {
			return fmt.Errorf("every app runs with the new credentials, but revoking the old login %s failed: %w; run the rotate again", rot.From, err)
		}
		out.RevokedAt = time.Now().UTC().Truncate(time.Second)
		return nil
	}
	// a margin: the kubelet counts the grace from when it handles the
	// deletion, and gives an overrunning stop hook 2 s more
	grace += deadlineMargin
	d.Progress.Update(fmt.Sprintf("having the database refuse login %s in %s, once its last old unit has stopped", rot.From, grace))
	if err := d.unitCommand(ctx, rec, after, fmt.Sprintf("%s\n%d\n", rot.From, int(grace.Seconds()))); err != nil {
		return fmt.Errorf("every app runs with the new credentials, but setting when the old login %s is refused failed: %w; run the rotate again", rot.From, err)
	}
	out.RevokedAt = time.Now().Add(grace).UTC().Truncate(time.Second)
	return nil
}

// deadlineMargin is added to the old units' grace period when the
// database is told when to refuse the old login.
const deadlineMargin = 10 * time.Second

// stoppingGrace is the longest grace period of the apps' units being
// stopped (0 when none is): no such unit runs longer than that from now.
func (d Deps) stoppingGrace(ctx context.Context, apps []string) (time.Duration, error) {
	// one LIST of every app's units, not one per app
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: runSelector})
	if err != nil {
		return 0, kube.TranslateError(err)
	}
	var longest time.Duration
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil || !slices.Contains(apps, p.Labels[kube.LabelApp]) {
			continue
		}
		g := time.Second // the kubelet's floor for a grace of 0
		if s := p.DeletionGracePeriodSeconds; s != nil && *s > 1 {
			g = time.Duration(*s) * time.Second
		}
		longest = max(longest, g)
	}
	return longest, nil
}

// startRotation begins a rotation, or picks up the one a stopped rotate
// left in the record. The new login gets its password before the
// credentials name it; the old login keeps its password until revoked.
// A rotation picked up after the credentials name the new login gives it
// the password they hold again (grant is idempotent): whatever a stopped
// or overlapping rotate left in the database, the apps' password is the
// one that works.
func (d Deps) startRotation(ctx context.Context, rec *Record) (*Rotation, error) {
	creds, err := readCredentials(ctx, d.Client, d.Namespace, rec)
	if err != nil {
		return nil, err
	}
	rot := rec.Rotation
	if rot != nil {
		d.Progress.Update(fmt.Sprintf("a rotate from login %s to %s was stopped part way; finishing it", rot.From, rot.To))
	} else {
		rot = &Rotation{From: creds["username"], To: rec.Spec.Rotate.Usernames[0]}
		if rot.From == rot.To {
			rot.To = rec.Spec.Rotate.Usernames[1]
		}
		if _, err := editRecord(ctx, d.Client, d.Namespace, rec.Name, func(r *Record) error {
			if r.Rotation != nil { // begun by another tug in between: finish that one
				rot = r.Rotation
			}
			r.Rotation = rot
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if creds["username"] == rot.To {
		d.Progress.Update(fmt.Sprintf("giving login %s of service %s its password again", rot.To, rec.Name))
		return rot, d.unitCommand(ctx, rec, rec.Spec.Rotate.Grant, rot.To+"\n"+creds["password"]+"\n")
	}
	// the last rotate may have returned while units with this login were
	// still stopping (RevokeAfter): a new password now would refuse them
	if err := d.waitStoppingUsers(ctx, rec.Name); err != nil {
		return nil, err
	}
	password := randomSecret()
	d.Progress.Update(fmt.Sprintf("giving login %s of service %s a new password", rot.To, rec.Name))
	if err := d.unitCommand(ctx, rec, rec.Spec.Rotate.Grant, rot.To+"\n"+password+"\n"); err != nil {
		return nil, err
	}
	return rot, d.setCredentials(ctx, rec.Name, rot.To, password)
}

// waitStoppingUsers waits until no pod that reads the service's binding
// is being stopped.
func (d Deps) waitStoppingUsers(ctx context.Context, name string) error {
	secret := BindingSecretName(name)
	stopping := func(pods map[string]*corev1.Pod) []string {
		var names []string
		for _, p := range pods {
			if p.DeletionTimestamp != nil && podUsesSecret(&p.Spec, secret) {
				names = append(names, p.Name)
			}
		}
		sort.Strings(names)
		return names
	}
	wait, err := d.stoppingWait(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	said := false
	err = kube.Until(wctx, kube.Pods(d.Client, d.Namespace, metav1.ListOptions{LabelSelector: runSelector}), func(pods map[string]*corev1.Pod) (bool, error) {
		left := stopping(pods)
		if len(left) > 0 && !said {
			said = true
			d.Progress.Update(fmt.Sprintf("waiting for %s, stopping with the login the last rotate replaced, to stop", strings.Join(left, ", ")))
		}
		return len(left) == 0, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("units stopping with the login of the last rotate of service %q did not stop in %s (%v); the apps keep their credentials: run the rotate again", name, wait, err)
	}
	return err
}

// stoppingWait is how long to wait for units being stopped: their
// longest grace period from now and a margin, two minutes at least (a
// worker's grace may be long, up to an hour).
func (d Deps) stoppingWait(ctx context.Context) (time.Duration, error) {
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: runSelector})
	if err != nil {
		return 0, kube.TranslateError(err)
	}
	longest := 2 * time.Minute
	for _, p := range pods.Items {
		if s := p.DeletionGracePeriodSeconds; p.DeletionTimestamp != nil && s != nil {
			longest = max(longest, time.Duration(*s)*time.Second+deadlineMargin)
		}
	}
	return longest, nil
}

// waitNoTerminating waits until no unit of the app is stopping.
func (d Deps) waitNoTerminating(ctx context.Context, appName string) error {
	wait, err := d.stoppingWait(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return kube.Until(ctx, kube.Pods(d.Client, d.Namespace, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)}), func(pods map[string]*corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// unitCommand runs a plan's command with stdin, saying what it printed on
// failure.
func (d Deps) unitCommand(ctx context.Context, rec *Record, argv []string, stdin string) error {
	var errOut bytes.Buffer
	if err := d.runInUnit(ctx, rec, argv, strings.NewReader(stdin), nil, &errOut); err != nil {
		return fmt.Errorf("in the unit of service %q: %v: %s", rec.Name, err, text.Excerpt(errOut.String()))
	}
	return nil
}

// setCredentials writes the new login into the credentials Secret tug made.
func (d Deps) setCredentials(ctx context.Context, name, username, password string) error {
	secrets := d.Client.CoreV1().Secrets(d.Namespace)
	s, err := secrets.Get(ctx, CredentialsSecretName(name), metav1.GetOptions{})
	if err != nil {
		return kube.TranslateError(err)
	}
	if s.Labels[LabelService] != name {
		return fmt.Errorf("secret %q is not tug's service %q", s.Name, name)
	}
	s.Data["username"], s.Data["password"] = []byte(username), []byte(password)
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	return kube.TranslateError(err)
}

// appNames are the apps' names, comma-separated.
func appNames(apps []BoundApp) string {
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.App
	}
	return strings.Join(names, ", ")
}

// RunsStillOldError: runs started before the rotate still read the old
// login when WaitRuns ran out; it was not revoked, so they keep working.
type RunsStillOldError struct {
	Service, Login string
	Runs           []string
	Waited         time.Duration
}

func (e *RunsStillOldError) Error() string {
	return fmt.Sprintf("pods started before the rotate still use login %s of service %q after waiting %s (--wait-runs): %s; every app runs with the new login and the old one stays valid (not revoked): run 'tug service rotate %s' again once they end, stop them ('tug unit kill APP NAME'), or rotate without --wait-runs to revoke it now",
		e.Login, e.Service, e.Waited, strings.Join(e.Runs, ", "), e.Service)
}

// settleOldRuns finds the runs started before the new binding (oldRuns)
// and, when d.WaitRuns allows, waits for them to end: it returns those
// still running (to be named) when it does not wait, and a
// *RunsStillOldError when they outlast the wait.
func (d Deps) settleOldRuns(ctx context.Context, rec *Record, rot *Rotation) ([]string, error) {
	old, err := d.oldRuns(ctx, rec.Name)
	if err != nil || len(old) == 0 || d.WaitRuns <= 0 {
		return old, err
	}
	d.Progress.Update(fmt.Sprintf("waiting up to %s for %s, started before the rotate with login %s, to end", d.WaitRuns, strings.Join(old, ", "), rot.From))
	wctx, cancel := context.WithTimeout(ctx, d.WaitRuns)
	defer cancel()
	left := old
	err = kube.Until(wctx, kube.Pods(d.Client, d.Namespace, metav1.ListOptions{LabelSelector: runSelector}), func(pods map[string]*corev1.Pod) (bool, error) {
		var still []string
		for _, n := range old {
			// a pod being deleted may still be running its command
			if p, ok := pods[d.Namespace+"/"+n]; ok && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				still = append(still, n)
			}
		}
		left = still
		return len(still) == 0, nil
	})
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		return nil, &RunsStillOldError{Service: rec.Name, Login: rot.From, Runs: left, Waited: d.WaitRuns}
	}
	return nil, err
}

// runSelector selects the pods of every app of tug's.
const runSelector = kube.LabelManagedBy + "=" + kube.ManagedBy + "," + kube.LabelApp

// oldRuns are the running pods, not of a Deployment, that read the
// service's binding and started before tug last wrote it (the server's
// time of that write, as the pods' creation time is the server's).
func (d Deps) oldRuns(ctx context.Context, name string) ([]string, error) {
	s, err := d.Client.CoreV1().Secrets(d.Namespace).Get(ctx, BindingSecretName(name), metav1.GetOptions{})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var written time.Time
	for _, f := range s.ManagedFields {
		if f.Manager == kube.FieldManager && f.Time != nil && f.Time.After(written) {
			written = f.Time.Time
		}
	}
	if written.IsZero() {
		return nil, nil
	}
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: runSelector})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var out []string
	for _, p := range pods.Items {
		stopped := p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		ofDeployment := slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "ReplicaSet" })
		if !stopped && !ofDeployment && p.CreationTimestamp.Time.Before(written) && podUsesSecret(&p.Spec, BindingSecretName(name)) {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
