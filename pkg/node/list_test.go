package node

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

func TestListSpansClustersAndReportsUnreachable(t *testing.T) {
	a := readyNode("a1", true)
	a.Labels[kube.LabelPool] = "web"
	prod := fake.NewClientset(a, readyNode("a2", false), unitPod("x", "shop", "web", "u1", "a1", true), unitPod("x", "shop", "web", "u2", "a1", false))
	gpu := fake.NewClientset(readyNode("g1", true))
	ts := []cluster.Target{
		{Cluster: cluster.Cluster{Name: "prod", Context: "p"}, Client: prod},
		{Cluster: cluster.Cluster{Name: "gpu", Context: "g"}, Client: gpu},
		{Cluster: cluster.Cluster{Name: "dead", Context: "d"}, Err: errors.New("cannot reach the cluster")},
	}
	res, err := List(context.Background(), ts, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range res.Nodes {
		names = append(names, n.Cluster+"/"+n.Name)
	}
	if got := strings.Join(names, ","); got != "gpu/g1,prod/a1,prod/a2" {
		t.Fatalf("nodes %s", got)
	}
	if *res.Nodes[1].Units != 2 || res.Nodes[1].Pool != "web" || res.Nodes[2].Status != StatusNotReady {
		t.Fatalf("a1/a2: %+v %+v", res.Nodes[1], res.Nodes[2])
	}
	if len(res.Unreachable) != 1 || res.Unreachable[0].Cluster != "dead" {
		t.Fatalf("unreachable %+v", res.Unreachable)
	}

	// By pool: label selector.
	res, err = List(context.Background(), ts[:1], ListOptions{Pool: "web"})
	if err != nil || len(res.Nodes) != 1 || res.Nodes[0].Name != "a1" {
		t.Fatalf("pool web: %+v %v", res, err)
	}
	// Every cluster failing is the command's failure.
	if _, err := List(context.Background(), ts[2:], ListOptions{}); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("all unreachable: %v", err)
	}
}

func TestFind(t *testing.T) {
	prod := fake.NewClientset(readyNode("a1", true))
	gpu := fake.NewClientset(readyNode("a1", true), readyNode("g1", true))
	ts := []cluster.Target{
		{Cluster: cluster.Cluster{Name: "prod"}, Client: prod},
		{Cluster: cluster.Cluster{Name: "gpu"}, Client: gpu},
	}
	ctx := context.Background()
	if f, err := Find(ctx, ts, "g1"); err != nil || f.Target.Name != "gpu" {
		t.Fatalf("g1: %+v %v", f, err)
	}
	var amb *AmbiguousError
	if _, err := Find(ctx, ts, "a1"); !errors.As(err, &amb) {
		t.Fatalf("a1 is in both: %v", err)
	}
	var nf *NotFoundError
	if _, err := Find(ctx, ts, "zz"); !errors.As(err, &nf) {
		t.Fatalf("zz: %v", err)
	}
	// By address.
	if f, err := Find(ctx, ts[1:], "10.0.0.9"); err != nil || f.Node.Name != "a1" {
		t.Fatalf("by address: %+v %v", f, err)
	}
}

