package app

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/kube/kubetest"
)

// oldFormRelease is release r as tug stored it before the record moved to
// a ConfigMap: one immutable Secret, the config its data, the record in
// its metadata.
func oldFormRelease(t *testing.T, r *Release, config ConfigMap) *corev1.Secret {
	t.Helper()
	r.ConfigKeys = config.Keys()
	record, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	labels := kube.AppLabels(r.App)
	labels[kube.LabelKind], labels[kube.LabelRelease], labels[labelStatus] = "release", strconv.Itoa(r.Version), string(r.Status)
	data := map[string][]byte{}
	for k, v := range config {
		data[k] = []byte(v)
	}
	immutable := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ReleaseSecretName(r.App, r.Version), Namespace: testNS, Labels: labels,
			Annotations: map[string]string{annotationRelease: string(record)}},
		Type: corev1.SecretTypeOpaque, Immutable: &immutable, Data: data,
	}
}

func versions(rels []*Release) []int {
	var vs []int
	for _, r := range rels {
		vs = append(vs, r.Version)
	}
	return vs
}

func configMapExists(c *fake.Clientset, name string) bool {
	_, err := c.CoreV1().ConfigMaps(testNS).Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// A history of both forms reads as one: old-form Secrets for v1 and v2,
// records and config for v3 and v4; every write goes to whichever holds
// the record, and no ConfigMap is made for an old release.
func TestReleasesOfBothForms(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t,
		oldFormRelease(t, &Release{App: "web", Version: 1, Image: "img:1", Status: StatusSuperseded}, ConfigMap{"K": "one"}),
		oldFormRelease(t, &Release{App: "web", Version: 2, Image: "img:2", Status: StatusDeployed}, ConfigMap{"K": "two"}))
	mustCreateRelease(t, s, &Release{App: "web", Version: 3, Image: "img:3", Status: StatusFailed}, ConfigMap{"K": "three"})
	mustCreateRelease(t, s, &Release{App: "web", Version: 4, Image: "img:4", Status: StatusPending}, ConfigMap{"K": "four"})

	rels, err := s.ListReleases(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := versions(rels); !slices.Equal(got, []int{4, 3, 2, 1}) {
		t.Fatalf("ListReleases = %v, want 4 3 2 1", got)
	}
	for v, want := range map[int]string{1: "one", 2: "two", 3: "three", 4: "four"} {
		r, cfg, err := s.GetRelease(ctx, "web", v)
		if err != nil || r.Version != v || cfg["K"] != want || !slices.Equal(r.ConfigKeys, []string{"K"}) {
			t.Errorf("GetRelease v%d = %+v %v %v", v, r, cfg, err)
		}
		if r, err := s.GetReleaseRecord(ctx, "web", v); err != nil || r.Image != "img:"+strconv.Itoa(v) {
			t.Errorf("GetReleaseRecord v%d = %+v %v", v, r, err)
		}
	}
	r, cfg, err := s.FindRelease(ctx, "web", func(r *Release) bool { return r.Status == StatusDeployed })
	if err != nil || r == nil || r.Version != 2 || cfg["K"] != "two" {
		t.Errorf("FindRelease of the old form = %+v %v %v", r, cfg, err)
	}

	// writes to an old release go to its Secret
	if err := s.SetReleaseStatus(ctx, "web", 2, StatusSuperseded, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReleaseImageID(ctx, "web", 2, "sha256:aa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateReleaseRollout(ctx, "web", 2, func(r *Release) error { r.Rollout.History = 4; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReleaseStatus(ctx, "web", 4, StatusDeployed, ""); err != nil {
		t.Fatal(err)
	}
	if configMapExists(c, ReleaseSecretName("web", 2)) {
		t.Error("a write to an old-form release made a record ConfigMap")
	}
	old, _ := s.GetReleaseRecord(ctx, "web", 2)
	if old.Status != StatusSuperseded || old.ImageID != "sha256:aa" || old.Rollout.History != 4 {
		t.Errorf("old-form release after writes = %+v", old)
	}
	if n, _ := s.GetReleaseRecord(ctx, "web", 4); n.Status != StatusDeployed {
		t.Errorf("new release status = %s", n.Status)
	}

}

// Pruning takes both objects of a new release, and the one of an old.
func TestPruneReleasesOfBothForms(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t,
		oldFormRelease(t, &Release{App: "web", Version: 1, Image: "img:1", Status: StatusSuperseded}, ConfigMap{"K": "one"}),
		oldFormRelease(t, &Release{App: "web", Version: 2, Image: "img:2", Status: StatusSuperseded}, ConfigMap{"K": "two"}))
	mustCreateRelease(t, s, &Release{App: "web", Version: 3, Image: "img:3", Status: StatusSuperseded}, ConfigMap{"K": "three"})
	mustCreateRelease(t, s, &Release{App: "web", Version: 4, Image: "img:4", Status: StatusDeployed}, ConfigMap{"K": "four"})
	if err := s.PruneReleases(ctx, "web", 1, 4); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 3; v++ {
		name := ReleaseSecretName("web", v)
		if _, err := c.CoreV1().Secrets(testNS).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) || configMapExists(c, name) {
			t.Errorf("v%d left after pruning: secret %v", v, err)
		}
	}
	if rels, _ := s.ListReleases(ctx, "web"); !slices.Equal(versions(rels), []int{4}) {
		t.Errorf("after pruning: %v", versions(rels))
	}
}

