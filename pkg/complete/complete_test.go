package complete

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

const ns = "dev"

func unit(appName, proc, name string) *corev1.Pod {
	l := kube.AppLabels(appName)
	l[kube.LabelProcess] = proc
	l[kube.LabelRelease] = "1"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: proc, Image: appName + ":1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: proc, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

func fixture(t *testing.T, objs ...runtime.Object) (*app.Store, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	s := &app.Store{Client: cs, Namespace: ns}
	ctx := context.Background()
	for _, a := range []*app.App{
		{Name: "shop", Description: "the\tshop", Processes: map[string]app.Process{"web": {Replicas: 2}, "worker": {Replicas: 1, Stopped: true}}},
		{Name: "blog"},
	} {
		if err := s.CreateApp(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for v := 1; v <= 3; v++ {
		kind := "deploy"
		if v == 2 {
			kind = "env"
		}
		if err := s.CreateRelease(ctx, &app.Release{App: "shop", Version: v, Kind: kind, Status: app.StatusDeployed}, app.ConfigMap{}); err != nil {
			t.Fatal(err)
		}
	}
	return s, cs
}

func TestAppLists(t *testing.T) {
	s, _ := fixture(t, unit("shop", "web", "shop-web-1"), unit("shop", "worker", "shop-worker-1"), unit("blog", "web", "blog-web-1"))
	ctx := context.Background()
	check := func(what string, got []string, err error, want ...string) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %q, %v; want %q", what, got, err, want)
		}
	}
	got, err := Apps(ctx, s)
	check("apps", got, err, "blog", "shop\tthe shop")
	got, err = Processes(ctx, s, "shop")
	check("processes", got, err, "web\t2 units", "worker\tstopped")
	got, err = Units(ctx, s.Client, ns, "shop", "")
	check("units", got, err, "shop-web-1\tweb started", "shop-worker-1\tworker started")
	got, err = Units(ctx, s.Client, ns, "shop", "worker")
	check("units of a process", got, err, "shop-worker-1\tworker started")
	got, err = Releases(ctx, s, "shop")
	check("releases", got, err, "v3\tdeploy, deployed", "v2\tenv, deployed", "v1\tdeploy, deployed")
	if _, err := Processes(ctx, s, "nope"); err == nil {
		t.Error("processes of a missing app: no error")
	}
}

func TestListsFailQuietlyWithTheError(t *testing.T) {
	s, cs := fixture(t)
	cs.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	if got, err := Apps(context.Background(), s); err == nil || got != nil {
		t.Errorf("got %q, %v; want the error and no candidates", got, err)
	}
	if got, err := Namespaces(context.Background(), cs); err == nil || got != nil {
		t.Errorf("namespaces: got %q, %v", got, err)
	}
}

func TestNamespaces(t *testing.T) {
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "staging"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}})
	got, err := Namespaces(context.Background(), cs)
	if err != nil || !reflect.DeepEqual(got, []string{"dev", "staging"}) {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestKubeconfigAndClusters(t *testing.T) {
	cfg := &clientcmdapi.Config{
		Contexts: map[string]*clientcmdapi.Context{"prod": {Cluster: "c1", Namespace: "shop"}, "dev": {Cluster: "c2"}},
		Clusters: map[string]*clientcmdapi.Cluster{"c1": {Server: "https://c1:6443"}},
	}
	if got := Contexts(cfg); !reflect.DeepEqual(got, []string{"dev\tc2", "prod\tc1, namespace shop"}) {
		t.Errorf("contexts: %q", got)
	}
	if got := KubeconfigClusters(cfg); !reflect.DeepEqual(got, []string{"c1\thttps://c1:6443"}) {
		t.Errorf("kubeconfig clusters: %q", got)
	}
	tug := &cluster.Config{Clusters: []cluster.Cluster{{Name: "edge", Context: "prod"}}}
	if got := Clusters(tug); !reflect.DeepEqual(got, []string{"edge\tcontext prod"}) {
		t.Errorf("tug clusters: %q", got)
	}
}

func TestNodesAndPools(t *testing.T) {
	node := func(name, pool string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelPool: pool}}}
	}
	cs := fake.NewClientset(node("w1", "gpu"), node("w2", "gpu"), node("w3", "web"))
	ts := []cluster.Target{{Cluster: cluster.Cluster{Name: "edge"}, Client: cs, Namespace: ns}}
	got, err := Nodes(context.Background(), ts)
	if err != nil || !reflect.DeepEqual(got, []string{"w1\tedge gpu", "w2\tedge gpu", "w3\tedge web"}) {
		t.Errorf("nodes: %q, %v", got, err)
	}
	got, err = Pools(context.Background(), ts)
	if err != nil || !reflect.DeepEqual(Filter(got, "g"), []string{"gpu\t2 nodes"}) || len(got) != 2 {
		t.Errorf("pools: %q, %v", got, err)
	}
}

