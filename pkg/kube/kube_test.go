package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestLabelsAndSelectors(t *testing.T) {
	l := AppLabels("shop")
	if len(l) != 3 || l[LabelManagedBy] != "tug" || l[LabelName] != "shop" || l[LabelApp] != "shop" {
		t.Errorf("AppLabels = %v", l)
	}
	l[LabelProcess] = "web"
	if AppLabels("shop")[LabelProcess] != "" {
		t.Error("AppLabels returns a shared map")
	}
	for _, tt := range []struct{ got, want string }{
		{AppSelector("shop"), "app.kubernetes.io/managed-by=tug,tug.dev/app=shop"},
		{ProcessSelector("shop", "web"), "app.kubernetes.io/managed-by=tug,tug.dev/app=shop,tug.dev/process=web"},
		{KindSelector("release", "shop"), "app.kubernetes.io/managed-by=tug,tug.dev/kind=release,tug.dev/app=shop"},
		{KindSelector("app", ""), "app.kubernetes.io/managed-by=tug,tug.dev/kind=app"},
	} {
		if tt.got != tt.want {
			t.Errorf("selector %q, want %q", tt.got, tt.want)
		}
	}
}

func TestValidateLabelValue(t *testing.T) {
	for _, v := range []string{"gpu", "web-1", "a.b_c", "A1", strings.Repeat("x", 63)} {
		if err := ValidateLabelValue("pool", v); err != nil {
			t.Errorf("ValidateLabelValue(%q) = %v", v, err)
		}
	}
	for _, v := range []string{"", "a b", "-web", "web-", "a/b", strings.Repeat("x", 64), "é"} {
		want := fmt.Sprintf("invalid pool %q: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", v)
		if err := ValidateLabelValue("pool", v); err == nil || err.Error() != want {
			t.Errorf("ValidateLabelValue(%q) = %v, want %q", v, err, want)
		}
	}
	if err := ValidateLabelValue("tag", "x y"); err == nil || !strings.HasPrefix(err.Error(), `invalid tag "x y"`) {
		t.Errorf("the error names what was checked: %v", err)
	}
}

func TestValidateLabelKey(t *testing.T) {
	for _, k := range []string{"disk", "example.com/disk", "a_b.c-d"} {
		if err := ValidateLabelKey(k); err != nil {
			t.Errorf("ValidateLabelKey(%q) = %v", k, err)
		}
	}
	for _, k := range []string{"", "-disk", "a/b/c", "Example_.com/x", strings.Repeat("k", 64)} {
		err := ValidateLabelKey(k)
		if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("invalid label key %q: ", k)) {
			t.Errorf("ValidateLabelKey(%q) = %v", k, err)
		}
	}
}

func TestPodReady(t *testing.T) {
	for _, tt := range []struct {
		name  string
		conds []corev1.PodCondition
		want  bool
	}{
		{"no conditions", nil, false},
		{"ready", []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}, true},
		{"not ready", []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}, false},
		{"unknown", []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionUnknown}}, false},
		{"only other conditions true", []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}, false},
	} {
		if got := PodReady(&corev1.Pod{Status: corev1.PodStatus{Conditions: tt.conds}}); got != tt.want {
			t.Errorf("%s: PodReady = %v", tt.name, got)
		}
	}
}

func TestProcessContainer(t *testing.T) {
	pod := func(proc string, names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelProcess: proc}}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	for _, tt := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{pod("web", "proxy", "web"), "web"},
		{pod("worker", "main", "sidecar"), "main"},
		{pod("", "main"), "main"},
		{pod("web"), ""},
	} {
		if got := ProcessContainer(tt.pod); got != tt.want {
			t.Errorf("ProcessContainer(%v) = %q, want %q", tt.pod.Spec.Containers, got, tt.want)
		}
	}
}

