package e2e

// A release is two objects of one name: its record, a ConfigMap a viewer
// may read, and its config values, a Secret a viewer may not (issue 38).
// Releases of the old form, one Secret holding both, keep working.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/test/faultproxy"
)

func releaseObjectName(appName string, v int) string {
	return fmt.Sprintf("tug-release-%s-v%d", appName, v)
}

func rowVersions(rows []releaseRow) []int {
	var out []int
	for _, r := range rows {
		out = append(out, r.Version)
	}
	return out
}

// A viewer reads the release history, list and info, and never a config
// value: not on stdout, not on stderr, not in any ConfigMap it may read;
// env get --show-values stays the developer's.
func TestAccessViewerReadsReleaseHistory(t *testing.T) {
	h := New(t)
	const secret = "viewer-must-never-see-5e2d91"
	h.deployShop("web", 1, "API_TOKEN="+secret)
	h.mustTug("env", "set", "web", "OTHER=also-"+secret)
	h.mustTug("access", "add", "vic", "--role", "viewer")
	want := rowVersions(h.releases("web"))
	if len(want) < 2 || want[len(want)-1] != 1 {
		t.Fatalf("the fixture's releases: %v", want)
	}

	noValue := func(what string, r Result) {
		t.Helper()
		if strings.Contains(r.Stdout+r.Stderr, secret) {
			t.Errorf("%s shows a config value: %s", what, r)
		}
	}
	r := h.as("vic", "release", "list", "web")
	if r.Code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf("v%d *", want[0])) {
		t.Errorf("viewer release list: %s", r)
	}
	noValue("viewer release list", r)
	r = h.as("vic", "release", "list", "web", "-o", "json")
	var rows []releaseRow
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil || !slices.Equal(rowVersions(rows), want) {
		t.Errorf("viewer release list -o json: %v %v, want versions %v; %s", err, rowVersions(rows), want, r)
	}
	noValue("viewer release list -o json", r)
	for _, v := range want {
		for _, args := range [][]string{{"release", "info", "web", fmt.Sprintf("v%d", v)}, {"release", "info", "web", fmt.Sprintf("v%d", v), "-o", "json"}} {
			r := h.as("vic", args...)
			if r.Code != 0 || !strings.Contains(r.Stdout, "API_TOKEN") {
				t.Errorf("viewer %v: want the config's keys; %s", args, r)
			}
			noValue(fmt.Sprint("viewer ", args), r)
		}
	}
	refused(t, h.as("vic", "env", "get", "web", "--show-values"), "viewer env get --show-values", "developer")
	if r := h.as("vic", "app", "events", "web"); r.Code != 0 || strings.Contains(r.Stderr, "not shown") {
		t.Errorf("viewer app events: want the release lines; %s", r)
	}
	// what a viewer may read: no ConfigMap holds a value
	cms, err := h.Client.CoreV1().ConfigMaps(h.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(cms); strings.Contains(string(b), secret) {
		t.Errorf("a ConfigMap of the namespace holds a config value")
	}
}

// toOldForm rewrites every release of an app into the form tug stored
// before the split, as a cluster upgraded from it holds them: one
// immutable Secret per release, the config its data, the record (labels
// and annotations) in its metadata, and no record ConfigMap. It returns
// the versions rewritten.
func (h *H) toOldForm(appName string) []int {
	h.t.Helper()
	ctx := context.Background()
	cms, err := h.Client.CoreV1().ConfigMaps(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/kind=release,tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []int
	for _, cm := range cms.Items {
		sec, err := h.Client.CoreV1().Secrets(h.NS).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		immutable := true
		old := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Labels: cm.Labels, Annotations: cm.Annotations},
			Type:       corev1.SecretTypeOpaque, Immutable: &immutable, Data: sec.Data,
		}
		if err := h.Client.CoreV1().ConfigMaps(h.NS).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
			h.t.Fatal(err)
		}
		if err := h.Client.CoreV1().Secrets(h.NS).Delete(ctx, sec.Name, metav1.DeleteOptions{}); err != nil {
			h.t.Fatal(err)
		}
		if _, err := h.Client.CoreV1().Secrets(h.NS).Create(ctx, old, metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
		var v int
		fmt.Sscanf(cm.Labels["tug.dev/release"], "%d", &v)
		out = append(out, v)
	}
	return out
}

// releaseForm says which form release v of an app is stored in: "split"
// (record ConfigMap and config Secret), "old" (one Secret with the
// record), or what else is there.
func (h *H) releaseForm(appName string, v int) string {
	h.t.Helper()
	ctx := context.Background()
	name := releaseObjectName(appName, v)
	_, cmErr := h.Client.CoreV1().ConfigMaps(h.NS).Get(ctx, name, metav1.GetOptions{})
	sec, secErr := h.Client.CoreV1().Secrets(h.NS).Get(ctx, name, metav1.GetOptions{})
	switch {
	case cmErr == nil && secErr == nil && sec.Labels["tug.dev/kind"] == "release-config" && sec.Annotations["tug.dev/release"] == "":
		return "split"
	case apierrors.IsNotFound(cmErr) && secErr == nil && sec.Annotations["tug.dev/release"] != "":
		return "old"
	case apierrors.IsNotFound(cmErr) && secErr == nil:
		return "config only"
	case apierrors.IsNotFound(cmErr) && apierrors.IsNotFound(secErr):
		return "none"
	}
	return fmt.Sprintf("record %v, secret %v", cmErr, secErr)
}