func TestListPools(t *testing.T) {
	ctx := context.Background()
	n1 := readyNode("n1", true)
	n1.Labels[kube.LabelPool] = "web"
	n2 := readyNode("n2", true)
	n2.Labels[kube.LabelPool] = "web"
	n2.Spec.Unschedulable = true
	n3 := readyNode("n3", true) // no pool
	client := fake.NewClientset(n1, n2, n3)
	for ns, a := range map[string]*app.App{"team-a": {Name: "shop", Pool: "web"}, "team-b": {Name: "ml", Pool: "gpu"}, "team-c": {Name: "free"}} {
		a.Namespace = ns
		if err := (&app.Store{Client: client, Namespace: ns}).CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	ts := []cluster.Target{{Cluster: cluster.Cluster{Name: "prod", Pools: []string{"web", "batch"}}, Client: client}}
	res, err := ListPools(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Pool{}
	for _, p := range res.Pools {
		got[p.Name] = p
	}
	if len(got) != 3 {
		t.Fatalf("pools %+v; want web (nodes), gpu (an app), batch (configured)", res.Pools)
	}
	if w := got["web"]; strings.Join(w.Nodes, ",") != "n1,n2" || w.Ready != 1 || strings.Join(w.Apps, ",") != "team-a/shop" {
		t.Fatalf("web %+v", w)
	}
	if g := got["gpu"]; len(g.Nodes) != 0 || strings.Join(g.Apps, ",") != "team-b/ml" {
		t.Fatalf("gpu %+v: an app's pool with no node is listed", g)
	}
	if b := got["batch"]; b.Cluster != "prod" || len(b.Nodes) != 0 {
		t.Fatalf("batch %+v", b)
	}
}

// TestValidateRef (issue 12 item 8): a node argument that cannot name a
// node is an input error, found without a cluster.
func TestValidateRef(t *testing.T) {
	for _, ok := range []string{"node7", "ip-10-0-0-1.ec2.internal", "10.0.0.1", "fd00::1"} {
		if err := ValidateRef(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Bad_Name!", "a b", "node7/x"} {
		if err := ValidateRef(bad); !inputerr.Is(err) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

// TestUnitCountsAsTable: against an API server, units are counted from one
// Table of pods without the objects, served from the watch cache, with
// selectors that leave out runs, finished pods and unscheduled ones; a
// server that cannot print tables gets the paged pod LIST instead.
func TestUnitCountsAsTable(t *testing.T) {
	var podRequests []string
	tables := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" {
			t.Errorf("unexpected request %s", r.URL)
			http.NotFound(w, r)
			return
		}
		podRequests = append(podRequests, r.Header.Get("Accept")+" "+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if !tables || !strings.Contains(r.Header.Get("Accept"), "as=Table") {
			if strings.Contains(r.Header.Get("Accept"), "as=Table") {
				w.WriteHeader(http.StatusNotAcceptable)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable})
				return
			}
			list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{
				*unitPod("x", "shop", "web", "u1", "n1", true), *unitPod("x", "shop", "web", "u2", "n1", true), *unitPod("x", "shop", "web", "u3", "n2", true),
			}}
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		table := metav1.Table{
			TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
			ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name"}, {Name: "Ready"}, {Name: "Node"}},
			Rows: []metav1.TableRow{
				{Cells: []any{"u1", "1/1", "n1"}}, {Cells: []any{"u2", "0/1", "n1"}}, {Cells: []any{"u3", "1/1", "n2"}}, {Cells: []any{"u4", "0/1", "<none>"}},
			},
		}
		_ = json.NewEncoder(w).Encode(table)
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}

	counts, err := unitCounts(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 2 || counts["n1"] != 2 || counts["n2"] != 1 {
		t.Fatalf("counts %v, want n1:2 n2:1", counts)
	}
	if len(podRequests) != 1 {
		t.Fatalf("requests %q, want one", podRequests)
	}
	q, err := url.ParseQuery(strings.SplitN(podRequests[0], " ", 2)[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(podRequests[0], tableAccept+" ") || q.Get("resourceVersion") != "0" || q.Get("includeObject") != "None" ||
		q.Get("labelSelector") != unitSelector+",tug.dev/kind!=run" || q.Get("fieldSelector") != "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed" {
		t.Fatalf("request %q", podRequests[0])
	}

	tables, podRequests = false, nil
	counts, err = unitCounts(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 2 || counts["n1"] != 2 || counts["n2"] != 1 || len(podRequests) != 2 || strings.Contains(podRequests[1], "as=Table") {
		t.Fatalf("without tables: counts %v after %q", counts, podRequests)
	}
}