func TestFilter(t *testing.T) {
	got := Filter([]string{"shop\tthe shop", "site", "blog\tsh"}, "sh")
	if !reflect.DeepEqual(got, []string{"shop\tthe shop"}) {
		t.Errorf("got %q: the prefix applies to the value only", got)
	}
	if got := Filter(nil, ""); got == nil || len(got) != 0 {
		t.Errorf("no candidates: %#v, want an empty list", got)
	}
}

// With clusters configured: every cluster's apps, asked at once; a
// cluster that fails is left out; an app in two (an unfinished move) is
// listed once, naming both.
func TestAppsOfClusters(t *testing.T) {
	ctx := context.Background()
	stores := map[string]*app.Store{}
	add := func(kubeContext string, apps ...*app.App) *fake.Clientset {
		cs := fake.NewClientset()
		s := &app.Store{Client: cs, Namespace: ns}
		for _, a := range apps {
			if err := s.CreateApp(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		stores[kubeContext] = s
		return cs
	}
	clusters := []cluster.Cluster{{Name: "alpha", Context: "ctx-a"}, {Name: "beta", Context: "ctx-b"}, {Name: "dead", Context: "ctx-d"}}
	// The first three lists wait until all three have started: asked one
	// after another, the first would wait for ever (bounded here).
	var (
		mu      sync.Mutex
		calls   int
		all     = make(chan struct{})
		barrier = func() error {
			mu.Lock()
			calls++
			if calls == len(clusters) {
				close(all)
			}
			n := calls
			mu.Unlock()
			if n > len(clusters) {
				return nil
			}
			select {
			case <-all:
				return nil
			case <-time.After(5 * time.Second):
				return errors.New("the clusters were not asked at once")
			}
		}
	)
	for i, cs := range []*fake.Clientset{
		add("ctx-a", &app.App{Name: "shop", Description: "the shop"}, &app.App{Name: "blog"}),
		add("ctx-b", &app.App{Name: "shop"}, &app.App{Name: "api", Description: "the api"}),
		add("ctx-d", &app.App{Name: "ghost"}),
	} {
		dead := i == 2
		cs.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			if err := barrier(); err != nil {
				return true, nil, err
			}
			if dead {
				return true, nil, errors.New("connection refused")
			}
			return false, nil, nil
		})
	}
	store := func(kubeContext string) (*app.Store, error) { return stores[kubeContext], nil }
	got, err := AppsOfClusters(ctx, clusters, store)
	want := []string{"api\tbeta: the api", "blog\talpha", "shop\talpha, beta: the shop"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	// none answers: the error, and no candidates
	got, err = AppsOfClusters(ctx, clusters[2:], store)
	if err == nil || got != nil {
		t.Errorf("no cluster answers: got %q, %v", got, err)
	}
	// a store that cannot be made counts as a cluster that does not answer
	got, err = AppsOfClusters(ctx, clusters[:1], func(string) (*app.Store, error) { return nil, errors.New("no such context") })
	if err == nil || got != nil {
		t.Errorf("no store: got %q, %v", got, err)
	}
}

func cronJob(appName, job, schedule string, suspended bool) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: render.CronJobName(appName, job), Namespace: ns, Labels: render.JobLabels(appName, job)},
		Spec:       batchv1.CronJobSpec{Schedule: schedule, Suspend: &suspended},
	}
}

// An app's jobs come from its CronJobs, named without "APP-job-", in one
// LIST; another app's jobs and CronJobs tug did not make are left out.
func TestJobs(t *testing.T) {
	foreign := cronJob("shop", "backup", "@daily", false)
	foreign.Name = "backup"
	delete(foreign.Labels, kube.LabelManagedBy)
	_, cs := fixture(t,
		cronJob("shop", "report", "0 3 * * *", false),
		cronJob("shop", "cleanup", "*/5 * * * *", true),
		cronJob("shop-job", "x", "@hourly", false),
		cronJob("blog", "digest", "@weekly", false),
		foreign,
	)
	cs.ClearActions()
	got, err := Jobs(context.Background(), cs, ns, "shop")
	want := []string{"cleanup\t*/5 * * * *, suspended", "report\t0 3 * * *"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if a := cs.Actions(); len(a) != 1 || a[0].GetVerb() != "list" || a[0].GetResource().Resource != "cronjobs" {
		t.Errorf("requests %v, want one LIST of cronjobs", a)
	}
	if got, err := Jobs(context.Background(), cs, ns, "nope"); err != nil || len(got) != 0 {
		t.Errorf("an app without jobs: %q, %v", got, err)
	}
	cs.PrependReactor("list", "cronjobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	if got, err := Jobs(context.Background(), cs, ns, "shop"); err == nil || got != nil {
		t.Errorf("a failing LIST: got %q, %v; want the error and no candidates", got, err)
	}
}
