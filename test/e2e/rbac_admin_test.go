package e2e

// The cluster admin roles of docs/rbac (issue 22): node remove and pool
// list work for an identity bound to exactly what the docs say, and that
// identity can write no Lease and read no ConfigMap outside the app
// namespaces it was bound in.

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"tug.dev/tug/pkg/kube"
)

// An operator bound to tug-cluster-admin (a ClusterRoleBinding) and to
// tug-cluster-admin-apps in the app's namespace (a RoleBinding, the one
// command tug prints when it is missing) removes a node holding an app's
// last ready unit: the unit's process is surged under the app's deploy
// lock, the unit evicted, the count restored, the Node deleted. Nothing
// here touches a real node: the node removed and the node the new unit
// "runs" on are registered-only Nodes, and the units on them are pods
// whose ready status the test sets, as no kubelet will.
func TestNodeRemoveAndPoolListWithTheDocumentedAdminRoles(t *testing.T) {
	h := newNodeH(t)
	ctx := context.Background()
	pool := "e2e-rbac-" + randSuffix()
	gone := h.liveFakeNode(pool)
	stays := h.liveFakeNode(pool)

	// An app placed in the pool. Its unit cannot be scheduled (no node of
	// the pool takes units), so the rollout fails; --no-rollback keeps
	// its Deployment at one unit, which is what node remove surges.
	h.mustTug("app", "create", "held", "--pool", pool)
	if r := h.Tug("app", "deploy", "held", "--image", sampleV1, "--no-rollback"); r.Code != 13 {
		t.Fatalf("deploy to a pool with no schedulable node: want exit 13 (unschedulable); %s", r)
	}
	h.readyUnitOn(gone, "held-web-on-"+gone, "held", "web")

	// The operator: a service account bound as docs/rbac says.
	opConfig, op := h.clusterAdminIdentity("operator")
	as := *h
	as.Kubeconfig = opConfig

	// Without tug-cluster-admin-apps in the app's namespace, removal stops
	// before changing anything and prints the one command that fixes it.
	r := as.Tug("node", "remove", gone, "--yes", "--force")
	bind := "kubectl create rolebinding tug-cluster-admin-apps --clusterrole=tug-cluster-admin-apps --serviceaccount=" + h.NS + ":operator -n " + h.NS
	if r.Code != 1 || !strings.Contains(r.Stderr, `namespace "`+h.NS+`" does not let you take it`) || !strings.Contains(r.Stderr, "app "+h.NS+"/held") ||
		!strings.Contains(r.Stderr, "nothing was changed") || !strings.HasSuffix(strings.TrimSpace(r.Stderr), bind) {
		t.Fatalf("remove without the apps role: want exit 1 ending with %q; got %s", bind, r)
	}
	if h.getNode(gone).Spec.Unschedulable {
		t.Fatal("a refused removal cordoned the node")
	}
	// doctor --all says the same of this namespace.
	if missing := doctorMissingIn(t, &as, "node", h.NS); len(missing) == 0 {
		t.Fatalf("doctor --all finds nothing missing for node in %s", h.NS)
	}

	// Run the command tug printed, as the cluster's admin.
	args := strings.Fields(bind)[1:]
	if out, err := exec.Command(kubectlPath(t), append([]string{"--kubeconfig", env.kubeconfig}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", bind, err, out)
	}
	if missing := doctorMissingIn(t, &as, "node", h.NS); len(missing) != 0 {
		t.Fatalf("doctor --all after the binding: node still misses %v in %s", missing, h.NS)
	}

	// pool list: the pool, both nodes, and the app, found from its
	// Deployment (the operator may not list ConfigMaps everywhere).
	if p := poolIn(t, &as, pool); !slices.Equal(p.Nodes, sorted(gone, stays)) || !slices.Equal(p.Apps, []string{h.NS + "/held"}) {
		t.Fatalf("pool list as the operator: %+v; want nodes %s, %s and app %s/held", p, gone, stays, h.NS)
	}

	// Removal: once the surge starts, a ready unit appears on the other
	// registered node (as the scheduler and a kubelet would make it).
	bg := as.startTug("node", "remove", gone, "--yes", "--force", "-o", "json")
	bg.WaitFor(t, "starting a unit on another node", 60*time.Second)
	h.readyUnitOn(stays, "held-web-on-"+stays, "held", "web")
	r = bg.Wait()
	if r.Code != 0 {
		t.Fatalf("node remove as the operator: %s", r)
	}
	var res struct {
		Evicted []struct{ Name, App, Process string }
		Surges  []struct {
			App, Process string
			From, To     int32
			Restored     bool
		}
		Deleted bool
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if len(res.Evicted) != 1 || res.Evicted[0].Name != "held-web-on-"+gone || !res.Deleted ||
		len(res.Surges) != 1 || res.Surges[0].From != 1 || res.Surges[0].To != 2 || !res.Surges[0].Restored {
		t.Fatalf("want the unit evicted after a surge 1 -> 2 that was restored, and the node deleted: %+v", res)
	}
	if _, err := h.Client.CoreV1().Nodes().Get(ctx, gone, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node %s still exists (err %v)", gone, err)
	}
	if _, err := h.Client.CoordinationV1().Leases(h.NS).Get(ctx, "tug-lock-held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the deploy lock was left behind (err %v)", err)
	}
	if p := poolIn(t, &as, pool); !slices.Equal(p.Nodes, []string{stays}) || !slices.Equal(p.Apps, []string{h.NS + "/held"}) {
		t.Fatalf("pool list after the removal: %+v", p)
	}

	// What the roles must not grant: Lease writes where the cluster keeps
	// node heartbeats and leader elections, ConfigMap reads outside the
	// app's namespace, the scale of someone else's Deployment. A name that
	// does not exist is asked for, so an allowed request would change
	// nothing: a 404, where RBAC answers 403.
	absent := "tug-e2e-absent-" + randSuffix()
	refused := map[string]error{}
	_, refused["update a Lease in kube-node-lease"] = op.CoordinationV1().Leases("kube-node-lease").Update(ctx,
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: absent, Namespace: "kube-node-lease"}}, metav1.UpdateOptions{})
	refused["delete a Lease in kube-node-lease"] = op.CoordinationV1().Leases("kube-node-lease").Delete(ctx, absent, metav1.DeleteOptions{})
	_, refused["update a Lease in kube-system"] = op.CoordinationV1().Leases("kube-system").Update(ctx,
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: absent, Namespace: "kube-system"}}, metav1.UpdateOptions{})
	_, refused["list ConfigMaps in every namespace"] = op.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
	_, refused["get a ConfigMap in kube-system"] = op.CoreV1().ConfigMaps("kube-system").Get(ctx, absent, metav1.GetOptions{})
	_, refused["get a Deployment's scale in kube-system"] = op.AppsV1().Deployments("kube-system").GetScale(ctx, absent, metav1.GetOptions{})
	for what, err := range refused {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the operator may %s: got %v, want 403 Forbidden", what, err)
		}
	}
	// and in the app's namespace it may take the lock (what removal did)
	if _, err := op.CoordinationV1().Leases(h.NS).Get(ctx, absent, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get a Lease in the app namespace: %v, want 404", err)
	}
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// readyUnitOn puts a pod that counts as a ready unit of app's proc on a
// registered-only node: bound there by name, tolerating the node's taints,
// its Ready status set by hand. No controller owns it (node remove needs
// --force for it), and no kubelet will ever change it.
func (h *H) readyUnitOn(node, name, app, proc string) {
	h.t.Helper()
	ctx := context.Background()
	p, err := h.Client.CoreV1().Pods(h.NS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": app, "tug.dev/app": app, "tug.dev/process": proc,
		}},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "web", Image: sampleV1, ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = h.Client.CoreV1().Pods(h.NS).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	if _, err := h.Client.CoreV1().Pods(h.NS).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// liveFakeNode registers a Node of pool that looks like one whose kubelet
