package service

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/session"
)

const testNS = "ns"

// execRecorder is a unit's exec: it keeps each command's stdin and runs
// nothing.
type execRecorder struct {
	mu    sync.Mutex
	calls []string // stdin of each command
}

func (e *execRecorder) Exec(_ context.Context, _ session.Target, _ []string, s session.Streams) error {
	b, _ := io.ReadAll(s.Stdin)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, string(b))
	return nil
}

func (e *execRecorder) Attach(context.Context, session.Target, session.Streams) error { return nil }

// postgresService is a running postgres service db in the fake cluster:
// its record (rotation rot), credentials, Service and one ready unit.
func postgresService(t *testing.T, username, password string, rot *Rotation) (*fake.Clientset, Deps, *execRecorder) {
	t.Helper()
	c := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CredentialsSecretName("db"), Namespace: testNS, Labels: Labels("db")},
			Data: map[string][]byte{"username": []byte(username), "password": []byte(password), "database": []byte("app")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ObjectName("db"), Namespace: testNS}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.5"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-0", Namespace: testNS, Labels: Labels("db")},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}},
	)
	rec := &Record{Name: "db", Plan: "postgres", Spec: Builtin()[0], Rotation: rot}
	if err := writeRecord(context.Background(), c, testNS, rec); err != nil {
		t.Fatal(err)
	}
	ex := &execRecorder{}
	return c, Deps{Client: c, Namespace: testNS, Progress: progress.Nop{}, Exec: ex, Holder: lock.Holder{User: "alice"}}, ex
}

func noRestart(context.Context, string) error { return nil }

