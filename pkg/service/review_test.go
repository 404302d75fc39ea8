package service

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
)

func TestReviewServiceName(t *testing.T) {
	if n := ReviewServiceName("shop-pr-42", "db"); n != "shop-pr-42-db" {
		t.Errorf("short: %q", n)
	}
	long := ReviewServiceName("a-very-long-app-name-pr-1234", "orders-db")
	other := ReviewServiceName("a-very-long-app-name-pr-1235", "orders-db")
	if len(long) > MaxNameLen || long == other || ValidateName(long) != nil || ValidateName(other) != nil {
		t.Errorf("long names: %q and %q: want distinct valid names of at most %d characters", long, other, MaxNameLen)
	}
	if !strings.HasPrefix(long, "a-very-long-app-name") {
		t.Errorf("a long name keeps its start: %q", long)
	}
	// cut just after a '-': no "--" left before the hash
	if n := ReviewServiceName("abcdefghijklmnopqrst-pr-1", "db"); strings.Contains(n, "--") || ValidateName(n) != nil {
		t.Errorf("cut at a dash: %q", n)
	}
}

// A review's services are told apart from the app's and from another
// review's by their record, and carry the review's labels on every object.
func TestReviewServicesOwnership(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	mine := &ReviewOwner{Of: "shop", Name: "pr-1", App: "shop-pr-1", Base: "db"}
	for _, r := range []*Record{
		{Name: "db", Plan: "postgres"},
		{Name: "shop-pr-1-db", Plan: "postgres", Review: mine},
		{Name: "shop-pr-2-db", Plan: "postgres", Review: &ReviewOwner{Of: "shop", Name: "pr-2", App: "shop-pr-2", Base: "db"}},
		{Name: "cart-pr-1-db", Plan: "postgres", Review: &ReviewOwner{Of: "cart", Name: "pr-1", App: "cart-pr-1", Base: "db"}},
	} {
		if err := writeRecord(ctx, c, testNS, r); err != nil {
			t.Fatal(err)
		}
	}
	names := func(of, name string) string {
		recs, err := ReviewServices(ctx, c, testNS, of, name)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names("shop", "pr-1"); got != "shop-pr-1-db" {
		t.Errorf("review pr-1 of shop: %q", got)
	}
	if got := names("shop", ""); got != "shop-pr-1-db,shop-pr-2-db" {
		t.Errorf("reviews of shop: %q", got)
	}
	if got := names("", ""); got != "cart-pr-1-db,shop-pr-1-db,shop-pr-2-db" {
		t.Errorf("every review's: %q", got)
	}
	cm, err := c.CoreV1().ConfigMaps(testNS).Get(ctx, ObjectName("shop-pr-1-db"), metav1.GetOptions{})
	if err != nil || cm.Labels[app.LabelReviewOf] != "shop" || cm.Labels[app.LabelReview] != "pr-1" || cm.Labels[LabelService] != "shop-pr-1-db" {
		t.Errorf("the record's labels: %v %v", err, cm)
	}
	objs, err := Builtin()[0].Render((&Record{Name: "shop-pr-1-db", Size: "1Gi", Review: mine}).params(testNS))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetLabels()[app.LabelReview] != "pr-1" || o.GetLabels()[LabelService] != "shop-pr-1-db" {
			t.Errorf("%s %s is not labelled as the review's: %v", o.GetKind(), o.GetName(), o.GetLabels())
		}
	}
	// the app's own service is never removed as a review's, nor another review's
	d := Deps{Client: c, Namespace: testNS, Progress: progress.Nop{}, Holder: lock.Holder{User: "alice"}}
	if _, err := RemoveReview(ctx, d, "db", *mine); err == nil {
		t.Error("the app's service was removed as review pr-1's")
	}
	if _, err := RemoveReview(ctx, d, "shop-pr-2-db", *mine); err == nil {
		t.Error("review pr-2's service was removed as review pr-1's")
	}
	// the review app made again (a review up of the same name while a
	// sweep removes what the last one left): its service stays
	if err := (&app.Store{Client: c, Namespace: testNS}).CreateApp(ctx, &app.App{Name: mine.App}); err != nil {
		t.Fatal(err)
	}
	if done, err := RemoveReview(ctx, d, "shop-pr-1-db", *mine); done || err != nil {
		t.Errorf("the service of a review app that has a record again: removed %v, %v; want it left, no error", done, err)
	}
	for _, n := range []string{"db", "shop-pr-2-db", "shop-pr-1-db"} {
		if _, err := readRecord(ctx, c, testNS, n); err != nil {
			t.Errorf("service %s: %v", n, err)
		}
	}
}

// A create that finds a service of the same name that is not the review's
// (the app's own, or another review's) refuses, changing nothing.
func TestCreateForReviewNeverTakesOver(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	if err := writeRecord(ctx, c, testNS, &Record{Name: "shop-pr-1-db", Plan: "postgres"}); err != nil {
		t.Fatal(err)
	}
	o := CreateOptions{Name: "shop-pr-1-db", Plan: "postgres", Review: &ReviewOwner{Of: "shop", Name: "pr-1", App: "shop-pr-1", Base: "db"}}
	_, err := Create(ctx, Deps{Client: c, Namespace: testNS, Progress: progress.Nop{}, Holder: lock.Holder{User: "alice"}}, o)
	if err == nil || !strings.Contains(err.Error(), "is not review pr-1 of app shop's") {
		t.Fatalf("create over a service that is not the review's: %v", err)
	}
	if _, err := c.CoreV1().Secrets(testNS).Get(ctx, CredentialsSecretName("shop-pr-1-db"), metav1.GetOptions{}); err == nil {
		t.Error("credentials were made")
	}
}

// A review's copy that another app was bound to by hand stays when its
// review goes: removing it would take that app's binding Secret away.
func TestRemoveReviewKeepsACopyAnotherAppUses(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	mine := &ReviewOwner{Of: "shop", Name: "pr-1", App: "shop-pr-1", Base: "db"}
	if err := writeRecord(ctx, c, testNS, &Record{Name: "shop-pr-1-db", Plan: "postgres", Spec: Builtin()[0], Review: mine}); err != nil {
		t.Fatal(err)
	}
	worker := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "worker-web", Namespace: testNS, Labels: kube.AppLabels("worker")},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web",
			Env: []corev1.EnvVar{{Name: "DATABASE_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: BindingSecretName("shop-pr-1-db")}, Key: "uri"}}}}}}}}}}
	if _, err := c.AppsV1().Deployments(testNS).Create(ctx, worker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := Deps{Client: c, Namespace: testNS, Progress: progress.Nop{}, Holder: lock.Holder{User: "alice"}}
	_, err := RemoveReview(ctx, d, "shop-pr-1-db", *mine)
	if err == nil || !strings.Contains(err.Error(), "worker") {
		t.Fatalf("removing a copy worker is bound to: %v", err)
	}
	if _, err := readRecord(ctx, c, testNS, "shop-pr-1-db"); err != nil {
		t.Errorf("the copy's record after the refusal: %v", err)
	}
}
