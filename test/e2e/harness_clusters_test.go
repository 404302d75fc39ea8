package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"tug.dev/tug/test/faultproxy"
)

// Several clusters, as the multi-cluster tests fake them: kubeconfig
// contexts that all reach the one local cluster, each in a namespace of its
// own (two teams' contexts, or two clusters), plus contexts whose server
// answers nobody. tug's cluster map lives in a config file of the test's own
// (TUG_CONFIG).

// clusterContexts is a kubeconfig of such contexts and tug's config file.
type clusterContexts struct {
	h          *H
	Raw        *clientcmdapi.Config
	Kubeconfig string // the written kubeconfig, current context as given
	Current    string // its current context
	TugConfig  string
}

// newClusterContexts writes a kubeconfig in a temporary folder whose
// contexts are namespaces' names → namespace on the local cluster, and
// dead ones on https://127.0.0.1:1; current is its current context.
func (h *H) newClusterContexts(current string, namespaces map[string]string, dead ...string) *clusterContexts {
	h.t.Helper()
	raw, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		h.t.Fatal(err)
	}
	cur := raw.Contexts[raw.CurrentContext]
	raw.Contexts = map[string]*clientcmdapi.Context{}
	for name, ns := range namespaces {
		raw.Contexts[name] = &clientcmdapi.Context{Cluster: cur.Cluster, AuthInfo: cur.AuthInfo, Namespace: ns}
	}
	if len(dead) > 0 {
		raw.Clusters["dead"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", CertificateAuthorityData: raw.Clusters[cur.Cluster].CertificateAuthorityData}
	}
	for _, name := range dead {
		raw.Contexts[name] = &clientcmdapi.Context{Cluster: "dead", AuthInfo: cur.AuthInfo, Namespace: h.NS}
	}
	dir := h.t.TempDir()
	c := &clusterContexts{h: h, Raw: raw, Current: current, TugConfig: filepath.Join(dir, "tug", "config.yaml")}
	c.Kubeconfig = c.write(filepath.Join(dir, "kubeconfig"), current)
	return c
}

// write saves the contexts at path with current as the current context.
func (c *clusterContexts) write(path, current string) string {
	c.h.t.Helper()
	raw := *c.Raw
	raw.CurrentContext = current
	if err := clientcmd.WriteToFile(raw, path); err != nil {
		c.h.t.Fatal(err)
	}
	return path
}

// Env is the environment that makes tug use kubeconfig and the config file.
func (c *clusterContexts) Env(kubeconfig string) []string {
	return []string{"KUBECONFIG=" + kubeconfig, "TUG_CONFIG=" + c.TugConfig}
}

// Tug runs tug with the contexts' kubeconfig and config file.
func (c *clusterContexts) Tug(args ...string) Result {
	c.h.t.Helper()
	return c.h.TugRun(Run{Args: args, Env: c.Env(c.Kubeconfig)})
}