// is alive, though none runs: Ready from its first status on, a Lease in
// kube-node-lease renewed until the test ends, and a NoSchedule taint so
// the scheduler binds no real unit to it. The pods the test puts on it
// stay as ready as it sets them: the node lifecycle controller marks a pod
// not ready when the pod appears on a Node it has seen not Ready, which a
// Node registered by `tug node add` is until a kubelet joins; whether it had
// seen the Node yet depended on how fast the test ran. Pods deleted on it
// are finished as its kubelet would.
func (h *H) liveFakeNode(pool string) string {
	h.t.Helper()
	ctx := context.Background()
	name := "tug-e2e-" + randSuffix()
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelPool: pool}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "tug.dev/e2e-no-kubelet", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "E2E", Message: "set by the e2e test; no kubelet", LastHeartbeatTime: now, LastTransitionTime: now}}},
	}
	if _, err := h.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	leases := h.Client.CoordinationV1().Leases("kube-node-lease")
	renew := func() error {
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: new(int32(40)), RenewTime: &now}}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	if err := renew(); err != nil {
		h.t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
				_ = renew() // a miss is made up by the next tick, well inside the 40 s
			}
		}
	}()
	go func() { defer func() { done <- struct{}{} }(); h.finishDeletedPodsOn(wctx, name) }()
	h.t.Cleanup(func() {
		cancel()
		<-done
		<-done
		_ = leases.Delete(context.Background(), name, metav1.DeleteOptions{})
		if err := h.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			h.t.Errorf("deleting registered node %s: %v", name, err)
		}
	})
	return name
}