// A cluster holding releases of the old form, as before the upgrade:
// they are listed, read, superseded and rolled back to with no migration
// step, the rollback's units get the old release's config, and new
// releases are stored split beside them. A viewer lists the split ones.
func TestReleaseOldFormKeepsWorking(t *testing.T) {
	h := New(t)
	const oldValue, laterValue = "from-the-old-form-41c7", "later-old-form-8d2e"
	h.deployShop("web", 1, "GREETING="+oldValue)
	vOld := h.appInfo("web").Release
	h.mustTug("app", "deploy", "web", "--image", sampleV2)
	h.mustTug("env", "set", "web", "GREETING="+laterValue)
	h.waitUnits("web", "web", 1, sampleV2)
	converted := h.toOldForm("web")
	vLast := h.appInfo("web").Release
	if len(converted) < 3 || h.releaseForm("web", vLast) != "old" {
		t.Fatalf("the fixture: %v rewritten, v%d is %s", converted, vLast, h.releaseForm("web", vLast))
	}
	rows := h.releases("web")
	if len(rows) != len(converted) || rows[0].Version != vLast || rows[0].Status != "deployed" {
		t.Fatalf("release list of the old form: %+v", rows)
	}
	if r := h.mustTug("release", "info", "web", fmt.Sprintf("v%d", vOld)); !strings.Contains(r.Stdout, "GREETING") {
		t.Errorf("release info of the old form: %s", r)
	}

	// a new release beside them, split; the old one it supersedes says so
	h.mustTug("env", "set", "web", "NEW=1")
	vNew := h.appInfo("web").Release
	if f := h.releaseForm("web", vNew); f != "split" {
		t.Errorf("a release made now is %s, want split", f)
	}
	if got := h.releasesByVersion("web")[vLast].Status; got != "superseded" || h.releaseForm("web", vLast) != "old" {
		t.Errorf("the old-form release it replaced: %s, stored %s", got, h.releaseForm("web", vLast))
	}

	// back to the old form's first deployed release: its image and config
	h.mustTug("release", "rollback", "web", fmt.Sprintf("v%d", vOld))
	web := h.waitUnits("web", "web", 1, sampleV1)
	if got := podEnv(t, web[0], "GREETING"); got != oldValue {
		t.Errorf("GREETING after the rollback to the old form's v%d = %q, want %q", vOld, got, oldValue)
	}
	rows = h.releases("web")
	if rows[0].Kind != "rollback" || rows[0].Status != "deployed" || rows[0].Image != sampleV1 || h.releaseForm("web", rows[0].Version) != "split" {
		t.Errorf("the rollback: %+v, stored %s", rows[0], h.releaseForm("web", rows[0].Version))
	}

	// a viewer lists the split releases (the old form is a Secret)
	h.mustTug("access", "add", "vic", "--role", "viewer")
	r := h.as("vic", "release", "list", "web", "-o", "json")
	var seen []releaseRow
	if err := json.Unmarshal([]byte(r.Stdout), &seen); err != nil || !slices.Equal(rowVersions(seen), []int{rows[0].Version, vNew}) {
		t.Errorf("viewer release list over a mixed history: %v, want v%d v%d; %s", rowVersions(seen), rows[0].Version, vNew, r)
	}
	// and is told that the others are not listed, not shown a history
	// that reads as whole
	if !strings.Contains(r.Stderr, "note: releases stored before tug kept release records in ConfigMaps are one Secret each") {
		t.Errorf("viewer release list over a mixed history does not say releases are missing:\n%s", r.Stderr)
	}
}

// tug killed, through the fault proxy, at the two points of a release's
// create: while its record's create is held back (the config Secret
// made, no record), and once the server has made the record. Neither
// blocks the next change, and the history and the units agree.
func TestKill9BetweenReleaseConfigAndRecord(t *testing.T) {
	h := New(t)
	h.deployShop("web", 1)
	f := h.faulty()
	extra := []string{"KUBECONFIG=" + f.kubeconfig}
	last := h.releases("web")[0].Version

	held := faultproxy.Rule{Method: "POST", Path: "/configmaps", Body: "tug.dev/release", Fault: faultproxy.Stall}
	h.killAt(f.p, extra, "the release record's create, held back", held, "app", "deploy", "web", "--image", sampleV2)
	h.dropLease("web")
	if got := h.releaseForm("web", last+1); got != "config only" {
		t.Fatalf("after the kill before the record, v%d is %s, want its config only", last+1, got)
	}
	if rows := h.releases("web"); rows[0].Version != last {
		t.Errorf("config with no record is listed: %v", rowVersions(rows))
	}
	// the next change takes the number and makes the release
	h.mustTug("app", "deploy", "web", "--image", sampleV2)
	if rows := h.releases("web"); rows[0].Version != last+1 || rows[0].Status != "deployed" || h.releaseForm("web", last+1) != "split" {
		t.Errorf("the deploy after the kill: %+v, stored %s", rows[0], h.releaseForm("web", last+1))
	}
	h.settledAndTruthful("web")

	made := faultproxy.Rule{Method: "POST", Path: "/configmaps", Body: "tug.dev/release", Fault: faultproxy.Lost}
	h.killAt(f.p, extra, "the release record made, tug not told", made, "app", "deploy", "web", "--image", sampleV1)
	h.dropLease("web")
	if got := h.releaseForm("web", last+2); got != "split" {
		t.Fatalf("after the kill once the record was made, v%d is %s", last+2, got)
	}
	h.mustTug("app", "scale", "web", "web=1")
	h.settledAndTruthful("web")
	h.mustTug("app", "deploy", "web", "--image", sampleV1)
	if rows := h.releases("web"); rows[0].Version != last+3 || rows[0].Status != "deployed" {
		t.Errorf("a deploy after both kills: %+v", rows[0])
	}
	h.settledAndTruthful("web")
}