// A create killed between its two objects leaves config with no record:
// no reader counts it, the next create of that version takes its place
// (it runs under the app's lock), and pruning deletes one of another
// version. A release that exists, in either form, is never replaced.
func TestOrphanConfigSecret(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	// the kill: the record is never made, nor the config deleted
	c.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("killed")
	})
	c.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("killed")
	})
	for _, v := range []int{1, 2} {
		if err := s.CreateRelease(ctx, &Release{App: "web", Version: v, Image: "old"}, ConfigMap{"K": "stale"}); err == nil {
			t.Fatal("a create whose record failed succeeded")
		}
	}
	c.ReactionChain = c.ReactionChain[2:]
	kubetest.HonorDryRun(c)

	rels, err := s.ListReleases(ctx, "web")
	if err != nil || len(rels) != 0 {
		t.Fatalf("config with no record listed as a release: %v %v", versions(rels), err)
	}
	if _, _, err := s.GetRelease(ctx, "web", 1); !IsNotFound(err) {
		t.Errorf("GetRelease of an orphan = %v, want not found", err)
	}
	if err := s.SetReleaseStatus(ctx, "web", 1, StatusFailed, "x"); !IsNotFound(err) {
		t.Errorf("SetReleaseStatus of an orphan = %v, want not found", err)
	}
	if err := s.ValidateRelease(ctx, &Release{App: "web", Version: 1, Image: "new"}, ConfigMap{"K": "fresh"}); err != nil {
		t.Errorf("a dry run over an orphan = %v", err)
	}
	mustCreateRelease(t, s, &Release{App: "web", Version: 1, Image: "new", Status: StatusPending}, ConfigMap{"K": "fresh"})
	if r, cfg, err := s.GetRelease(ctx, "web", 1); err != nil || r.Image != "new" || cfg["K"] != "fresh" {
		t.Errorf("the create after the kill = %+v %v %v", r, cfg, err)
	}

	// v2's orphan: pruning deletes it, and keeps v1
	rels, _ = s.ListReleases(ctx, "web")
	if err := s.PruneReleasesIn(ctx, "web", rels, 10, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Secrets(testNS).Get(ctx, ReleaseSecretName("web", 2), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("orphan v2 after pruning: %v", err)
	}
	if _, _, err := s.GetRelease(ctx, "web", 1); err != nil {
		t.Errorf("pruning orphans took a release: %v", err)
	}
}

func TestCreateReleaseNeverReplacesARelease(t *testing.T) {
	ctx := context.Background()
	notTugs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ReleaseSecretName("web", 3), Namespace: testNS}, Data: map[string][]byte{"X": []byte("y")}}
	s, c := newStore(t, oldFormRelease(t, &Release{App: "web", Version: 2, Image: "img:2"}, ConfigMap{"K": "v"}), notTugs)
	mustCreateRelease(t, s, &Release{App: "web", Version: 1, Image: "img:1"}, nil)
	for v := 1; v <= 3; v++ {
		err := s.CreateRelease(ctx, &Release{App: "web", Version: v, Image: "other"}, nil)
		var exists *ReleaseExistsError
		if !errors.As(err, &exists) {
			t.Errorf("CreateRelease over v%d = %v, want already exists", v, err)
		}
	}
	if r, _ := s.GetReleaseRecord(ctx, "web", 2); r == nil || r.Image != "img:2" {
		t.Errorf("the old-form release was replaced: %+v", r)
	}
	if sec, _ := c.CoreV1().Secrets(testNS).Get(ctx, ReleaseSecretName("web", 3), metav1.GetOptions{}); sec == nil || string(sec.Data["X"]) != "y" {
		t.Errorf("a Secret that is not tug's was replaced: %v", sec)
	}
}

