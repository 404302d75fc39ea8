package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
)

const testNS = "dev"

func newStore(t *testing.T, objs ...runtime.Object) (*Store, *fake.Clientset) {
	t.Helper()
	c := fake.NewClientset(objs...)
	return &Store{Client: c, Namespace: testNS}, c
}

func mustCreateApp(t *testing.T, s *Store, a *App) {
	t.Helper()
	if a.Namespace == "" {
		a.Namespace = s.Namespace
	}
	if err := s.CreateApp(context.Background(), a); err != nil {
		t.Fatalf("CreateApp(%s): %v", a.Name, err)
	}
}

func mustCreateRelease(t *testing.T, s *Store, r *Release, cfg ConfigMap) {
	t.Helper()
	if err := s.CreateRelease(context.Background(), r, cfg); err != nil {
		t.Fatalf("CreateRelease(%s v%d): %v", r.App, r.Version, err)
	}
}

func TestCreateAppTwice(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "web", Processes: map[string]Process{}})

	cm, err := c.CoreV1().ConfigMaps(testNS).Get(ctx, "tug-app-web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("app record not stored: %v", err)
	}
	for k, v := range map[string]string{
		kube.LabelManagedBy: "tug", kube.LabelApp: "web", kube.LabelName: "web", kube.LabelKind: "app",
	} {
		if cm.Labels[k] != v {
			t.Errorf("record label %s = %q, want %q", k, cm.Labels[k], v)
		}
	}

	err = s.CreateApp(ctx, &App{Name: "web", Namespace: testNS})
	if err == nil {
		t.Fatal("second CreateApp succeeded")
	}
	if want := `app "web" already exists in namespace "dev"`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestGetAppNotFound(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.GetApp(context.Background(), "missing")
	if !IsNotFound(err) {
		t.Fatalf("GetApp error = %v, want a NotFoundError", err)
	}
	if want := `app "missing" not found in namespace "dev"; see 'tug app list'`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if IsNotFound(errors.New("app not found")) {
		t.Error("IsNotFound matched a plain error")
	}
}

func TestGetAppRejectsBadName(t *testing.T) {
	s, c := newStore(t)
	_, err := s.GetApp(context.Background(), "Bad_Name")
	if err == nil || IsNotFound(err) || !strings.Contains(err.Error(), "invalid app name") {
		t.Fatalf("GetApp(bad name) error = %v", err)
	}
	if n := len(c.Actions()); n != 0 {
		t.Errorf("a bad name made %d API calls, want 0", n)
	}
}

func TestGetAppDamagedRecord(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tug-app-web", Namespace: testNS, Labels: kube.AppLabels("web")},
		Data:       map[string]string{"app.json": "{not json"},
	}
	s, _ := newStore(t, cm)
	_, err := s.GetApp(context.Background(), "web")
	if err == nil || !strings.Contains(err.Error(), "app record tug-app-web is damaged") {
		t.Fatalf("GetApp error = %v", err)
	}
}