func TestWhoAmI(t *testing.T) {
	ctx := context.Background()
	answer := func(user string, err error) *fake.Clientset {
		c := fake.NewClientset()
		c.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
			if err != nil {
				return true, nil, err
			}
			return true, &authv1.SelfSubjectReview{Status: authv1.SelfSubjectReviewStatus{UserInfo: authv1.UserInfo{Username: user}}}, nil
		})
		return c
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, "")
	for _, tt := range []struct {
		name, user string
		err        error
		fallback   string
		want       string
	}{
		{"the server says", "alice@example.com", nil, "kube-user", "alice@example.com"},
		{"the server cannot say", "", notFound, "kube-user", "kube-user (unverified)"},
		{"the server answers with no name", "", nil, "kube-user", "kube-user (unverified)"},
		{"nobody knows", "", notFound, "", "unknown"},
	} {
		if got := WhoAmI(ctx, answer(tt.user, tt.err), tt.fallback); got != tt.want {
			t.Errorf("%s: WhoAmI = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func pod(name string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func allReady(n int) func(map[string]*corev1.Pod) bool {
	return func(pods map[string]*corev1.Pod) bool {
		if len(pods) != n {
			return false
		}
		for _, p := range pods {
			if !PodReady(p) {
				return false
			}
		}
		return true
	}
}

func TestWaitPodsDoneAtOnce(t *testing.T) {
	c := fake.NewClientset(pod("a", true), pod("b", true))
	watched := false
	c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		watched = true
		return false, nil, nil
	})
	if err := WaitPods(context.Background(), c, "dev", metav1.ListOptions{}, allReady(2)); err != nil {
		t.Fatal(err)
	}
	if watched {
		t.Error("WaitPods watched though the first list was done")
	}
}

// TestWaitPodsFollowsTheWatch feeds events through watchers the test
// controls: a closed watch and an error event each make WaitPods list and
// watch again; deletions and changes update the set it judges.
func TestWaitPodsFollowsTheWatch(t *testing.T) {
	c := fake.NewClientset(pod("a", false), pod("gone", true))
	watchers := make(chan *watch.FakeWatcher)
	c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		watchers <- w
		return true, w, nil
	})
	var lists int
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		return false, nil, nil
	})
	errc := make(chan error, 1)
	go func() { errc <- WaitPods(context.Background(), c, "dev", metav1.ListOptions{}, allReady(1)) }()

	w := <-watchers
	w.Stop() // the server closes the watch: watch again from where it was
	w = <-watchers
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired}) // too old: list again
	w = <-watchers
	w.Add(&corev1.Namespace{}) // not a pod: ignored
	w.Modify(pod("a", true))   // a and gone ready: 2 pods, not done
	w.Action(watch.Bookmark, pod("a", false))
	w.Delete(pod("gone", true)) // one ready pod: done
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if lists != 2 {
		t.Errorf("lists = %d, want 2 (the first, and one after the 410; a closed watch resumes without one)", lists)
	}
}

func TestWaitPodsErrors(t *testing.T) {
	t.Run("list fails", func(t *testing.T) {
		c := fake.NewClientset()
		c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
		})
		if err := WaitPods(context.Background(), c, "dev", metav1.ListOptions{}, allReady(1)); !apierrors.IsForbidden(err) {
			t.Errorf("WaitPods = %v, want the list error", err)
		}
	})
	t.Run("watch fails", func(t *testing.T) {
		c := fake.NewClientset()
		c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			return true, nil, errors.New("watch refused")
		})
		if err := WaitPods(context.Background(), c, "dev", metav1.ListOptions{}, allReady(1)); err == nil || err.Error() != "watch refused" {
			t.Errorf("WaitPods = %v, want the watch error", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		c := fake.NewClientset()
		ctx, cancel := context.WithCancel(context.Background())
		c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			cancel() // the deadline passes while watching
			return true, watch.NewFake(), nil
		})
		if err := WaitPods(ctx, c, "dev", metav1.ListOptions{}, allReady(1)); !errors.Is(err, context.Canceled) {
			t.Errorf("WaitPods = %v, want context.Canceled", err)
		}
	})
	t.Run("deadline while the server is busy", func(t *testing.T) {
		c := fake.NewClientset()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			cancel()
			return true, nil, apierrors.NewTooManyRequests("busy", 1)
		})
		if err := WaitPods(ctx, c, "dev", metav1.ListOptions{}, allReady(1)); !errors.Is(err, context.Canceled) {
			t.Errorf("WaitPods = %v, want context.Canceled", err)
		}
	})
}
