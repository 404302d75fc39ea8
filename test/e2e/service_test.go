package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// usePostgresImage names the local postgres image in the cluster settings
// (what an admin of a cluster with no internet does).
func (h *H) usePostgresImage(ref string) {
	h.t.Helper()
	cm, err := h.Client.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "tug-cluster-settings", metav1.GetOptions{})
	if err == nil && cm.Data["services.postgres.image"] == ref {
		return
	}
	h.mustTug("cluster", "settings", "set", "services.postgres.image="+ref)
}

// serviceVolume gives a service's claim a PersistentVolume of its own when
// the cluster has no default StorageClass to provision one (the local
// cluster's provisioner, cluster.sh, does).
func (h *H) serviceVolume(service string) {
	h.t.Helper()
	h.claimVolume("tug-service-" + service + "-data")
}

// claimVolume is serviceVolume for any claim of the test's namespace.
func (h *H) claimVolume(claim string) {
	h.t.Helper()
	ctx := context.Background()
	scs, err := h.Client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, sc := range scs.Items {
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			return
		}
	}
	dir, err := os.MkdirTemp("", "tug-e2e-svc-")
	if err != nil {
		h.t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o777)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: h.NS + "-" + claim, Labels: map[string]string{"tug.dev/e2e": "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: h.NS, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
		},
	}
	if _, err := h.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = h.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		_ = os.RemoveAll(dir)
	})
}