// A ConfigMap named like an app record that tug did not make is refused by
// name, and no change writes over it.
func TestAppRecordNotTugs(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tug-app-web", Namespace: testNS, Labels: map[string]string{"owner": "ops"}},
		Data:       map[string]string{"app.json": `{"name":"web"}`},
	}
	s, c := newStore(t, cm)
	_, err := s.UpdateApp(context.Background(), "web", func(a *App) error { a.Release = 7; return nil })
	var notOurs *kube.NotOwnedError
	if !errors.As(err, &notOurs) || notOurs.Kind != "ConfigMap" || notOurs.Name != "tug-app-web" {
		t.Fatalf("UpdateApp = %v, want a NotOwnedError for ConfigMap tug-app-web", err)
	}
	for _, a := range c.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("refused update did %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestUpdateAppRoundTrip(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	created := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	mustCreateApp(t, s, &App{Name: "web", Team: "a", CreatedAt: created})

	got, err := s.UpdateApp(ctx, "web", func(a *App) error {
		a.Description = "the shop"
		a.Processes["web"] = Process{Replicas: 3}
		a.Release, a.LastRelease, a.Image = 4, 5, "shop:4"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	if got.Description != "the shop" {
		t.Errorf("returned app not updated: %+v", got)
	}
	re, err := s.GetApp(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if re.Description != "the shop" || re.Team != "a" || re.Processes["web"].Replicas != 3 ||
		re.Release != 4 || re.LastRelease != 5 || re.Image != "shop:4" || !re.CreatedAt.Equal(created) || re.Namespace != testNS {
		t.Errorf("stored app = %+v", re)
	}
}

func TestUpdateAppChangeErrorStoresNothing(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "web", Description: "before"})
	boom := errors.New("boom")
	_, err := s.UpdateApp(ctx, "web", func(a *App) error {
		a.Description = "after"
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("UpdateApp error = %v, want %v", err, boom)
	}
	re, _ := s.GetApp(ctx, "web")
	if re.Description != "before" {
		t.Errorf("description = %q after a failed change", re.Description)
	}
}

func TestUpdateAppMissing(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.UpdateApp(context.Background(), "gone", func(*App) error { return nil })
	if !IsNotFound(err) {
		t.Fatalf("UpdateApp error = %v, want NotFound", err)
	}
}

// A conflict (someone wrote the record in between) makes UpdateApp read the
// record again and re-apply the change.
func TestUpdateAppRetriesOnConflict(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "web"})
	conflicts := 1
	c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "tug-app-web", errors.New("modified"))
		}
		return false, nil, nil
	})
	calls := 0
	_, err := s.UpdateApp(ctx, "web", func(a *App) error {
		calls++
		a.LastRelease++
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	if calls != 2 {
		t.Errorf("change ran %d times, want 2 (once per attempt)", calls)
	}
	re, _ := s.GetApp(ctx, "web")
	if re.LastRelease != 1 {
		t.Errorf("LastRelease = %d, want 1 (the change applied once to a fresh copy)", re.LastRelease)
	}
}

func TestListApps(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	for _, n := range []string{"zeta", "alpha", "mid"} {
		mustCreateApp(t, s, &App{Name: n})
	}
	// A ConfigMap tug does not own is not an app.
	if _, err := c.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{kube.LabelManagedBy: "helm"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apps, err := s.ListApps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range apps {
		names = append(names, a.Name)
		if a.Processes == nil {
			t.Errorf("app %s has nil Processes", a.Name)
		}
	}
	if got := strings.Join(names, ","); got != "alpha,mid,zeta" {
		t.Errorf("ListApps = %s, want alpha,mid,zeta", got)
	}
}

func TestDeleteAppRecord(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "web"})
	if err := s.DeleteAppRecord(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetApp(ctx, "web"); !IsNotFound(err) {
		t.Errorf("GetApp after delete = %v", err)
	}
	if err := s.DeleteAppRecord(ctx, "web"); err != nil {
		t.Errorf("deleting a missing record = %v, want nil", err)
	}
}

func TestCreateReleaseStoresConfigInImmutableSecret(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	r := &Release{App: "web", Version: 3, Image: "shop:3", Processes: map[string]string{"web": "./server"},
		Kind: KindDeploy, Status: StatusPending, Author: "alice"}
	cfg := ConfigMap{"TOKEN": "s3cr3t-token", "DB_URL": "postgres://user:pa55@db"}
	mustCreateRelease(t, s, r, cfg)

	if !slices.Equal(r.ConfigKeys, []string{"DB_URL", "TOKEN"}) {
		t.Errorf("r.ConfigKeys = %v, want sorted keys", r.ConfigKeys)
	}
	sec, err := c.CoreV1().Secrets(testNS).Get(ctx, "tug-release-web-v3", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("release secret: %v", err)
	}
	if sec.Immutable == nil || !*sec.Immutable {
		t.Error("release secret is not immutable")
	}
	if sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("type = %s", sec.Type)
	}
	if len(sec.Data) != 2 || string(sec.Data["TOKEN"]) != "s3cr3t-token" || string(sec.Data["DB_URL"]) != "postgres://user:pa55@db" {
		t.Errorf("secret data = %q", sec.Data)
	}
	for k, v := range map[string]string{
		kube.LabelManagedBy: "tug", kube.LabelApp: "web", kube.LabelKind: "release-config", kube.LabelRelease: "3",
	} {
		if sec.Labels[k] != v {
			t.Errorf("secret label %s = %q, want %q", k, sec.Labels[k], v)
		}
	}
	if len(sec.Annotations) != 0 || sec.Labels["tug.dev/status"] != "" {
		t.Errorf("the config Secret holds record metadata: %v %v", sec.Annotations, sec.Labels)
	}
	// the record: a ConfigMap of the same name, which a viewer may read
	cm, err := c.CoreV1().ConfigMaps(testNS).Get(ctx, "tug-release-web-v3", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("release record: %v", err)
	}
	for k, v := range map[string]string{
		kube.LabelManagedBy: "tug", kube.LabelApp: "web", kube.LabelKind: "release", kube.LabelRelease: "3", "tug.dev/status": "pending",
	} {
		if cm.Labels[k] != v {
			t.Errorf("record label %s = %q, want %q", k, cm.Labels[k], v)
		}
	}
	ann := cm.Annotations[annotationRelease]
	recordText := fmt.Sprint(cm.Annotations, cm.Data, cm.BinaryData)
	for _, secret := range []string{"s3cr3t-token", "pa55"} {
		if strings.Contains(recordText, secret) {
			t.Errorf("release record holds a config value: %s", recordText)
		}
	}
	var rec Release
	if err := json.Unmarshal([]byte(ann), &rec); err != nil {
		t.Fatalf("annotation is not a release record: %v", err)
	}
	if rec.Image != "shop:3" || rec.Version != 3 || rec.Processes["web"] != "./server" || rec.Author != "alice" ||
		!slices.Equal(rec.ConfigKeys, []string{"DB_URL", "TOKEN"}) {
		t.Errorf("record = %+v", rec)
	}

	gotR, gotCfg, err := s.GetRelease(ctx, "web", 3)
	if err != nil {
		t.Fatal(err)
	}
	if gotR.Image != "shop:3" || gotR.Status != StatusPending || gotCfg["TOKEN"] != "s3cr3t-token" || len(gotCfg) != 2 {
		t.Errorf("GetRelease = %+v, %v", gotR, gotCfg)
	}
}