// A tug Secret of a release's name that is no release's config (one an
// export applied by hand) is never taken for an orphan and replaced; and a
// record that exists already (a lock lost meanwhile) leaves no config of
// this create behind.
func TestCreateReleaseLeavesOtherSecretsAndNoStrayConfig(t *testing.T) {
	ctx := context.Background()
	exported := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ReleaseSecretName("web", 4), Namespace: testNS, Labels: kube.AppLabels("web")},
		Data: map[string][]byte{"X": []byte("exported")}}
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ReleaseSecretName("web", 5), Namespace: testNS, Labels: kube.AppLabels("web")}}
	s, c := newStore(t, exported, record)
	var exists *ReleaseExistsError
	if err := s.CreateRelease(ctx, &Release{App: "web", Version: 4, Image: "img"}, ConfigMap{"K": "v"}); !errors.As(err, &exists) {
		t.Errorf("create over an exported Secret = %v, want already exists", err)
	}
	if sec, _ := c.CoreV1().Secrets(testNS).Get(ctx, ReleaseSecretName("web", 4), metav1.GetOptions{}); sec == nil || string(sec.Data["X"]) != "exported" {
		t.Errorf("the exported Secret was replaced: %v", sec)
	}
	if err := s.CreateRelease(ctx, &Release{App: "web", Version: 5, Image: "img"}, ConfigMap{"K": "v"}); !errors.As(err, &exists) {
		t.Errorf("create over another record = %v, want already exists", err)
	}
	if _, err := c.CoreV1().Secrets(testNS).Get(ctx, ReleaseSecretName("web", 5), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config of the refused create left behind: %v", err)
	}
}

// A prune killed between a release's record and its Secret leaves config
// with no record, which the next prune deletes.
func TestPruneKilledBetweenRecordAndConfig(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t)
	for v := 1; v <= 3; v++ {
		mustCreateRelease(t, s, &Release{App: "web", Version: v, Image: "i", Status: StatusSuperseded}, ConfigMap{"K": "v"})
	}
	c.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("killed")
	})
	if err := s.PruneReleases(ctx, "web", 1, 3); err == nil {
		t.Fatal("want the kill's error")
	}
	c.ReactionChain = c.ReactionChain[1:]
	if err := s.PruneReleases(ctx, "web", 1, 3); err != nil {
		t.Fatal(err)
	}
	secs, _ := c.CoreV1().Secrets(testNS).List(ctx, metav1.ListOptions{})
	cms, _ := c.CoreV1().ConfigMaps(testNS).List(ctx, metav1.ListOptions{})
	if len(secs.Items) != 1 || len(cms.Items) != 1 || secs.Items[0].Name != ReleaseSecretName("web", 3) {
		t.Errorf("after the second prune: %d secrets, %d records", len(secs.Items), len(cms.Items))
	}
}

// forbidSecrets makes the fake API server refuse every Secret to the
// caller, as RBAC refuses a viewer.
func forbidSecrets(c *fake.Clientset) {
	c.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "",
			errors.New(`User "vera" cannot `+a.GetVerb()+` resource "secrets" in API group "" in the namespace "dev"`))
	})
}

// A viewer reads release records and never a value: the list is the
// records made since the split (no error for the Secrets it may not
// list), GetReleaseRecord reads one; GetRelease, which returns values,
// is refused.
func TestViewerReadsRecordsOnly(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t, oldFormRelease(t, &Release{App: "web", Version: 1, Image: "img:1"}, ConfigMap{"K": "old"}))
	mustCreateRelease(t, s, &Release{App: "web", Version: 2, Image: "img:2", Status: StatusDeployed}, ConfigMap{"K": "s3cr3t"})
	forbidSecrets(c)

	rels, err := s.ListReleases(ctx, "web")
	if err != nil {
		t.Fatalf("a viewer's list: %v", err)
	}
	if got := versions(rels); !slices.Equal(got, []int{2}) {
		t.Errorf("a viewer lists %v, want the record of v2", got)
	}
	r, err := s.GetReleaseRecord(ctx, "web", 2)
	if err != nil || r.Image != "img:2" || !slices.Equal(r.ConfigKeys, []string{"K"}) {
		t.Errorf("a viewer's GetReleaseRecord = %+v %v", r, err)
	}
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "secrets" && a.GetVerb() == "get" {
			t.Errorf("GetReleaseRecord of a new release read its Secret")
		}
	}
	if _, cfg, err := s.GetRelease(ctx, "web", 2); !kube.IsRBACDenial(err) || cfg != nil {
		t.Errorf("a viewer's GetRelease = %v %v, want refused", cfg, err)
	}
	if _, err := s.GetReleaseRecord(ctx, "web", 1); !kube.IsRBACDenial(err) {
		t.Errorf("a viewer's read of an old-form release = %v, want refused", err)
	}
}

// A release is made by two creates back to back, its config first: no
// other request (no read) between them, so a deploy pays one round trip
// more than with one Secret, and a release is never a record without
// its config.
func TestCreateReleaseIsTwoCreatesConfigFirst(t *testing.T) {
	s, c := newStore(t)
	mustCreateRelease(t, s, &Release{App: "web", Version: 1, Image: "i"}, ConfigMap{"K": "v"})
	var got []string
	for _, a := range c.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
	}
	if want := []string{"create secrets", "create configmaps"}; !slices.Equal(got, want) {
		t.Errorf("CreateRelease made %q, want %q", got, want)
	}
}