type serviceJSON struct {
	Name    string `json:"name"`
	Plan    string `json:"plan"`
	Version string `json:"version"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Host    string `json:"host"`
	Volume  string `json:"volume"`
	Used    string `json:"used"`
	Apps    []struct {
		App       string   `json:"app"`
		Variables []string `json:"variables"`
		Files     string   `json:"files"`
	} `json:"apps"`
}

func (h *H) serviceInfo(name string) serviceJSON {
	h.t.Helper()
	var s serviceJSON
	r := h.mustTug("service", "info", name, "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		h.t.Fatalf("service info -o json: %v\n%s", err, r)
	}
	return s
}

// webEnvNames are the variable names of the app's web Deployment.
func (h *H) webEnvNames(appName string) []string {
	h.t.Helper()
	d, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), appName+"-web", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		out = append(out, e.Name)
		if e.Value != "" && strings.Contains(e.Value, "postgresql://") {
			h.t.Errorf("a connection string in the Deployment's spec: %s", e.Name)
		}
	}
	return out
}

// routerBody waits until url, through the router, answers 200 with a body
// holding want (and not reject, when given), and returns the body.
func (h *H) routerBody(r router, url, want, reject string) string {
	h.t.Helper()
	var body string
	h.Eventually(60*time.Second, url+" answers "+want, func() (bool, error) {
		code, b, _, err := r.get(nil, url)
		if err != nil {
			return false, err
		}
		if code != 200 || !strings.Contains(b, want) || (reject != "" && strings.Contains(b, reject)) {
			return false, fmt.Errorf("got %d %q", code, b)
		}
		body = b
		return true, nil
	})
	return body
}

// rows is N of dbapp's "db ok rows=N".
func rows(t *testing.T, body string) int {
	t.Helper()
	_, after, ok := strings.Cut(body, "rows=")
	n, err := strconv.Atoi(strings.Fields(after + " ")[0])
	if !ok || err != nil {
		t.Fatalf("no rows=N in %q", body)
	}
	return n
}

// TestServicePostgresBoundToAnAppThroughTheRouter: a postgres service made
// from the built-in plan, bound to the dbapp app, which answers through the
// router with a row it wrote; a rollback to the release before the bind
// removes variables and files, and binding again works; a second service
// binds beside it under another prefix.
func TestServicePostgresBoundToAnAppThroughTheRouter(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	// everything below as a developer: the generated Role covers services
	h.Kubeconfig = adminRoleKubeconfig(t, h)
	const name = "dbshop"
	url := "http://" + r.appHost(name, h.NS) + "/"

	h.serviceVolume("db")
	h.serviceVolume("orders")
	res := h.mustTug("service", "create", "db", "--plan", "postgres", "-o", "json")
	var created serviceJSON
	if err := json.Unmarshal([]byte(res.Stdout), &created); err != nil || created.Status != "ready" || created.Host == "" {
		t.Fatalf("service create: %+v %v\n%s", created, err, res)
	}
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	before := h.releaseCount(name)

	h.mustTug("service", "bind", name, "db")
	if got := h.releaseCount(name); got != before+1 {
		t.Fatalf("bind made %d releases, want 1", got-before)
	}
	first := rows(t, h.routerBody(r, url, "db ok rows=", ""))
	h.routerBody(r, url+"bindings", "db type=postgresql keys=database,host,password,port,provider,type,uri,username", "")
	env := h.webEnvNames(name)
	for _, v := range []string{"DATABASE_URL", "DATABASE_HOST", "DATABASE_PASSWORD", "SERVICE_BINDING_ROOT"} {
		if !contains(env, v) {
			t.Errorf("the web units lack %s: %v", v, env)
		}
	}
	info := h.serviceInfo("db")
	if info.Used == "" || info.Volume != "tug-service-db-data" {
		t.Errorf("service info does not say how much of the volume is used: %+v", info)
	}
	if len(info.Apps) != 1 || info.Apps[0].App != name || !contains(info.Apps[0].Variables, "DATABASE_URL") || info.Apps[0].Files != "/bindings/db" {
		t.Errorf("service info after bind: %+v", info)
	}
	// info never shows a secret value; credentials --reveal does
	var creds struct {
		Values map[string]string `json:"values"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("service", "credentials", "db", "--reveal", "-o", "json").Stdout), &creds); err != nil || creds.Values["password"] == "" {
		t.Fatalf("credentials --reveal: %v %+v", err, creds)
	}
	for _, out := range []string{h.mustTug("service", "info", "db").Stdout, h.mustTug("service", "info", "db", "-o", "yaml").Stdout, h.mustTug("service", "credentials", "db").Stdout} {
		if strings.Contains(out, creds.Values["password"]) {
			t.Errorf("a password printed without --reveal:\n%s", out)
		}
	}

	// a rollback to the release before the bind removes the binding
	h.mustTug("release", "rollback", name, "v"+strconv.Itoa(before))
	if env := h.webEnvNames(name); contains(env, "DATABASE_URL") || contains(env, "SERVICE_BINDING_ROOT") {
		t.Errorf("after the rollback the units still get %v", env)
	}
	h.routerBody(r, url+"bindings", "", "type=postgresql")
	h.mustTug("service", "bind", name, "db")
	// the same database: the rows written before are there
	if n := rows(t, h.routerBody(r, url, "db ok rows=", "")); n <= first {
		t.Errorf("after binding again: rows=%d, want more than %d", n, first)
	}

	// a second service beside it, under another prefix
	h.mustTug("service", "create", "orders", "--plan", "postgres")
	rels := h.releaseCount(name)
	dry := h.mustTug("service", "bind", name, "orders", "--as", "ORDERS", "--dry-run")
	if !strings.Contains(dry.Stdout+dry.Stderr, "services: db as DATABASE -> db as DATABASE,orders as ORDERS") || h.releaseCount(name) != rels || contains(h.webEnvNames(name), "ORDERS_URL") {
		t.Errorf("bind --dry-run: says what would change, changes nothing:\n%s", dry)
	}
	h.mustTug("service", "bind", name, "orders", "--as", "ORDERS")
	env = h.webEnvNames(name)
	if !contains(env, "DATABASE_URL") || !contains(env, "ORDERS_URL") || !contains(env, "ORDERS_HOST") {
		t.Errorf("two bindings: %v", env)
	}
	h.routerBody(r, url+"bindings", "orders type=postgresql", "")
	h.routerBody(r, url, "db ok rows=", "")

	// remove is refused while bound, naming the app and how to unbind
	if res := h.Tug("service", "remove", "db", "--yes"); res.Code == 0 || !strings.Contains(res.Stderr, "tug service unbind "+name+" db") {
		t.Fatalf("remove while bound:\n%s", res)
	}
	if h.serviceInfo("db").Status != "ready" {
		t.Fatal("a refused remove changed the service")
	}
	h.mustTug("service", "unbind", name, "db")
	if res := h.Tug("service", "remove", "db"); res.Code == 0 {
		t.Fatalf("remove without --yes and no terminal went ahead:\n%s", res)
	}
	res = h.mustTug("service", "remove", "db", "--yes")
	if !strings.Contains(res.Stderr, "kept: PersistentVolumeClaim tug-service-db-data") {
		t.Errorf("remove does not say the volume stays:\n%s", res)
	}
	ctx := context.Background()
	if _, err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Get(ctx, "tug-service-db-data", metav1.GetOptions{}); err != nil {
		t.Errorf("the volume went with the service: %v", err)
	}
	if _, err := h.Client.AppsV1().StatefulSets(h.NS).Get(ctx, "tug-service-db", metav1.GetOptions{}); err == nil {
		t.Error("the StatefulSet is still there")
	}
	if res := h.Tug("service", "info", "db"); res.Code != 2 {
		t.Errorf("info of a removed service: %s", res)
	}
	// removing the app says which services stay
	res = h.mustTug("app", "remove", name, "--yes")
	if !strings.Contains(res.Stderr, "services orders stay") {
		t.Errorf("app remove with a bound service:\n%s", res)
	}
}

