package events

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

func TestOwns(t *testing.T) {
	o := Options{App: "shop", Processes: []string{"web", "worker"}}
	for name, want := range map[string]bool{
		"shop": true, "shop-web": true, "shop-web-7d9f": true, "shop-web-7d9f-x1": true,
		"shop-worker": true, "shop-run-abcde": true,
		"shop-api": false, "shop-api-web-1": false, "shopping": false, "blog-web": false, "shop-webby": false,
	} {
		if got := o.Owns(name); got != want {
			t.Errorf("Owns(%q) = %v, want %v", name, got, want)
		}
	}
}

// An app named like one of shop's processes ("shop-web") is another app:
// its Service, Deployments and units are not shop's.
func TestOwnsLeavesOutAnAppNamedLikeAProcess(t *testing.T) {
	o := Options{App: "shop", Processes: []string{"web"}}
	o.Others = OthersLike("shop", []*app.App{{Name: "shop"}, {Name: "shop-web", Processes: map[string]app.Process{"web": {}}}, {Name: "blog"}, {Name: "shopping"}})
	if len(o.Others) != 1 || o.Others["shop-web"][0] != "web" {
		t.Fatalf("others %v", o.Others)
	}
	for name, want := range map[string]bool{
		"shop": true, "shop-web-7d9f-x1": true, "shop-web-7d9f": true, // shop's web units and ReplicaSet
		"shop-web-web": false, "shop-web-web-7d9f-a": false, "shop-web-run-x": false, // shop-web's
		"shop-run-abcde": true,
	} {
		if got := o.Owns(name); got != want {
			t.Errorf("Owns(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestListMergesOldestFirstAndSanitizes(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := func(name, obj, reason, msg string, at time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev"}, Type: "Normal",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: obj}, Reason: reason, Message: msg,
			LastTimestamp: metav1.NewTime(at), Count: 3}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-web-1-a", Namespace: "dev", Labels: kube.AppLabels("shop")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "web", RestartCount: 2,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.NewTime(t0.Add(3 * time.Minute))}},
		}}},
	}
	crashed := pod.DeepCopy()
	crashed.Name = "shop-worker-1-b"
	crashed.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
		ExitCode: 3, Reason: "Error", FinishedAt: metav1.NewTime(t0.Add(time.Minute))}
	cs := fake.NewClientset(
		ev("e1", "shop-web-1-a", "Started", "Started container \x1b[31mweb\x1b[0m", t0.Add(2*time.Minute)),
		ev("e2", "shop-api-web-1-z", "Started", "another app's", t0),
		ev("e3", "shop-web", "ScalingReplicaSet", "Scaled up replica set shop-web-1 to 2", t0.Add(-time.Minute)),
		pod, crashed,
	)
	rel := []*app.Release{{App: "shop", Version: 2, Kind: "deploy", Author: "ann", Status: "deployed", CreatedAt: t0.Add(-2 * time.Minute)}}
	evs, err := List(context.Background(), cs, "dev", Options{App: "shop", Processes: []string{"web", "worker"}}, rel)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Source+" "+e.Object+" "+e.Reason+": "+e.Message)
	}
	want := []string{
		"tug Release/v2 Release: v2 deploy by ann: deployed",
		"kubernetes Deployment/shop-web ScalingReplicaSet: Scaled up replica set shop-web-1 to 2",
		"tug Pod/shop-worker-1-b Crashed: unit shop-worker-1-b exited with code 3; restarted 2 times",
		"kubernetes Pod/shop-web-1-a Started: Started container ^[[31mweb^[[0m", // the escape shown, not run
		"tug Pod/shop-web-1-a OOMKilled: unit shop-web-1-a passed its memory limit (32Mi) and was killed (exit code 137); restarted 2 times",
	}
	// e3's involved object is a Pod kind in the fixture: fix the want
	want[1] = strings.Replace(want[1], "Deployment/", "Pod/", 1)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if evs[3].Count != 3 {
		t.Errorf("count: %+v", evs[3])
	}
	if got := Since(evs, 2*time.Minute, t0.Add(4*time.Minute)); len(got) != 2 || got[0].Reason != "Started" {
		t.Errorf("since 2m before 10:04: %+v", got)
	}
}

func TestFromPodEviction(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-web-1-a"}, Status: corev1.PodStatus{
		Reason: "Evicted", Message: "The node was low on resource: memory.",
		Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, LastTransitionTime: metav1.NewTime(at)}},
	}}
	evs := FromPod(p)
	if len(evs) != 1 || evs[0].Reason != "Evicted" || !evs[0].Time.Equal(at) || !strings.Contains(evs[0].Message, "low on resource") {
		t.Errorf("eviction: %+v", evs)
	}
}