func TestCreateReleaseTwice(t *testing.T) {
	s, _ := newStore(t)
	r := &Release{App: "web", Version: 1, Image: "a"}
	mustCreateRelease(t, s, r, nil)
	err := s.CreateRelease(context.Background(), &Release{App: "web", Version: 1, Image: "b"}, nil)
	if err == nil || !strings.Contains(err.Error(), `release v1 of app "web" already exists`) {
		t.Fatalf("second CreateRelease = %v", err)
	}
}

func TestCreateReleaseWithoutConfig(t *testing.T) {
	s, _ := newStore(t)
	r := &Release{App: "web", Version: 1, Image: "a"}
	mustCreateRelease(t, s, r, nil)
	got, cfg, err := s.GetRelease(context.Background(), "web", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigKeys == nil || len(got.ConfigKeys) != 0 || len(cfg) != 0 {
		t.Errorf("ConfigKeys = %#v, config = %v; want an empty, non-nil key list", got.ConfigKeys, cfg)
	}
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), `"configKeys":[]`) {
		t.Errorf("release JSON %s: configKeys should be []", b)
	}
}

func TestGetReleaseNotFound(t *testing.T) {
	s, _ := newStore(t)
	_, _, err := s.GetRelease(context.Background(), "web", 7)
	if !IsNotFound(err) {
		t.Fatalf("GetRelease error = %v, want NotFound", err)
	}
	for _, want := range []string{`release v7 of app "web" not found`, `namespace "dev"`, "tug release list web"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestListReleasesNewestFirst(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, v := range []int{2, 10, 1, 9} {
		mustCreateRelease(t, s, &Release{App: "web", Version: v, Image: "img:" + strconv.Itoa(v)}, ConfigMap{"K": "v"})
	}
	// another app whose name starts the same way
	mustCreateRelease(t, s, &Release{App: "web2", Version: 11}, nil)

	rels, err := s.ListReleases(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	var vs []int
	for _, r := range rels {
		vs = append(vs, r.Version)
		if r.App != "web" {
			t.Errorf("release of app %q listed for web", r.App)
		}
	}
	if !slices.Equal(vs, []int{10, 9, 2, 1}) {
		t.Errorf("versions = %v, want [10 9 2 1]", vs)
	}
}

func TestSetReleaseStatus(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreateRelease(t, s, &Release{App: "web", Version: 1, Image: "a", Status: StatusPending}, ConfigMap{"K": "v"})

	if err := s.SetReleaseStatus(ctx, "web", 1, StatusFailed, "web crashed with exit code 3"); err != nil {
		t.Fatalf("SetReleaseStatus: %v", err)
	}
	r, cfg, err := s.GetRelease(ctx, "web", 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusFailed || r.FailReason != "web crashed with exit code 3" {
		t.Errorf("after failed: status %q, reason %q", r.Status, r.FailReason)
	}
	if cfg["K"] != "v" || r.Image != "a" {
		t.Errorf("status change altered the release: %+v %v", r, cfg)
	}

	if err := s.SetReleaseStatus(ctx, "web", 1, StatusDeployed, ""); err != nil {
		t.Fatal(err)
	}
	rels, _ := s.ListReleases(ctx, "web")
	if len(rels) != 1 || rels[0].Status != StatusDeployed || rels[0].FailReason != "" {
		t.Errorf("after deployed: %+v (the failure reason should be cleared)", rels[0])
	}
}

func TestSetReleaseStatusMissing(t *testing.T) {
	s, _ := newStore(t)
	if err := s.SetReleaseStatus(context.Background(), "web", 9, StatusDeployed, ""); err == nil {
		t.Fatal("SetReleaseStatus of a missing release succeeded")
	}
}

func TestPruneReleases(t *testing.T) {
	tests := []struct {
		name          string
		keep, current int
		want          []int
	}{
		{"keeps the newest", 3, 6, []int{6, 5, 4}},
		// at most keep: current takes one of the places
		{"keeps current beyond keep", 2, 1, []int{6, 1}},
		{"current among the newest", 2, 5, []int{6, 5}},
		{"keep more than exist", 10, 6, []int{6, 5, 4, 3, 2, 1}},
		{"keep zero keeps current", 0, 3, []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newStore(t)
			ctx := context.Background()
			for v := 1; v <= 6; v++ {
				mustCreateRelease(t, s, &Release{App: "web", Version: v}, nil)
			}
			mustCreateRelease(t, s, &Release{App: "other", Version: 1}, nil)
			if err := s.PruneReleases(ctx, "web", tt.keep, tt.current); err != nil {
				t.Fatal(err)
			}
			rels, _ := s.ListReleases(ctx, "web")
			var vs []int
			for _, r := range rels {
				vs = append(vs, r.Version)
			}
			if !slices.Equal(vs, tt.want) {
				t.Errorf("left %v, want %v", vs, tt.want)
			}
			if other, _ := s.ListReleases(ctx, "other"); len(other) != 1 {
				t.Errorf("pruning web touched another app's releases: %d left", len(other))
			}
		})
	}
}

func TestConfigMapKeys(t *testing.T) {
	if got := (ConfigMap{"b": "1", "A": "2", "a": "3"}).Keys(); !slices.Equal(got, []string{"A", "a", "b"}) {
		t.Errorf("Keys = %v", got)
	}
	if got := ConfigMap(nil).Keys(); got == nil || len(got) != 0 {
		t.Errorf("nil Keys = %#v, want empty non-nil", got)
	}
}

// UpdateReleaseRollout writes the record's settings and their changes,
// nothing else: the config, the status and fields this tug does not know
// stay; the write is conditional (a conflict reads again), and a change
// that refuses writes nothing.
func TestUpdateReleaseRollout(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	mustCreateRelease(t, s, &Release{App: "web", Version: 3, Image: "img:3", Status: StatusPending, Rollout: Rollout{GracePeriod: 9}}, ConfigMap{"K": "v"})
	if err := s.SetReleaseStatus(ctx, "web", 3, StatusDeployed, ""); err != nil {
		t.Fatal(err)
	}
	name := ReleaseSecretName("web", 3)
	rec, _ := c.CoreV1().ConfigMaps(testNS).Get(ctx, name, metav1.GetOptions{})
	rec.Annotations[annotationRelease] = strings.Replace(rec.Annotations[annotationRelease], `{`, `{"fromTheFuture":[1,2],`, 1)
	if _, err := c.CoreV1().ConfigMaps(testNS).Update(ctx, rec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var patches []string
	conflicts := 1
	c.PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patches = append(patches, string(a.(k8stesting.PatchAction).GetPatch()))
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("modified"))
		}
		return false, nil, nil
	})

	if _, err := s.UpdateReleaseRollout(ctx, "web", 3, func(r *Release) error { return errors.New("no") }); err == nil || len(patches) != 0 {
		t.Fatalf("a refusing change: %v, %d writes", err, len(patches))
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	calls := 0
	got, err := s.UpdateReleaseRollout(ctx, "web", 3, func(r *Release) error {
		calls++
		r.Rollout.History = 3
		r.RolloutChanges = append(r.RolloutChanges, RolloutChange{At: at, Author: "alice", Message: "settings: history 3"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || len(patches) != 2 || !strings.Contains(patches[0], `"resourceVersion"`) {
		t.Errorf("%d calls, patches %q: want a conditional write, tried again after the conflict", calls, patches)
	}
	if got.Rollout != (Rollout{GracePeriod: 9, History: 3}) {
		t.Errorf("returned %+v", got.Rollout)
	}
	r, cfg, err := s.GetRelease(ctx, "web", 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rollout != (Rollout{GracePeriod: 9, History: 3}) || len(r.RolloutChanges) != 1 || !r.RolloutChanges[0].At.Equal(at) ||
		r.Status != StatusDeployed || r.Image != "img:3" || cfg["K"] != "v" {
		t.Errorf("after the change: %+v config %v", r, cfg)
	}
	rec, _ = c.CoreV1().ConfigMaps(testNS).Get(ctx, name, metav1.GetOptions{})
	if !strings.Contains(rec.Annotations[annotationRelease], `"fromTheFuture":[1,2]`) {
		t.Errorf("a field this tug does not know was lost: %s", rec.Annotations[annotationRelease])
	}
	if _, err := s.UpdateReleaseRollout(ctx, "web", 4, func(*Release) error { return nil }); !IsNotFound(err) {
		t.Errorf("a missing release: %v", err)
	}
}

// GetAppAndList answers as GetApp and then ListApps would, record for
// record and error for error, in one LIST when that holds the app's record.
func TestGetAppAndListAnswersAsGetAndList(t *testing.T) {
	record := func(name, data string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tug-app-" + name, Namespace: testNS, Labels: labels},
			Data: map[string]string{"app.json": data}}
	}
	kindApp := func(name string) map[string]string {
		l := kube.AppLabels(name)
		l[kube.LabelKind] = "app"
		return l
	}
	for _, c := range []struct {
		name     string
		app      string
		objs     []runtime.Object
		requests int
	}{
		{"the app and others", "shop", nil, 1},
		{"no such app", "nope", nil, 2},
		{"a bad name", "Bad_Name", nil, 0},
		{"a ConfigMap of the record's name tug did not make", "web", []runtime.Object{record("web", `{"name":"web"}`, map[string]string{"owner": "ops"})}, 2},
		{"another app's record under the app's name", "web", []runtime.Object{record("web", `{"name":"blog"}`, kindApp("blog"))}, 2},
		{"a record the LIST cannot select", "web", []runtime.Object{record("web", `{"name":"web"}`, kube.AppLabels("web"))}, 2},
		{"its record damaged, and one listed before it", "web", []runtime.Object{record("web", "{", kindApp("web")), record("api", "{", kindApp("api"))}, 1},
		{"another record damaged", "shop", []runtime.Object{record("api", "{", kindApp("api"))}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, cs := newStore(t, c.objs...)
			for _, name := range []string{"shop", "shop-api", "blog"} {
				mustCreateApp(t, s, &App{Name: name, Processes: map[string]Process{"web": {Replicas: 1}}})
			}
			ctx := context.Background()
			wantApp, wantErr := s.GetApp(ctx, c.app)
			var wantList []*App
			if wantErr == nil {
				wantList, wantErr = s.ListApps(ctx)
			}
			cs.ClearActions()
			a, list, err := (&Store{Client: cs, Namespace: testNS}).GetAppAndList(ctx, c.app)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			if wantErr == nil && (!reflect.DeepEqual(a, wantApp) || !reflect.DeepEqual(list, wantList)) {
				t.Errorf("got %+v and %d apps, want %+v and %d", a, len(list), wantApp, len(wantList))
			}
			if wantErr != nil && (a != nil || list != nil) {
				t.Errorf("an error with %v, %v", a, list)
			}
			if n := len(cs.Actions()); n != c.requests {
				t.Errorf("%d requests (%v), want %d", n, cs.Actions(), c.requests)
			}
		})
	}
}
