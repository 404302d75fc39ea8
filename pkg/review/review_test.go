package review

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/service"
)

func TestValidate(t *testing.T) {
	if err := Validate("shop", "pr-42", time.Hour); err != nil {
		t.Fatalf("a good review: %v", err)
	}
	if err := Validate("shop", "pr-42", MaxTTL); err != nil {
		t.Fatalf("the longest --ttl: %v", err)
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
		{"shop", "pr-42", MaxTTL + time.Second, "longer than a review app may live"},
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
	if _, err := Down(ctx, d, service.Deps{Client: c, Namespace: "dev"}, "shop", "pr-1"); err == nil || !strings.Contains(err.Error(), "is not review") {
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
	removed, err := Sweep(ctx, deploy.Deps{Client: c, Namespace: "dev"}, service.Deps{Client: c, Namespace: "dev"}, now)
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

// A review app gets the app's processes at one unit at most, no domains,
// no volumes, builds pushing to a repository of its own, and neither the
// app's config nor its build env without --copy-config (said in a note).
func TestUpCopiesNoSecretsDomainsOrVolumes(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := &app.Store{Client: c, Namespace: "dev"}
	base := &app.App{Name: "shop", Namespace: "dev", Release: 1, LastRelease: 1, Image: "reg/shop@sha256:" + strings.Repeat("a", 64),
		Domains: []app.Domain{{Host: "shop.example.com"}}, Volumes: []string{"data"},
		Processes: map[string]app.Process{"web": {Replicas: 4}, "worker": {Replicas: 2, Autoscale: &app.Autoscale{Min: 2, Max: 9, CPUPercent: 70}}},
		Build:     &app.BuildSettings{Repository: "reg/shop", BuildEnv: []string{"NPM_TOKEN=s3cret", "API_URL=https://prod"}}}
	if err := s.CreateApp(ctx, base); err != nil {
		t.Fatal(err)
	}
	r := &app.Release{App: "shop", Version: 1, Image: base.Image, Processes: map[string]string{"web": "serve", "worker": "work"},
		Volumes: []app.VolumeBinding{{Volume: "data", MountPath: "/data"}}, Status: app.StatusDeployed, Kind: app.KindDeploy,
		Jobs: map[string]app.Job{"mail": {Command: "send", Schedule: "@daily"}, "report": {Command: "rep", Schedule: "@hourly"}}, ReleaseCommand: "migrate"}
	if err := s.CreateRelease(ctx, r, app.ConfigMap{"DATABASE_URL": "postgres://prod"}); err != nil {
		t.Fatal(err)
	}
	var notes []string
	o := UpOptions{Of: "shop", Name: "pr-7", TTL: time.Hour, Now: time.Now(), Overrides: map[string]string{"MODE": "review"},
		Note: func(s string) { notes = append(notes, s) }}
	a, err := Up(ctx, deploy.Deps{Client: c, Namespace: "dev"}, o)
	if err != nil {
		t.Fatal(err)
	}
	a, err = s.GetApp(ctx, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Domains) != 0 || len(a.Volumes) != 0 {
		t.Errorf("domains %v, volumes %v copied", a.Domains, a.Volumes)
	}
	for n, p := range a.Processes {
		if p.Replicas > 1 || p.Autoscale != nil {
			t.Errorf("process %s: %d units, autoscale %v", n, p.Replicas, p.Autoscale)
		}
	}
	if a.Build == nil || a.Build.Repository != "reg/shop-pr-7" || len(a.Build.BuildEnv) != 0 {
		t.Errorf("build settings %+v: want repository reg/shop-pr-7 and no build env", a.Build)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "API_URL, NPM_TOKEN") || strings.Contains(notes[0], "s3cret") ||
		!strings.Contains(notes[1], "jobs suspended") {
		t.Errorf("notes %q: want the build env keys not copied (no value), and the jobs suspended", notes)
	}
	if strings.Join(a.SuspendedJobs, ",") != "mail,report" {
		t.Errorf("suspended jobs %v: want every job of the app", a.SuspendedJobs)
	}
	rel, config, err := s.GetRelease(ctx, a.Name, a.LastRelease)
	if err != nil {
		t.Fatal(err)
	}
	if len(config) != 1 || config["MODE"] != "review" || len(rel.Volumes) != 0 {
		t.Errorf("first release: config %v, volumes %v; want the override only, no volume", config, rel.Volumes)
	}
}

// Two first review ups of one pull request at once: the one whose create
// finds the app made already extends it instead of failing.
func TestUpThatLosesTheCreateExtends(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := &app.Store{Client: c, Namespace: "dev"}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, a := range []*app.App{
		{Name: "shop", Namespace: "dev"},
		{Name: "shop-pr-1", Namespace: "dev", Review: &app.Review{Of: "shop", Name: "pr-1", ExpiresAt: now.Add(time.Minute)}},
	} {
		if err := s.CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// the first read of shop-pr-1 comes before the other review up made it
	hidden := false
	c.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() != app.AppRecordName("shop-pr-1") || hidden {
			return false, nil, nil
		}
		hidden = true
		return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), app.AppRecordName("shop-pr-1"))
	})
	// a fresh store: the one above remembers the records it wrote
	a, err := Up(ctx, deploy.Deps{Client: c, Namespace: "dev"}, UpOptions{Of: "shop", Name: "pr-1", TTL: 72 * time.Hour, Now: now})
	if err != nil || !hidden {
		t.Fatalf("review up that lost the create: %v (the race was staged: %v)", err, hidden)
	}
	if !a.Review.ExpiresAt.Equal(now.Add(72 * time.Hour)) {
		t.Errorf("expiry %s: want it extended to %s", a.Review.ExpiresAt, now.Add(72*time.Hour))
	}
}
