package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tugapp "tug.dev/tug/pkg/app"
)

// releaseInfoJSON is what the promote tests read of release info -o json.
type releaseInfoJSON struct {
	Version      int    `json:"version"`
	Kind         string `json:"kind"`
	Status       string `json:"status"`
	Image        string `json:"image"`
	ImageDigest  string `json:"imageDigest"`
	ConfigKeys   []string
	PromotedFrom *struct {
		Context   string `json:"context"`
		Namespace string `json:"namespace"`
		App       string `json:"app"`
		Release   int    `json:"release"`
		Digest    string `json:"digest"`
	} `json:"promotedFrom"`
}

// digest is the digest the release runs: its image's, else the one its
// units reported.
func (r releaseInfoJSON) digest() string {
	if _, d, ok := strings.Cut(r.Image, "@"); ok {
		return d
	}
	return r.ImageDigest
}

func (h *H) releaseInfo(appName string, v int) releaseInfoJSON {
	h.t.Helper()
	r := h.mustTug("release", "info", appName, fmt.Sprintf("v%d", v), "-o", "json")
	var out releaseInfoJSON
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		h.t.Fatalf("release info -o json: %v\n%s", err, r.Stdout)
	}
	return out
}

// buildStaging deploys app "site" in h's namespace from the static site's
// source with the static builder: an image in the local registry, by digest.
func buildStaging(t *testing.T, h *H, reg string) releaseInfoJSON {
	t.Helper()
	src := copyDir(t, filepath.Join(repoRoot(), "examples", "static-site"))
	h.mustTug("app", "create", "site")
	h.mustTug("env", "set", "site", "--no-restart", "STAGING_ONLY=s3")
	r := h.TugRun(Run{Args: []string{"app", "deploy", "site", "--timeout", "2m", "--builder", reg + "/tug/builder-static:v1",
		"--repository", reg + "/e2e/" + h.NS + "/site"}, Dir: src})
	if r.Code != 0 {
		t.Fatalf("staging deploy from source: %s", r)
	}
	in := h.appInfo("site")
	rel := h.releaseInfo("site", in.Release)
	if !strings.HasPrefix(rel.digest(), "sha256:") {
		t.Fatalf("staging's release runs no digest: %+v", rel)
	}
	return rel
}

