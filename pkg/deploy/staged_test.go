package deploy

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
)

// Staged compares the config the units run with (the running release's)
// and what the next rollout gives them (the newest staged release's).
func TestStagedSaysHowEachKeyStands(t *testing.T) {
	ctx := context.Background()
	store := &app.Store{Client: fake.NewClientset(), Namespace: "dev"}
	a := &app.App{Name: "shop", Namespace: "dev", Release: 1, LastRelease: 2}
	if err := store.CreateApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		rel    *app.Release
		config app.ConfigMap
	}{
		{&app.Release{App: "shop", Version: 1, Image: "img", Status: app.StatusDeployed}, app.ConfigMap{"A": "1", "B": "2", "D": "x"}},
		{&app.Release{App: "shop", Version: 2, Image: "img", Status: app.StatusStaged}, app.ConfigMap{"A": "1", "B": "3", "C": "4"}},
	} {
		if err := store.CreateRelease(ctx, r.rel, r.config); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Staged(ctx, store, a)
	if err != nil {
		t.Fatal(err)
	}
	if s.Release != 2 || s.Running != 1 || !s.Any() || s.Diff() != "~B, +C, -D" {
		t.Errorf("staged %d running %d any %v diff %q", s.Release, s.Running, s.Any(), s.Diff())
	}
	for key, want := range map[string]string{"A": "", "B": "changed", "C": "set", "D": "unset", "E": ""} {
		if got := s.Key(key); got != want {
			t.Errorf("key %s: %q, want %q", key, got, want)
		}
	}

	// deployed: nothing staged
	a.Release = 2
	s, err = Staged(ctx, store, a)
	if err != nil || s.Any() || s.Release != 0 || s.Key("B") != "" || s.Diff() != "" {
		t.Errorf("nothing staged: %+v %v", s, err)
	}
	// never deployed: everything staged is new to the units
	a = &app.App{Name: "blog", Namespace: "dev", LastRelease: 1}
	if err := store.CreateApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateRelease(ctx, &app.Release{App: "blog", Version: 1, Status: app.StatusStaged}, app.ConfigMap{"K": "v"}); err != nil {
		t.Fatal(err)
	}
	s, err = Staged(ctx, store, a)
	if err != nil || s.Release != 1 || s.Running != 0 || s.Key("K") != "set" || len(s.Live) != 0 {
		t.Errorf("never deployed: %+v %v", s, err)
	}
}