// TestServiceBadInputChangesNothing: a bind to a missing service, a bad
// plan name and a bad --as exit 2, and no release or object is made.
func TestServiceBadInputChangesNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "bad")
	h.mustTug("app", "deploy", "bad", "--image", sampleV1)
	before := h.releaseCount("bad")
	for _, args := range [][]string{
		{"service", "bind", "bad", "nosuch"},
		{"service", "create", "db", "--plan", "nosuch"},
		{"service", "create", "db", "--plan", "Bad_Plan"},
		{"service", "create", "Bad_Name", "--plan", "postgres"},
		{"service", "create", "db", "--plan", "postgres", "--version", "9"},
		{"service", "bind", "bad", "db", "--as", "lower"},
		{"service", "info", "nosuch"},
	} {
		if r := h.Tug(args...); r.Code != 2 {
			t.Errorf("tug %v: exit %d, want 2\n%s", args, r.Code, r)
		}
	}
	if got := h.releaseCount("bad"); got != before {
		t.Errorf("bad input made %d releases", got-before)
	}
	cms, err := h.Client.CoreV1().ConfigMaps(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/service"})
	if err != nil || len(cms.Items) != 0 {
		t.Errorf("bad input left service records: %v %v", err, cms)
	}
}

// TestServiceImageThatCannotBePulledFailsFast: a published plan whose image
// cannot be pulled fails the create in seconds, with the reason and the
// image-pull exit code.
func TestServiceImageThatCannotBePulledFailsFast(t *testing.T) {
	h := New(t)
	plan := strings.ReplaceAll(brokenPlan, "NAME", "nopull-"+h.NS[len(h.NS)-6:])
	file := filepath.Join(t.TempDir(), "plan.yaml")
	writeFiles(t, filepath.Dir(file), map[string]string{"plan.yaml": plan})
	planName := "nopull-" + h.NS[len(h.NS)-6:]
	h.mustTug("cluster", "plans", "set", "-f", file)
	t.Cleanup(func() { h.Tug("cluster", "plans", "remove", planName) })
	start := time.Now()
	r := h.Tug("service", "create", "x", "--plan", planName, "--timeout", "2m")
	if r.Code != 10 || !strings.Contains(r.Stderr, "cannot be pulled") {
		t.Fatalf("create from a plan whose image cannot be pulled: want exit 10 and the reason\n%s", r)
	}
	t.Logf("failed after %s", time.Since(start).Round(time.Second))
}

const brokenPlan = `name: NAME
description: a plan whose image is nowhere
type: postgresql
envPrefix: DATABASE
versions: ["1"]
images: {"1": "localhost/tug/no-such-image@sha256:0000000000000000000000000000000000000000000000000000000000000000"}
port: 5432
credentials: {generate: [password], values: {username: app}}
binding: {host: "{{.Host}}", uri: "postgresql://{{.Host}}"}
objects: |
  apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: "{{.Object}}"}
  spec:
    serviceName: "{{.Object}}"
    selector: {matchLabels: {tug.dev/service: "{{.Name}}"}}
    template:
      metadata: {labels: {tug.dev/service: "{{.Name}}"}}
      spec:
        containers:
        - {name: main, image: "{{.Image}}"}
  ---
  apiVersion: v1
  kind: Service
  metadata: {name: "{{.Object}}"}
  spec:
    selector: {tug.dev/service: "{{.Name}}"}
    ports: [{port: 5432}]
`