// Staging built from source, promoted to prod in another namespace: prod
// runs the same digest, keeps its config and units, and its release says
// where it came from; --dry-run changes nothing; bad input exits 2; a
// per-stage build env is refused without --force; a promote to another
// repository copies the image there by digest.
func TestPromoteStagingToProd(t *testing.T) {
	staging := New(t)
	reg := registryForBuilds(t, true)
	prod := staging.Another()
	src := buildStaging(t, staging, reg)

	prod.deployShop("shop", 2, "PROD_ONLY=p1")
	before := prod.releases("shop")
	dst := prod.NS + "/shop"

	// bad input: exit 2, nothing changed
	for _, args := range [][]string{
		{"app", "promote", "nosuch", dst, "--yes"},
		{"app", "promote", "site", "site", "--yes"},
		{"app", "promote", "site", staging.NS + "/site", "--yes"},
		{"app", "promote", "site", "Bad_Name", "--yes"},
	} {
		if r := staging.Tug(args...); r.Code != 2 {
			t.Errorf("tug %v: want exit 2: %s", args, r)
		}
	}

	if after := prod.releases("shop"); len(after) != len(before) {
		t.Fatalf("bad input made a release: %v -> %v", before, after)
	}
	dry := staging.Tug("app", "promote", "site", dst, "--dry-run")
	if dry.Code != 0 || !strings.Contains(dry.Stdout, "config only in the source (not copied): STAGING_ONLY") ||
		!strings.Contains(dry.Stdout, "config only in the target (kept): PROD_ONLY") || strings.Contains(dry.Stdout, "s3") {
		t.Fatalf("dry run:\n%s", dry)
	}
	if after := prod.releases("shop"); len(after) != len(before) {
		t.Fatalf("--dry-run made a release: %v -> %v", before, after)
	}
	if r := staging.Tug("app", "promote", "site", dst); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Errorf("a piped promote without --yes: %s", r)
	}

	r := staging.Tug("app", "promote", "site", dst, "--yes", "-o", "json", "--timeout", "2m")
	if r.Code != 0 {
		t.Fatalf("promote: %s", r)
	}
	var res struct {
		Source  struct{ Digest string }
		Rollout struct {
			Release int
			Status  string
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("promote -o json: %v\n%s", err, r.Stdout)
	}
	if res.Source.Digest != src.digest() || res.Rollout.Status != "deployed" {
		t.Fatalf("promote result: %+v, want digest %s", res, src.digest())
	}
	got := prod.releaseInfo("shop", res.Rollout.Release)
	if got.digest() != src.digest() || got.Kind != "promote" || got.PromotedFrom == nil ||
		got.PromotedFrom.Namespace != staging.NS || got.PromotedFrom.App != "site" || got.PromotedFrom.Release != src.Version {
		t.Fatalf("prod's release: %+v; want digest %s from %s/site v%d", got, src.digest(), staging.NS, src.Version)
	}
	if strings.Join(got.ConfigKeys, ",") != "PROD_ONLY" {
		t.Errorf("prod's config keys: %v, want its own PROD_ONLY only", got.ConfigKeys)
	}
	prod.waitUnits("shop", "web", 2, got.Image)
	if v := prod.mustTug("env", "get", "shop", "PROD_ONLY", "--show-values"); !strings.Contains(v.Stdout, "p1") {
		t.Errorf("prod's config: PROD_ONLY=%q", v.Stdout)
	}
	if list := prod.Tug("release", "list", "shop"); !strings.Contains(list.Stdout, "promoted from "+staging.NS+"/site v") {
		t.Errorf("release list does not say where the release came from:\n%s", list)
	}
	// run again (a retried CI job): nothing to do, no release
	if again := staging.Tug("app", "promote", "site", dst, "--yes"); again.Code != 0 || !strings.Contains(again.Stderr, "nothing to promote") {
		t.Errorf("promote again: %s", again)
	}
	if n := len(prod.releases("shop")); n != len(before)+1 {
		t.Errorf("promote again made a release: %d releases", n)
	}

	// a build env the two apps set otherwise: refused without --force
	prod.setBuildEnv("shop", "API_URL=https://prod.example")
	refused := staging.Tug("app", "promote", "site", dst, "--yes")
	if refused.Code != 2 || !strings.Contains(refused.Stderr, "API_URL") || strings.Contains(refused.Stderr, "prod.example") {
		t.Fatalf("a per-stage build env was not refused by name: %s", refused)
	}
	if n := len(prod.releases("shop")); n != len(before)+1 {
		t.Errorf("the refused promote made a release: %d releases", n)
	}
	if r := staging.Tug("app", "promote", "site", dst, "--yes", "--force", "--timeout", "2m"); r.Code != 0 {
		t.Fatalf("promote --force: %s", r)
	}

	// another kubeconfig context (here: the same cluster, another namespace)
	cc := staging.newClusterContexts("staging", map[string]string{"staging": staging.NS, "prod": prod.NS})
	x := staging.TugRun(Run{Args: []string{"app", "promote", "site", "shop", "--to-context", "prod", "--yes", "--force", "--timeout", "2m"}, Env: cc.Env(cc.Kubeconfig)})
	if x.Code != 0 {
		t.Fatalf("promote --to-context: %s", x)
	}
	if rel := prod.releaseInfo("shop", prod.appInfo("shop").Release); rel.PromotedFrom == nil || rel.PromotedFrom.Context != "staging" || rel.digest() != src.digest() {
		t.Errorf("the release promoted across contexts: %+v", rel)
	}

	// a context of another name that reaches the same cluster and
	// namespace is the source itself: refused, exit 2, no release
	siteBefore := staging.appInfo("site").Release
	self := staging.TugRun(Run{Args: []string{"app", "promote", "site", "site", "--to-context", "prod", "-n", staging.NS, "--yes", "--timeout", "2m"}, Env: cc.Env(cc.Kubeconfig)})
	if self.Code != 2 || !strings.Contains(self.Stderr, "the target is the source") {
		t.Errorf("promote to a context alias of the source: %s", self)
	}
	if got := staging.appInfo("site").Release; got != siteBefore {
		t.Errorf("the source went from v%d to v%d on a refused promote to itself", siteBefore, got)
	}

	// another repository: the image is copied there by digest
	repo := reg + "/e2e/" + prod.NS + "/copied"
	prod.mustTug("app", "create", "copy")
	c := staging.Tug("app", "promote", "site", prod.NS+"/copy", "--to-repository", repo, "--yes", "--timeout", "2m")
	if c.Code != 0 || !strings.Contains(c.Stderr, "copied "+reg+"/e2e/"+staging.NS+"/site@"+src.digest()+" to "+repo+"@"+src.digest()) {
		t.Fatalf("promote with a copy: %s", c)
	}
	resp, err := http.Get("http://" + reg + "/v2/e2e/" + prod.NS + "/copied/manifests/" + src.digest())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the copied repository has no manifest %s: %s", src.digest(), resp.Status)
	}
	in := prod.appInfo("copy")
	if rel := prod.releaseInfo("copy", in.Release); rel.digest() != src.digest() || !strings.HasPrefix(rel.Image, repo+"@") {
		t.Errorf("the copy's release runs %s (%s), want %s@%s", rel.Image, rel.ImageDigest, repo, src.digest())
	}
}