func TestRotateRefusedWhileAnotherHoldsTheServiceLock(t *testing.T) {
	c, d, ex := postgresService(t, "app", "p1", nil)
	other, err := lock.Acquire(context.Background(), lock.Request{Client: c, Namespace: testNS, App: LockKey("db"), Holder: lock.Holder{User: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Unlock()
	_, err = Rotate(context.Background(), d, "db", noRestart)
	var held *lock.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("rotate while bob rotates: %v, want the lock's HeldError", err)
	}
	if len(ex.calls) != 0 {
		t.Errorf("the unit ran %d commands; want none", len(ex.calls))
	}
	creds, _ := readCredentials(context.Background(), c, testNS, &Record{Name: "db"})
	if creds["username"] != "app" || creds["password"] != "p1" {
		t.Errorf("credentials changed: %v", creds)
	}
}

func TestRotateTakesAndReleasesTheServiceLock(t *testing.T) {
	c, d, ex := postgresService(t, "app", "p1", nil)
	res, err := Rotate(context.Background(), d, "db", noRestart)
	if err != nil {
		t.Fatal(err)
	}
	if res.Username != "app_b" || res.Revoked != "app" || len(ex.calls) != 2 {
		t.Errorf("rotate: %+v, %d commands", res, len(ex.calls))
	}
	if _, err := c.CoordinationV1().Leases(testNS).Get(context.Background(), lock.Name(LockKey("db")), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the service's lease after rotate: %v, want it released", err)
	}
	rec, _ := readRecord(context.Background(), c, testNS, "db")
	if rec.Rotation != nil {
		t.Errorf("rotation left in the record: %+v", rec.Rotation)
	}
}

// A rotation picked up after the credentials name the new login gives
// that login the credentials' password again: another rotate (or a kill
// between grant and the Secret's write) may have left the database with
// another.
func TestRotateResumedGrantsTheNewLoginTheCredentialsPassword(t *testing.T) {
	_, d, ex := postgresService(t, "app_b", "in-the-secret", &Rotation{From: "app", To: "app_b"})
	if _, err := Rotate(context.Background(), d, "db", noRestart); err != nil {
		t.Fatal(err)
	}
	if len(ex.calls) != 2 || ex.calls[0] != "app_b\nin-the-secret\n" || ex.calls[1] != "app\n" {
		t.Errorf("commands' stdin: %q; want the grant of app_b with the Secret's password, then app revoked", ex.calls)
	}
}

func TestUpdateRecordRefusesARecordChangedSinceRead(t *testing.T) {
	ctx := context.Background()
	c, _, _ := postgresService(t, "app", "p1", nil)
	cms := c.CoreV1().ConfigMaps(testNS)
	setVersion := func(v string) {
		cm, err := cms.Get(ctx, ObjectName("db"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.ResourceVersion = v
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setVersion("1")
	mine, err := readRecord(ctx, c, testNS, "db")
	if err != nil {
		t.Fatal(err)
	}
	setVersion("2") // another tug wrote the record in between
	mine.Rotation = &Rotation{From: "app", To: "app_b"}
	if err := updateRecord(ctx, c, testNS, mine); !apierrors.IsConflict(err) {
		t.Fatalf("update over a changed record: %v, want a conflict", err)
	}
	if r, _ := readRecord(ctx, c, testNS, "db"); r.Rotation != nil {
		t.Errorf("the changed record was overwritten: %+v", r.Rotation)
	}
	r, err := editRecord(ctx, c, testNS, "db", func(r *Record) error { r.Size = "2Gi"; return nil })
	if err != nil || r.Size != "2Gi" {
		t.Fatalf("edit from a fresh read: %v %+v", err, r)
	}
}

// failingReader gives some bytes, then fails.
type failingReader struct{ sent bool }

func (f *failingReader) Read(p []byte) (int, error) {
	if !f.sent {
		f.sent = true
		return copy(p, "PGDMP"), nil
	}
	return 0, errors.New("disk read error")
}

// The exec's stdin copy ends the stream as if the dump were whole; the
// read's error must still fail the restore.
func TestRestoreFailsWhenTheDumpCannotBeReadToTheEnd(t *testing.T) {
	_, d, _ := postgresService(t, "app", "p1", nil)
	err := Restore(context.Background(), d, "db", &failingReader{})
	if err == nil || !strings.Contains(err.Error(), "disk read error") {
		t.Fatalf("restore of a dump whose read failed: %v, want that error", err)
	}
}

// A CronJob's run started before the rotate wrote the binding still has
// the old login: rotate names it (no rollout replaces it).
func TestRotateNamesRunsStartedBeforeTheNewBinding(t *testing.T) {
	ctx := context.Background()
	c, d, _ := postgresService(t, "app", "p1", nil)
	now := metav1.Now()
	binding := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: BindingSecretName("db"), Namespace: testNS, Labels: Labels("db"),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: kube.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &now}}}}
	run := func(name string, created metav1.Time, owner string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: kube.AppLabels("shop"), CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{{Kind: owner, Name: "x"}}},
			Spec:   corev1.PodSpec{Volumes: []corev1.Volume{{Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: BindingSecretName("db")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	for _, o := range []*corev1.Pod{
		run("shop-report-1-abc", metav1.NewTime(now.Add(-time.Hour)), "Job"),
		run("shop-web-1-xyz", metav1.NewTime(now.Add(-time.Hour)), "ReplicaSet"), // replaced by the rollout
		run("shop-report-2-def", metav1.NewTime(now.Add(time.Hour)), "Job"),      // started with the new binding
	} {
		if _, err := c.CoreV1().Pods(testNS).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CoreV1().Secrets(testNS).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := Rotate(ctx, d, "db", noRestart)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.StillOld) != 1 || res.StillOld[0] != "shop-report-1-abc" {
		t.Errorf("stillOld = %v, want the run from before", res.StillOld)
	}
}

// A service's lock is never an app's: service "db" once shared
// tug-lock-service-db with app "service-db", so binding that app to that
// service waited on itself.
func TestServiceLockIsNoAppsLock(t *testing.T) {
	if lock.Name(LockKey("db")) == lock.Name("service-db") {
		t.Fatalf("service db and app service-db share the lease %s", lock.Name(LockKey("db")))
	}
	held := &lock.HeldError{App: LockKey("db"), Holder: "bob"}
	if msg := held.Error(); !strings.HasPrefix(msg, `service "db" is being changed by bob`) {
		t.Errorf("a held service lock reads %q", msg)
	}
}

// oldRunService is postgresService with a binding written now and a
// CronJob's run started an hour before it, still running.
func oldRunService(t *testing.T) (*fake.Clientset, Deps, *execRecorder) {
	t.Helper()
	ctx := context.Background()
	c, d, ex := postgresService(t, "app", "p1", nil)
	now := metav1.Now()
	binding := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: BindingSecretName("db"), Namespace: testNS, Labels: Labels("db"),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: kube.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &now}}}}
	run := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-report-1-abc", Namespace: testNS, Labels: kube.AppLabels("shop"),
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "x"}}},
		Spec:   corev1.PodSpec{Volumes: []corev1.Volume{{Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: BindingSecretName("db")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if _, err := c.CoreV1().Pods(testNS).Create(ctx, run, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets(testNS).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c, d, ex
}

// With --wait-runs, a run from before that outlasts the wait stops the
// rotate before the revoke: the old login stays valid, the rotation stays
// in the record for the next rotate to finish.
func TestRotateWaitRunsKeepsTheOldLoginWhenARunOutlastsIt(t *testing.T) {
	c, d, ex := oldRunService(t)
	d.WaitRuns = 200 * time.Millisecond
	_, err := Rotate(context.Background(), d, "db", noRestart)
	var still *RunsStillOldError
	if !errors.As(err, &still) || len(still.Runs) != 1 || still.Runs[0] != "shop-report-1-abc" || still.Login != "app" {
		t.Fatalf("rotate with a run that outlasts --wait-runs: %v, want a RunsStillOldError naming it and login app", err)
	}
	if len(ex.calls) != 1 {
		t.Errorf("the unit ran %d commands; want only the grant (no revoke)", len(ex.calls))
	}
	if rec, err := readRecord(context.Background(), c, testNS, "db"); err != nil || rec.Rotation == nil {
		t.Errorf("the rotation left the record (%v): the next rotate could not finish it", err)
	}
}

// waitSeen is a progress reporter that closes seen when a step starts
// with prefix.
type waitSeen struct {
	progress.Nop
	prefix string
	once   sync.Once
	seen   chan struct{}
}

func (w *waitSeen) Update(msg string) {
	if strings.HasPrefix(msg, w.prefix) {
		w.once.Do(func() { close(w.seen) })
	}
}

// With --wait-runs, a run from before that ends during the wait lets the
// rotate revoke the old login, with no run left to name.
func TestRotateWaitRunsRevokesOnceTheRunsFromBeforeEnd(t *testing.T) {
	c, d, ex := oldRunService(t)
	d.WaitRuns = time.Minute
	w := &waitSeen{prefix: "waiting up to", seen: make(chan struct{})}
	d.Progress = w
	go func() {
		<-w.seen
		p, err := c.CoreV1().Pods(testNS).Get(context.Background(), "shop-report-1-abc", metav1.GetOptions{})
		if err == nil {
			p.Status.Phase = corev1.PodSucceeded
			_, _ = c.CoreV1().Pods(testNS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		}
	}()
	res, err := Rotate(context.Background(), d, "db", noRestart)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.StillOld) != 0 || res.Revoked != "app" || len(ex.calls) != 2 {
		t.Errorf("after the run ended: stillOld %v, revoked %q, %d unit commands; want none, app, grant and revoke", res.StillOld, res.Revoked, len(ex.calls))
	}
}