// finishDeletedPodsOn does the kubelet's last part of a graceful deletion
// for the pods of h's namespace on a Node no kubelet runs: once a pod has
// its deletion timestamp, it is deleted with no grace period, until ctx
// ends.
func (h *H) finishDeletedPodsOn(ctx context.Context, node string) {
	pods := h.Client.CoreV1().Pods(h.NS)
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName=" + node}
	for ctx.Err() == nil {
		w, err := pods.Watch(ctx, opts)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
				_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &p.UID}})
			}
		}
		w.Stop()
	}
}

// clusterAdminIdentity makes a service account in h's namespace bound to
// the generated tug-cluster-admin ClusterRole (a ClusterRoleBinding,
// removed when the test ends) and to nothing else, and returns a
// kubeconfig and a client for it. tug-cluster-admin-apps is created but
// not bound: the test binds it the way tug says to.
func (h *H) clusterAdminIdentity(name string) (string, kubernetes.Interface) {
	h.t.Helper()
	ctx := context.Background()
	for _, f := range []string{"tug-cluster-admin-clusterrole.yaml", "tug-cluster-admin-apps-clusterrole.yaml"} {
		apply := exec.Command(kubectlPath(h.t), "--kubeconfig", env.kubeconfig, "apply", "-f", filepath.Join(repoRoot(), "docs/rbac", f))
		if out, err := apply.CombinedOutput(); err != nil {
			h.t.Fatalf("applying %s: %v\n%s", f, err, out)
		}
	}
	if _, err := h.Client.CoreV1().ServiceAccounts(h.NS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	crb := h.NS + "-" + name
	if _, err := h.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: crb, Labels: map[string]string{"tug.dev/e2e": "true"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "tug-cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: h.NS}},
	}, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		if err := h.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			h.t.Errorf("deleting ClusterRoleBinding %s: %v", crb, err)
		}
	})
	tok, err := h.Client.CoreV1().ServiceAccounts(h.NS).CreateToken(ctx, name, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(h.Kubeconfig)
	if err != nil {
		h.t.Fatal(err)
	}
	user := raw.Contexts[raw.CurrentContext].AuthInfo
	raw.AuthInfos[user].ClientCertificate, raw.AuthInfos[user].ClientKey = "", ""
	raw.AuthInfos[user].ClientCertificateData, raw.AuthInfos[user].ClientKeyData = nil, nil
	raw.AuthInfos[user].Token = tok.Status.Token
	path := filepath.Join(h.t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		h.t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		h.t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return path, client
}

type poolRow struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
	Apps  []string `json:"apps"`
}

// poolIn is pool list's row for pool, as h's identity sees it; the list
// must come without warnings (the apps were listed).
func poolIn(t *testing.T, h *H, pool string) poolRow {
	t.Helper()
	r := h.mustTug("pool", "list", "-o", "json")
	var out struct {
		Pools    []poolRow `json:"pools"`
		Warnings []string  `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if len(out.Warnings) != 0 {
		t.Fatalf("pool list warned: %v", out.Warnings)
	}
	for _, p := range out.Pools {
		if p.Name == pool {
			return p
		}
	}
	t.Fatalf("pool list has no pool %s: %s", pool, r.Stdout)
	return poolRow{}
}

// doctorMissingIn is what doctor --all says group lacks in namespace ns.
func doctorMissingIn(t *testing.T, h *H, group, ns string) []string {
	t.Helper()
	r := h.Tug("doctor", "--all", "-o", "json")
	var rep struct {
		Groups []struct {
			Name    string `json:"name"`
			Missing []struct {
				Verb, Resource, Subresource, Scope, Namespace string
			} `json:"missing"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, r)
	}
	var out []string
	for _, g := range rep.Groups {
		if g.Name != group {
			continue
		}
		for _, p := range g.Missing {
			if p.Namespace == ns {
				out = append(out, p.Verb+" "+p.Resource+"/"+p.Subresource)
			}
		}
	}
	return out
}
