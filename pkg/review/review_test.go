package review

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
)

func TestValidate(t *testing.T) {
	if err := Validate("shop", "pr-42", time.Hour); err != nil {
		t.Fatalf("a good review: %v", err)
	}
	for _, tc := range []struct {
		of, name string
		ttl      time.Duration
		want     string
	}{
		{"shop", "PR_42", time.Hour, "DNS label"},
		{"shop", "pr.42", time.Hour, "DNS label"},
		{"shop", "", time.Hour, "DNS label"},
		{"shop", "pr-42", -time.Hour, "--ttl must be positive"},
		{"shop", "pr-42", 0, "--ttl must be positive"},
		{"Shop", "pr-42", time.Hour, "invalid app name"},
		{"shop", strings.Repeat("a", 60), time.Hour, "is not valid"},
	} {
		err := Validate(tc.of, tc.name, tc.ttl)
		if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%q, %q, %s) = %v, want an input error saying %q", tc.of, tc.name, tc.ttl, err, tc.want)
		}
	}
}

func TestListAndExpiry(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := &app.Store{Client: c, Namespace: "dev"}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, a := range []*app.App{
		{Name: "shop", Namespace: "dev"},
		{Name: "shop-pr-1", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-1", ExpiresAt: now.Add(time.Hour)}},
		{Name: "shop-pr-2", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-2", ExpiresAt: now}},
		{Name: "cart-pr-1", Namespace: "dev", Review: &app.Review{Of: "cart", Name: "pr-1", ExpiresAt: now.Add(time.Hour)}},
	} {
		if err := s.CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := List(ctx, s, "shop")
	if err != nil || len(got) != 2 || got[0].App != "shop-pr-1" || got[1].App != "shop-pr-2" {
		t.Fatalf("List: %+v %v", got, err)
	}
	var r *app.Review
	if r.Expired(now) || !got[1].ExpiresAt.Equal(now) || !(&app.Review{ExpiresAt: now}).Expired(now) || (&app.Review{ExpiresAt: now.Add(time.Second)}).Expired(now) {
		t.Error("expiry: a review app expires at its ExpiresAt, and nil never does")
	}
	// the record carries the review's labels, for kubectl
	cm, err := c.CoreV1().ConfigMaps("dev").Get(ctx, app.AppRecordName("shop-pr-1"), metav1.GetOptions{})
	if err != nil || cm.Labels[app.LabelReviewOf] != "shop" || cm.Labels[app.LabelReview] != "pr-1" || cm.Annotations[app.AnnotationReviewExpires] == "" {
		t.Errorf("record labels: %v %v %v", cm.Labels, cm.Annotations, err)
	}
}

func TestUpRefusesWhatIsNotItsReview(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := &app.Store{Client: c, Namespace: "dev"}
	for _, a := range []*app.App{
		{Name: "shop", Namespace: "dev"},
		{Name: "shop-pr-1", Namespace: "dev"}, // an app of that name, not a review
		{Name: "shop-pr-2", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-2"}},
	} {
		if err := s.CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	d := deploy.Deps{Client: c, Namespace: "dev"}
	o := UpOptions{Of: "shop", Name: "pr-1", TTL: time.Hour, Now: time.Now()}
	if _, err := Up(ctx, d, o); err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "is not review") {
		t.Errorf("an app in the way: %v", err)
	}
	o.Of = "nosuch"
	if _, err := Up(ctx, d, o); err == nil || !inputerr.Is(err) {
		t.Errorf("a missing app: %v", err)
	}
	o.Of, o.Name = "shop-pr-2", "x"
	if _, err := Up(ctx, d, o); err == nil || !strings.Contains(err.Error(), "itself a review app") {
		t.Errorf("a review of a review: %v", err)
	}
	if err := Down(ctx, d, "shop", "pr-1"); err == nil || !strings.Contains(err.Error(), "is not review") {
		t.Errorf("down of an app that is not a review: %v", err)
	}
}

// Sweep removes only the namespace's expired review apps, and leaves one
// a review up extended after the sweep listed it (decided under its lock).
func TestSweepRemovesOnlyExpiredReviewApps(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, a := range []*app.App{
		{Name: "shop", Namespace: "dev"},
		{Name: "shop-pr-x", Namespace: "dev"}, // named like one, not a review app
		{Name: "shop-pr-1", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-1", ExpiresAt: now.Add(-time.Minute)}},
		{Name: "shop-pr-2", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-2", ExpiresAt: now.Add(-time.Minute)}},
		{Name: "shop-pr-3", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-3", ExpiresAt: now.Add(time.Hour)}},
		{Name: "shop-pr-9", Namespace: "prod", Review: &app.Review{Of: "shop", Name: "pr-9", ExpiresAt: now.Add(-time.Hour)}},
	} {
		if err := (&app.Store{Client: c, Namespace: a.Namespace}).CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	s := &app.Store{Client: c, Namespace: "dev"}
	afterList = func() {
		// a review up of pr-2 extends it after the sweep listed it
		if _, err := s.UpdateApp(ctx, "shop-pr-2", func(a *app.App) error {
			a.Review.ExpiresAt = now.Add(72 * time.Hour)
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterList = func() {} })
	removed, err := Sweep(ctx, deploy.Deps{Client: c, Namespace: "dev"}, now)
	if err != nil || len(removed) != 1 || removed[0] != "shop-pr-1" {
		t.Fatalf("Sweep removed %v, %v; want shop-pr-1 only", removed, err)
	}
	if _, err := s.GetApp(ctx, "shop-pr-1"); !app.IsNotFound(err) {
		t.Errorf("shop-pr-1 (expired) is still there: %v", err)
	}
	for _, name := range []string{"shop", "shop-pr-x", "shop-pr-2", "shop-pr-3"} {
		if _, err := s.GetApp(ctx, name); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	if _, err := (&app.Store{Client: c, Namespace: "prod"}).GetApp(ctx, "shop-pr-9"); err != nil {
		t.Errorf("another namespace's review app was removed: %v", err)
	}
}