// setBuildEnv stands in for a CNB deploy with --build-env: the build env is
// what such a deploy remembers on the app's record.
func (h *H) setBuildEnv(appName, kv string) {
	h.t.Helper()
	ctx := context.Background()
	cms := h.Client.CoreV1().ConfigMaps(h.NS)
	cm, err := cms.Get(ctx, "tug-app-"+appName, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(cm.Data["app.json"]), &rec); err != nil {
		h.t.Fatalf("app record: %v (%v)", err, cm.Data)
	}
	rec["build"] = map[string]any{"buildEnv": []string{kv}}
	b, _ := json.Marshal(rec)
	cm.Data["app.json"] = string(b)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// review up makes a copy that answers at its own URL with the new code
// while the app answers with the old; again, it deploys over it; review
// down leaves nothing; an expired review app goes at the next review list;
// bad input exits 2 with nothing made.
func TestReviewApps(t *testing.T) {
	h := New(t)
	rt := h.localRouter()
	h.deployShop("shop", 1, "SECRET=prod-secret", "MODE=prod")

	for _, args := range [][]string{
		{"review", "up", "nosuch", "--name", "pr-1", "--image", sampleV2},
		{"review", "up", "shop", "--name", "PR_1", "--image", sampleV2},
		{"review", "up", "shop", "--name", "pr-1", "--ttl", "-1h", "--image", sampleV2},
		{"review", "up", "shop", "--image", sampleV2},
	} {
		if r := h.Tug(args...); r.Code != 2 {
			t.Errorf("tug %v: want exit 2: %s", args, r)
		}
	}
	if n := len(h.appList()); n != 1 {
		t.Fatalf("bad input made apps: %d apps", n)
	}

	up := func(img string) string {
		t.Helper()
		r := h.Tug("review", "up", "shop", "--name", "pr-1", "--image", img, "--review-override", "MODE=review", "-o", "json", "--timeout", "2m")
		if r.Code != 0 {
			t.Fatalf("review up: %s", r)
		}
		var e struct{ App, URL string }
		if err := json.Unmarshal([]byte(r.Stdout), &e); err != nil || e.App != "shop-pr-1" || e.URL == "" {
			t.Fatalf("review up -o json: %v\n%s", err, r.Stdout)
		}
		return e.URL
	}
	url := up(sampleV2)
	base := "http://" + rt.appHost("shop", h.NS) + "/"
	roots := clusterCA(t, h.Config)
	answers := func(u, version string) {
		t.Helper()
		h.Eventually(60*time.Second, u+" answers "+version, func() (bool, error) {
			code, body, _, err := rt.get(roots, u)
			return err == nil && code == 200 && strings.Contains(body, version), nil
		})
	}
	answers(url, "v2")
	answers(base, "v1")
	pods := h.waitUnits("shop-pr-1", "web", 1, sampleV2)
	if v := podEnv(t, pods[0], "SECRET"); v != "" {
		t.Errorf("the review app got the app's secret without --copy-config: %q", v)
	}
	if v := podEnv(t, pods[0], "MODE"); v != "review" {
		t.Errorf("the review override: MODE=%q", v)
	}
	// again: the new commit is deployed over it
	if again := up(sampleV1); again != url {
		t.Errorf("the review app's URL changed: %s -> %s", url, again)
	}
	answers(url, "v1")

	// an expired review app goes at the next review list
	if r := h.Tug("review", "up", "shop", "--name", "pr-2", "--image", sampleV2, "--ttl", "1s", "--no-wait"); r.Code != 0 {
		t.Fatalf("review up pr-2: %s", r)
	}
	h.Eventually(60*time.Second, "review list removes the expired pr-2", func() (bool, error) {
		r := h.Tug("review", "list", "-o", "json")
		return r.Code == 0 && !strings.Contains(r.Stdout, "shop-pr-2") && strings.Contains(r.Stdout, "shop-pr-1"), nil
	})
	h.assertNoObjectsOf("shop-pr-2")

	if r := h.Tug("review", "down", "shop", "--name", "pr-1"); r.Code != 2 {
		t.Errorf("review down without --yes, piped: %s", r)
	}
	if r := h.Tug("review", "down", "shop", "--name", "pr-1", "--yes"); r.Code != 0 {
		t.Fatalf("review down: %s", r)
	}
	h.assertNoObjectsOf("shop-pr-1")
	answers(base, "v1")
}

// appList is app list -o json's names.
func (h *H) appList() []string {
	h.t.Helper()
	r := h.mustTug("app", "list", "-o", "json")
	var apps []struct{ Name string }
	if err := json.Unmarshal([]byte(r.Stdout), &apps); err != nil {
		h.t.Fatalf("app list -o json: %v\n%s", err, r.Stdout)
	}
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.Name
	}
	return names
}

