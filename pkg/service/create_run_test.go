package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/rollout"
)

// newService is a namespace where service db is about to be made: the
// Service its plan makes (with its cluster IP) and the given units.
func newService(t *testing.T, dyn *dynamicfake.FakeDynamicClient, objs ...runtime.Object) (*fake.Clientset, Deps) {
	t.Helper()
	objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ObjectName("db"), Namespace: testNS}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.5"}})
	c := fake.NewClientset(objs...)
	return c, Deps{Client: c, Dynamic: dyn, Namespace: testNS, Progress: progress.Nop{}, Holder: lock.Holder{User: "alice"}}
}

func unit(status corev1.PodStatus, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-0", Namespace: testNS, Labels: Labels("db")},
		Spec: corev1.PodSpec{Volumes: volumes}, Status: status}
}

func readyUnitPod() *corev1.Pod {
	return unit(corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}})
}

var statefulSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

func TestCreateAppliesThePlanAndWritesTheBinding(t *testing.T) {
	dyn := kubetest.ApplyingDynamic()
	c, d := newService(t, dyn, readyUnitPod())
	ctx := context.Background()
	info, err := Create(ctx, d, CreateOptions{Name: "db", Plan: "postgres", Size: "2Gi"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != "ready" || info.Host != "10.0.0.5" || info.Port != 5432 || info.Size != "2Gi" || info.Plan != "postgres" || info.Version == "" {
		t.Errorf("info %+v", info)
	}
	sts, err := dyn.Resource(statefulSets).Namespace(testNS).Get(ctx, ObjectName("db"), metav1.GetOptions{})
	if err != nil || sts.GetLabels()[LabelService] != "db" {
		t.Fatalf("the StatefulSet applied: %v %v", sts, err)
	}
	b, err := c.CoreV1().Secrets(testNS).Get(ctx, BindingSecretName("db"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Type != "servicebinding.io/postgresql" || !strings.Contains(string(b.Data["uri"]), "@10.0.0.5:5432/") || b.Labels[LabelService] != "db" {
		t.Errorf("binding %s %v", b.Type, b.Labels)
	}
	creds, err := readCredentials(ctx, c, testNS, &Record{Name: "db"})
	if err != nil || creds["password"] == "" {
		t.Fatalf("credentials %v %v", creds, err)
	}

	// run again (a create that was stopped): the same login, not a new one
	if _, err := Create(ctx, d, CreateOptions{Name: "db", Plan: "postgres"}); err != nil {
		t.Fatalf("create again: %v", err)
	}
	again, _ := readCredentials(ctx, c, testNS, &Record{Name: "db"})
	if again["password"] != creds["password"] {
		t.Error("a create run again made new credentials")
	}
}

func TestCreateRefusesBadInputBeforeTheCluster(t *testing.T) {
	for name, o := range map[string]CreateOptions{
		"bad name":      {Name: "DB!", Plan: "postgres"},
		"no plan":       {Name: "db"},
		"bad plan name": {Name: "db", Plan: "Post gres"},
		"bad size":      {Name: "db", Plan: "postgres", Size: "lots"},
		"negative size": {Name: "db", Plan: "postgres", Size: "-1Gi"},
		"unknown plan":  {Name: "db", Plan: "oracle"},
		"bad version":   {Name: "db", Plan: "postgres", Version: "1"},
	} {
		t.Run(name, func(t *testing.T) {
			c, d := newService(t, kubetest.ApplyingDynamic())
			_, err := Create(context.Background(), d, o)
			if !inputerr.Is(err) {
				t.Fatalf("create %+v: %v, want an input error", o, err)
			}
			if cms, _ := c.CoreV1().ConfigMaps(testNS).List(context.Background(), metav1.ListOptions{}); len(cms.Items) != 0 {
				t.Errorf("a refused create wrote %d ConfigMaps", len(cms.Items))
			}
		})
	}
}

// An object of the plan's name that is not the service's is never taken
// over: the create fails naming it, and no binding is written.
func TestCreateRefusesAnObjectNotItsOwn(t *testing.T) {
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": ObjectName("db"), "namespace": testNS, "labels": map[string]any{"team": "theirs"}}}}
	dyn := kubetest.ApplyingDynamic(theirs)
	c, d := newService(t, dyn, readyUnitPod())
	_, err := Create(context.Background(), d, CreateOptions{Name: "db", Plan: "postgres"})
	if err == nil || !strings.Contains(err.Error(), "is not tug's service") {
		t.Fatalf("create over another's StatefulSet: %v", err)
	}
	if _, err := c.CoreV1().Secrets(testNS).Get(context.Background(), BindingSecretName("db"), metav1.GetOptions{}); err == nil {
		t.Error("a binding was written")
	}
	cur, _ := dyn.Resource(statefulSets).Namespace(testNS).Get(context.Background(), ObjectName("db"), metav1.GetOptions{})
	if cur.GetLabels()["team"] != "theirs" {
		t.Errorf("their StatefulSet was changed: %v", cur.GetLabels())
	}
}

// A unit that fails in a way waiting will not fix ends the create with
// why (as a deploy says it) and what was made kept for a re-run.
func TestCreateSaysWhyTheUnitFailed(t *testing.T) {
	long := metav1.NewTime(time.Now().Add(-time.Hour))
	claim := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "tug-service-db-data"}}}
	pending := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-data", Namespace: testNS}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev", Namespace: testNS},
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "tug-service-db-data"}, Message: "no persistent volumes available for this claim"}
	tests := []struct {
		name      string
		objs      []runtime.Object
		class     rollout.Class
		message   string
		wantLogs  bool
		wantStart bool
	}{
		{name: "crash", class: rollout.ClassCrash, message: "crashed with exit code 1", wantLogs: true,
			objs: []runtime.Object{unit(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres", RestartCount: 3,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}})}},
		{name: "image", class: rollout.ClassImagePull, message: "cannot be pulled",
			objs: []runtime.Object{unit(corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres", Image: "reg/pg:nope",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}}}})}},
		{name: "unbound volume", class: rollout.ClassUnschedulable, message: "claim tug-service-db-data) cannot be bound: no persistent volumes available",
			objs: []runtime.Object{pending, event, unit(corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: long,
				Message: "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims"}}}, claim)}},
		{name: "no unit in time", class: rollout.ClassTimeout, message: "did not accept connections within 200ms: no unit was made"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, d := newService(t, kubetest.ApplyingDynamic(), tt.objs...)
			_, err := Create(context.Background(), d, CreateOptions{Name: "db", Plan: "postgres", Timeout: 200 * time.Millisecond})
			var ce *CreateError
			if !errors.As(err, &ce) {
				t.Fatalf("create: %v, want a CreateError", err)
			}
			if ce.Class != tt.class || !strings.Contains(ce.Message, tt.message) {
				t.Errorf("class %s message %q, want %s and %q", ce.Class, ce.Message, tt.class, tt.message)
			}
			if tt.wantLogs != (len(ce.Logs) > 0) {
				t.Errorf("logs %q", ce.Logs)
			}
			if !strings.Contains(err.Error(), "tug service remove db") {
				t.Errorf("the error says nothing of what to do: %v", err)
			}
			if _, err := readRecord(context.Background(), c, testNS, "db"); err != nil {
				t.Errorf("the record is not kept for a re-run: %v", err)
			}
			var f *rollout.Failure
			if !errors.As(err, &f) {
				t.Error("the Failure (its exit code) is not reachable from the error")
			}
		})
	}
}

// A unit set aside for a claim that is bound by now (the cause was fixed
// before the re-run) is waited for, not failed.
func TestCreateWaitsForAUnitWhoseClaimIsBoundNow(t *testing.T) {
	claim := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "tug-service-db-data"}}}
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-data", Namespace: testNS}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	p := unit(corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)),
		Message: "pod has unbound immediate PersistentVolumeClaims"}}}, claim)
	_, d := newService(t, kubetest.ApplyingDynamic(), bound, p)
	_, err := Create(context.Background(), d, CreateOptions{Name: "db", Plan: "postgres", Timeout: 200 * time.Millisecond})
	var ce *CreateError
	if !errors.As(err, &ce) || ce.Class != rollout.ClassTimeout || !strings.Contains(ce.Message, "unit tug-service-db-0: Pending") {
		t.Fatalf("create: %v, want a timeout naming the pending unit", err)
	}
}