// Must is Tug that fails the test unless tug exits 0.
func (c *clusterContexts) Must(args ...string) Result {
	c.h.t.Helper()
	r := c.Tug(args...)
	if r.Code != 0 {
		c.h.t.Fatalf("tug %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// infoJSON runs `app info APP -o json`, which must succeed, and decodes
// its stdout into v; it returns the run (stderr holds any warning).
func (c *clusterContexts) infoJSON(appName string, v any) Result {
	c.h.t.Helper()
	r := c.Must("app", "info", appName, "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		c.h.t.Fatalf("app info -o json: %v\n%s", err, r)
	}
	return r
}

// proxiedContexts are the same contexts reached through a fault proxy,
// which brings its own credentials (dead contexts stay dead): a tug run
// through it can be killed at an exact request.
type proxiedContexts struct {
	c          *clusterContexts
	Proxy      *faultproxy.Proxy
	Kubeconfig string
}

// viaProxy starts a fault proxy (closed when the test ends) and writes a
// kubeconfig of c's contexts through it, with c's current context.
func (c *clusterContexts) viaProxy() *proxiedContexts {
	t := c.h.t
	t.Helper()
	proxy, err := faultproxy.Start(env.config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["faulty"] = &clientcmdapi.Cluster{Server: proxy.URL}
	cfg.AuthInfos["faulty"] = &clientcmdapi.AuthInfo{}
	for name, ctx := range c.Raw.Contexts {
		cluster := "faulty"
		if ctx.Cluster == "dead" {
			cluster, cfg.Clusters["dead"] = "dead", c.Raw.Clusters["dead"]
		}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: "faulty", Namespace: ctx.Namespace}
	}
	cfg.CurrentContext = c.Current
	path := filepath.Join(t.TempDir(), "kubeconfig-proxied")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return &proxiedContexts{c: c, Proxy: proxy, Kubeconfig: path}
}

// killAt runs tug with args through the proxy with rule as its only rule,
// waits until the proxy holds the request rule matches (what names that
// point), and kills tug with SIGKILL there: an exact kill point, with no
// sleep. It fails the test if tug ends by itself first, and returns what
// the killed tug printed on stderr.
func (p *proxiedContexts) killAt(what string, rule faultproxy.Rule, args ...string) string {
	p.c.h.t.Helper()
	return p.c.h.killAt(p.Proxy, p.c.Env(p.Kubeconfig), what, rule, args...)
}

// poolClusters are the move tests' clusters: contexts alpha (the test's
// namespace, Alpha) and beta (Beta's), whose pools pa and pb are the
// labels of the two real nodes (Nodes[0] and Nodes[1], restored when the
// test ends), and a current context third (Third's namespace, which holds
// nothing); dead contexts answer nobody. The tests that use it change
// nodes, so they run one at a time (newNodeH). The cluster map is the
// test's to write ('tug cluster add').
type poolClusters struct {
	*clusterContexts
	Alpha, Beta, Third *H
	Nodes              []string
}

func newPoolClusters(t *testing.T, dead ...string) *poolClusters {
	t.Helper()
	h := newNodeH(t)
	pc := &poolClusters{Alpha: h, Beta: h.Another(), Third: h.Another(), Nodes: h.realNodes()}
	for i, pool := range []string{"pa", "pb"} {
		h.keepNodeState(pc.Nodes[i])
		h.labelPool(pc.Nodes[i], pool)
	}
	pc.clusterContexts = h.newClusterContexts("third", map[string]string{"alpha": h.NS, "beta": pc.Beta.NS, "third": pc.Third.NS}, dead...)
	return pc
}

// dropLeases deletes the app's deploy lock in alpha and beta: a killed
// tug's, which would otherwise hold the next command off until it expires.
func (pc *poolClusters) dropLeases(appName string) {
	pc.h.t.Helper()
	for _, ns := range []string{pc.Alpha.NS, pc.Beta.NS} {
		err := pc.h.Client.CoordinationV1().Leases(ns).Delete(context.Background(), "tug-lock-"+appName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			pc.h.t.Fatal(err)
		}
	}
}

// holdsApp reports whether namespace ns holds the record of app appName.
func (h *H) holdsApp(ns, appName string) bool {
	h.t.Helper()
	_, err := h.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "tug-app-"+appName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Fatal(err)
	}
	return err == nil
}

// appLeftovers lists what of app appName namespace ns holds (kind/name):
// its ConfigMaps, Secrets, Deployments, Services, pods and lock Lease.
func (h *H) appLeftovers(ns, appName string) []string {
	h.t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName}
	var left []string
	// A failed list fails the test: "nothing left" must mean looked and found none.
	add := func(kind string, list runtime.Object, err error) {
		h.t.Helper()
		if err != nil {
			h.t.Fatalf("listing %ss in %s: %v", kind, ns, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, it := range items {
			o, err := meta.Accessor(it)
			if err != nil {
				h.t.Fatal(err)
			}
			left = append(left, kind+"/"+o.GetName())
		}
	}
	c := h.Client
	cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, sel)
	add("configmap", cms, err)
	secrets, err := c.CoreV1().Secrets(ns).List(ctx, sel)
	add("secret", secrets, err)
	deps, err := c.AppsV1().Deployments(ns).List(ctx, sel)
	add("deployment", deps, err)
	svcs, err := c.CoreV1().Services(ns).List(ctx, sel)
	add("service", svcs, err)
	pods, err := c.CoreV1().Pods(ns).List(ctx, sel)
	add("pod", pods, err)
	leases, err := c.CoordinationV1().Leases(ns).List(ctx, sel)
	add("lease", leases, err)
	return left
}

// appInfoJSON is the part of `app info -o json` these tests read.
type appInfoJSON struct {
	Name, Namespace, Pool string
	Release               int
	Move                  *struct{ Role, From, To, Pool string }
}

// moveSide is one end of a move between poolClusters: a cluster of the
// map, its namespace and pool, and the test's view of that namespace.
type moveSide struct {
	cluster, ns, pool string
	h                 *H
}

// moveInfo is `app info -o json` of an app that may be mid-move: what its
// record says and, when the Deployments run another release, what they run.
type moveInfo struct {
	appInfoJSON
	Image   string
	Running *struct {
		Releases []int
		Image    string
	}
}

// movingApp is an app the move tests move between alpha and beta of
// poolClusters, run with no --context, and through a fault proxy to be
// killed mid-move.
type movingApp struct {
	pc   *poolClusters
	px   *proxiedContexts
	name string
}

// holds reports whether namespace ns holds the app's record.
func (m *movingApp) holds(ns string) bool {
	m.pc.h.t.Helper()
	return m.pc.h.holdsApp(ns, m.name)
}

// leftovers is what of the app is left in ns (its lock Lease included).
func (m *movingApp) leftovers(ns string) []string {
	m.pc.h.t.Helper()
	return m.pc.h.appLeftovers(ns, m.name)
}

// info is `app info` with no --context: the copy that serves.
func (m *movingApp) info() (moveInfo, Result) {
	m.pc.h.t.Helper()
	var in moveInfo
	r := m.pc.infoJSON(m.name, &in)
	return in, r
}

// template is the release the Deployments in ns name in their pod
// templates, and the image they run.
func (m *movingApp) template(ns string) (int, string) {
	t := m.pc.h.t
	t.Helper()
	deps, err := m.pc.h.Client.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + m.name})
	if err != nil {
		t.Fatal(err)
	}
	release, image := 0, ""
	for _, d := range deps.Items {
		v, _ := strconv.Atoi(d.Spec.Template.Labels["tug.dev/release"])
		if release != 0 && v != release {
			t.Fatalf("deployments in %s on releases %d and %d", ns, release, v)
		}
		release, image = v, d.Spec.Template.Spec.Containers[0].Image
	}
	return release, image
}