// assertNoObjectsOf checks with kubectl that nothing labelled as appName's
// is left in the namespace, and nothing named after it either.
func (h *H) assertNoObjectsOf(appName string) {
	h.t.Helper()
	kinds := "deployments,replicasets,services,secrets,configmaps,cronjobs,ingresses,httproutes,horizontalpodautoscalers,networkpolicies,leases"
	h.Eventually(90*time.Second, "no object of "+appName+" left", func() (bool, error) {
		byLabel := h.kubectl("get", kinds+",pods", "-n", h.NS, "-l", "tug.dev/app="+appName, "-o", "name")
		all := h.kubectl("get", kinds+",pods", "-n", h.NS, "-o", "name")
		for _, l := range strings.Fields(all) {
			if strings.Contains(l, appName) {
				return false, nil
			}
		}
		return strings.TrimSpace(byLabel) == "", nil
	})
}

func (h *H) kubectl(args ...string) string {
	h.t.Helper()
	out, err := exec.Command(kubectlPath(h.t), append([]string{"--kubeconfig", env.kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		h.t.Fatalf("kubectl %v: %v: %s", args, err, out)
	}
	return string(out)
}

// A promote and a review up killed with SIGKILL once their release is
// stored: the next run of the same command completes it (the lease's
// expiry stood in for by deleting it, as TestKill9DuringDeploy does).
func TestKill9DuringPromoteAndReviewUp(t *testing.T) {
	staging := New(t)
	reg := registryForBuilds(t, true)
	prod := staging.Another()
	src := buildStaging(t, staging, reg)
	prod.deployShop("shop", 1)
	last := prod.appInfo("shop").Release

	// run runs the command; the release is looked for in h's namespace
	killWhenStored := func(run, h *H, appName string, v int, args ...string) {
		t.Helper()
		cmd := exec.Command(env.tug, args...)
		cmd.Env = run.tugEnv(nil)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		h.Eventually(2*time.Minute, fmt.Sprintf("release v%d of %s stored", v, appName), func() (bool, error) {
			_, err := h.Client.CoreV1().Secrets(h.NS).Get(context.Background(), tugapp.ReleaseSecretName(appName, v), metav1.GetOptions{})
			return err == nil, nil
		})
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait() // killed: its error says so
		err := h.Client.CoordinationV1().Leases(h.NS).Delete(context.Background(), "tug-lock-"+appName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	promote := []string{"app", "promote", "site", prod.NS + "/shop", "--yes", "--timeout", "2m"}
	killWhenStored(staging, prod, "shop", last+1, promote...)
	if r := staging.Tug(promote...); r.Code != 0 {
		t.Fatalf("promote after the kill: %s", r)
	}
	in := prod.appInfo("shop")
	if rel := prod.releaseInfo("shop", in.Release); rel.digest() != src.digest() || rel.Kind != "promote" {
		t.Errorf("prod after the second promote runs %+v, want %s", rel, src.digest())
	}
	for _, r := range prod.releases("shop") {
		if r.Status == "pending" {
			t.Errorf("release v%d of prod is still pending", r.Version)
		}
	}

	// review up, killed once the review app's first release is stored
	// (of an app of the sample image: shop runs the site's commands now)
	prod.deployShop("cart", 1)
	up := []string{"review", "up", "cart", "--name", "pr-9", "--image", sampleV2, "--timeout", "2m"}
	killWhenStored(prod, prod, "cart-pr-9", 1, up...)
	if r := prod.Tug(up...); r.Code != 0 {
		t.Fatalf("review up after the kill: %s", r)
	}
	prod.waitUnits("cart-pr-9", "web", 1, sampleV2)
	for _, r := range prod.releases("cart-pr-9") {
		if r.Status == "pending" {
			t.Errorf("release v%d of the review app is still pending", r.Version)
		}
	}
	if r := prod.Tug("review", "down", "cart", "--name", "pr-9", "--yes"); r.Code != 0 {
		t.Fatalf("review down: %s", r)
	}
	prod.assertNoObjectsOf("cart-pr-9")
}

// A pipeline kept on its apps' records: status shows how far each next
// stage is behind, promote moves the image one stage on.
func TestPipelineSetStatusPromote(t *testing.T) {
	dev := New(t)
	reg := registryForBuilds(t, true)
	staging, prod := dev.Another(), dev.Another()
	src := buildStaging(t, dev, reg)
	staging.deployShop("shop", 1)
	prod.deployShop("shop", 1)
	stages := []string{dev.NS + "/site", staging.NS + "/shop", prod.NS + "/shop"}

	if r := dev.Tug(append([]string{"pipeline", "set", "shop", dev.NS + "/nosuch"}, stages[1:]...)...); r.Code != 2 {
		t.Errorf("a pipeline with a missing app: %s", r)
	}
	if r := staging.Tug("pipeline", "status", "shop"); r.Code != 2 {
		t.Errorf("status of a pipeline no app has: %s", r)
	}
	var set struct {
		Name    string   `json:"name"`
		Stages  []string `json:"stages"`
		Removed []string `json:"removed"`
	}
	r := dev.mustTug(append([]string{"pipeline", "set", "shop", "-o", "json"}, stages...)...)
	if err := json.Unmarshal([]byte(r.Stdout), &set); err != nil || set.Name != "shop" || !slices.Equal(set.Stages, stages) || set.Removed == nil || len(set.Removed) != 0 {
		t.Errorf("pipeline set -o json: %v %+v\n%s", err, set, r.Stdout)
	}

	status := func(h *H) []struct {
		Stage      string
		Digest     string
		NextBehind *int
	} {
		t.Helper()
		r := h.mustTug("pipeline", "status", "shop", "-o", "json")
		var out []struct {
			Stage      string
			Digest     string
			NextBehind *int
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || len(out) != 3 {
			t.Fatalf("pipeline status -o json: %v\n%s", err, r.Stdout)
		}
		return out
	}
	s := status(prod) // any stage's namespace reads it
	if s[0].Stage != stages[0] || s[0].Digest != src.digest() || *s[0].NextBehind != -1 || s[2].NextBehind != nil {
		t.Fatalf("status before a promote: %+v", s)
	}
	if r := dev.Tug("pipeline", "promote", "shop", prod.NS, "--yes"); r.Code != 2 || !strings.Contains(r.Stderr, "last") {
		t.Errorf("promote of the last stage: %s", r)
	}
	if r := dev.Tug("pipeline", "promote", "shop", dev.NS, "--yes", "--timeout", "2m"); r.Code != 0 {
		t.Fatalf("pipeline promote dev: %s", r)
	}
	s = status(dev)
	// staging ran the sample prod runs before the promote: prod is one
	// image behind when staging's release of it recorded the digest prod
	// records. A loaded image's ID is what each node's runtime reports,
	// and the nodes imported the sample each on its own: units on
	// different nodes may report different IDs, and then prod runs none
	// of staging's images (-1), as status says.
	var stagingRels []struct {
		Version     int    `json:"version"`
		ImageDigest string `json:"imageDigest"`
	}
	if err := json.Unmarshal([]byte(staging.mustTug("release", "list", "shop", "-o", "json").Stdout), &stagingRels); err != nil {
		t.Fatal(err)
	}
	wantBehind := -1
	for _, r := range stagingRels {
		if r.Version == 1 && s[2].Digest != "" && r.ImageDigest == s[2].Digest {
			wantBehind = 1
		}
	}
	if *s[0].NextBehind != 0 || s[1].Digest != src.digest() || *s[1].NextBehind != wantBehind {
		t.Fatalf("status after promoting dev: %+v (next behind %d, %d; want 0, %d)\n%s\nstaging's releases:\n%s", s, *s[0].NextBehind, *s[1].NextBehind, wantBehind,
			dev.Tug("pipeline", "status", "shop").Stdout, staging.Tug("release", "list", "shop", "-o", "json").Stdout)
	}
	if r := dev.Tug("pipeline", "promote", "shop", staging.NS+"/shop", "--yes", "--timeout", "2m"); r.Code != 0 {
		t.Fatalf("pipeline promote staging: %s", r)
	}
	s = status(staging)
	if s[2].Digest != src.digest() || *s[1].NextBehind != 0 {
		t.Fatalf("status after promoting staging: %+v", s)
	}
	table := dev.mustTug("pipeline", "status", "shop")
	if !strings.Contains(table.Stdout, "0 (same digest)") || !strings.Contains(table.Stdout, staging.NS+"/shop v") {
		t.Errorf("pipeline status:\n%s", table.Stdout)
	}
}

// review up --source builds the pull request's folder with the app's
// build settings into a repository of the review's own, and its URL
// answers with the new code while the app's answers with the old.
func TestReviewAppFromSource(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	rt := h.localRouter()
	buildStaging(t, h, reg)
	pr := copyDir(t, filepath.Join(repoRoot(), "examples", "static-site"))
	writeFiles(t, pr, map[string]string{"message.txt": "Pull request one\n"})
	r := h.TugRun(Run{Args: []string{"review", "up", "site", "--name", "pr-1", "--source", pr, "--timeout", "2m", "-o", "json"}, Dir: pr})
	if r.Code != 0 {
		t.Fatalf("review up --source: %s", r)
	}
	var e struct{ URL string }
	if err := json.Unmarshal([]byte(r.Stdout), &e); err != nil || e.URL == "" {
		t.Fatalf("review up -o json: %v\n%s", err, r.Stdout)
	}
	roots := clusterCA(t, h.Config)
	answers := func(u, text string) {
		t.Helper()
		h.Eventually(60*time.Second, u+" answers "+text, func() (bool, error) {
			code, body, _, err := rt.get(roots, u)
			return err == nil && code == 200 && strings.Contains(body, text), nil
		})
	}
	answers(e.URL, "Pull request one")
	answers("http://"+rt.appHost("site", h.NS)+"/", "Hello from a build")
	rel := h.releaseInfo("site-pr-1", h.appInfo("site-pr-1").Release)
	if want := reg + "/e2e/" + h.NS + "/site-pr-1@"; !strings.HasPrefix(rel.Image, want) {
		t.Errorf("the review build pushed to %s, want %s...", rel.Image, want)
	}
	if strings.Join(rel.ConfigKeys, ",") != "" {
		t.Errorf("the review app got the app's config without --copy-config: %v", rel.ConfigKeys)
	}
	h.mustTug("review", "down", "site", "--name", "pr-1", "--yes")
	h.assertNoObjectsOf("site-pr-1")
	if r := h.Tug("review", "down", "site", "--name", "pr-1", "--yes"); r.Code != 0 || !strings.Contains(r.Stderr, "does not exist") {
		t.Errorf("review down again: %s", r)
	}
}