// answers checks that one of the app's Services (alpha's or beta's)
// answers /version now, a few times over.
func (m *movingApp) answers() error {
	m.pc.h.t.Helper()
	var urls []string
	for _, ns := range []string{m.pc.Alpha.NS, m.pc.Beta.NS} {
		if s, err := m.pc.h.Client.CoreV1().Services(ns).Get(context.Background(), m.name, metav1.GetOptions{}); err == nil && s.Spec.ClusterIP != "" {
			urls = append(urls, "http://"+s.Spec.ClusterIP+"/version")
		}
	}
	for range 5 {
		ok := false
		var seen []string
		for _, u := range urls {
			code, body := status(u)
			if code == 200 {
				ok = true
				break
			}
			seen = append(seen, fmt.Sprintf("%s: %d %q", u, code, body))
		}
		if !ok {
			return fmt.Errorf("no copy answered: %v", seen)
		}
	}
	return nil
}

// dropLeases deletes the app's deploy lock in alpha and beta.
func (m *movingApp) dropLeases() {
	m.pc.h.t.Helper()
	m.pc.dropLeases(m.name)
}

// unitUIDs are the UIDs of the app's pods in ns that are not going, sorted.
func (m *movingApp) unitUIDs(ns string) []string {
	t := m.pc.h.t
	t.Helper()
	pods, err := m.pc.h.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + m.name})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil { // units of an earlier rollout may still be going
			uids = append(uids, string(p.UID))
		}
	}
	slices.Sort(uids)
	return uids
}

// killMove runs `app pool set APP pool` through the proxy and kills tug
// once the proxy holds the request rule matches (what names that point).
func (m *movingApp) killMove(what string, rule faultproxy.Rule, pool string) {
	m.pc.h.t.Helper()
	m.px.killAt(what, rule, "app", "pool", "set", m.name, pool)
}

// TugLogged is Tug with kubeconfig instead of the contexts' own, logging
// each run's exit code and how long it took.
func (c *clusterContexts) TugLogged(kubeconfig string, args ...string) Result {
	c.h.t.Helper()
	start := time.Now()
	r := c.h.TugRun(Run{Args: args, Env: c.Env(kubeconfig)})
	c.h.t.Logf("tug %s: exit %d in %s", strings.Join(args, " "), r.Code, time.Since(start).Round(100*time.Millisecond))
	return r
}

// where is the record of the copy `app info` with no --context reaches.
func (m *movingApp) where() appInfoJSON {
	m.pc.h.t.Helper()
	in, _ := m.whereRun()
	return in
}

// whereRun is where, and the run of app info (stderr holds any warning).
func (m *movingApp) whereRun() (appInfoJSON, Result) {
	m.pc.h.t.Helper()
	var in appInfoJSON
	r := m.pc.infoJSON(m.name, &in)
	return in, r
}

// deployments is the release the app's Deployments in ns run (the last
// one listed), and their generations by name.
func (m *movingApp) deployments(ns string) (int, map[string]int64) {
	t := m.pc.h.t
	t.Helper()
	deps, err := m.pc.h.Client.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + m.name})
	if err != nil {
		t.Fatal(err)
	}
	release, gens := 0, map[string]int64{}
	for _, d := range deps.Items {
		release, _ = strconv.Atoi(d.Spec.Template.Labels["tug.dev/release"])
		gens[d.Name] = d.Generation
	}
	return release, gens
}

// webPodUIDs are the UIDs of the app's web pods in ns, going ones too,
// sorted.
func (m *movingApp) webPodUIDs(ns string) []string {
	t := m.pc.h.t
	t.Helper()
	pods, err := m.pc.h.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + m.name + ",tug.dev/process=web"})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, p := range pods.Items {
		uids = append(uids, string(p.UID))
	}
	slices.Sort(uids)
	return uids
}

// createRecord writes app, an app record as tug keeps it, in namespace ns
// by hand: the copy a killed move would leave there.
func (m *movingApp) createRecord(ns string, app map[string]any) {
	m.pc.h.t.Helper()
	record, _ := json.Marshal(app)
	_, err := m.pc.h.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tug-app-" + m.name, Labels: map[string]string{
			"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": m.name, "tug.dev/app": m.name, "tug.dev/kind": "app"}},
		Data: map[string]string{"app.json": string(record)},
	}, metav1.CreateOptions{})
	if err != nil {
		m.pc.h.t.Fatal(err)
	}
}
