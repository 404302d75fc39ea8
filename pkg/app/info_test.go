package app

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
)

func deployment(appName, proc string, ready int32) *appsv1.Deployment {
	l := kube.AppLabels(appName)
	l[kube.LabelProcess] = proc
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: appName + "-" + proc, Namespace: testNS, Labels: l},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

func webService(appName, clusterIP string) *corev1.Service {
	l := kube.AppLabels(appName)
	l[kube.LabelProcess] = WebProcess
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: testNS, Labels: l},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

func TestList(t *testing.T) {
	s, _ := newStore(t,
		deployment("shop", "web", 2),
		deployment("shop", "worker", 0),
		deployment("blog", "web", 1),
		deployment("ghost", "web", 5), // no app record: not listed
	)
	ctx := context.Background()
	created := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	mustCreateApp(t, s, &App{Name: "shop", Pool: "p", Team: "t", Release: 3, Image: "shop:3", CreatedAt: created,
		Processes: map[string]Process{"worker": {Replicas: 1}, "web": {Replicas: 3}}})
	mustCreateApp(t, s, &App{Name: "blog", Processes: map[string]Process{"web": {Replicas: 1}}})

	got, err := List(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "blog" || got[1].Name != "shop" {
		t.Fatalf("List = %+v", got)
	}
	shop := got[1]
	want := []ProcessSummary{{Name: "web", Desired: 3, Replicas: 3, Ready: 2}, {Name: "worker", Desired: 1, Replicas: 1, Ready: 0}}
	if !slices.Equal(shop.Processes, want) {
		t.Errorf("shop processes = %+v, want %+v", shop.Processes, want)
	}
	if shop.Release != 3 || shop.Image != "shop:3" || shop.Pool != "p" || shop.Team != "t" ||
		shop.Namespace != testNS || !shop.CreatedAt.Equal(created) {
		t.Errorf("shop = %+v", shop)
	}
	if b := got[0].Processes; len(b) != 1 || b[0].Ready != 1 {
		t.Errorf("blog processes = %+v", b)
	}
}

// The JSON shape is documented and kept stable: a list is [] when empty,
// never null, as Info.Addresses and ReleaseSummary.ConfigKeys already are.
func TestListJSONOfAppWithoutProcesses(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "fresh"})
	got, err := List(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), `"processes":null`) {
		t.Fatalf("processSummaries returns nil for an app without processes, so `tug app list -o json` shows \"processes\":null instead of []: %s", b)
	}
}

func TestGetInfo(t *testing.T) {
	s, _ := newStore(t,
		deployment("shop", "web", 2),
		deployment("shop", "worker", 1),
		deployment("shopx", "web", 9), // another app: not counted
		webService("shop", "10.0.0.7"),
	)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "shop", Description: "the shop", Release: 2, LastRelease: 3, Image: "shop:2",
		Processes: map[string]Process{"web": {Replicas: 2}, "worker": {Replicas: 1}}})
	mustCreateRelease(t, s, &Release{App: "shop", Version: 1, Image: "shop:1", Status: StatusSuperseded,
		Processes: map[string]string{"web": "./old"}}, ConfigMap{"A": "1"})
	mustCreateRelease(t, s, &Release{App: "shop", Version: 2, Image: "shop:2", Status: StatusDeployed, Kind: KindDeploy,
		Processes: map[string]string{"web": "./server", "worker": "./work"}}, ConfigMap{"A": "1", "B": "top-secret-b", "C": "3"})
	mustCreateRelease(t, s, &Release{App: "shop", Version: 3, Image: "shop:3", Status: StatusFailed, Kind: KindDeploy,
		Processes: map[string]string{"web": "./server"}}, ConfigMap{"A": "1", "B": "top-secret-b", "C": "3", "D": "4"})

	info, err := GetInfo(ctx, s, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if info.ConfigKeys != 3 {
		t.Errorf("ConfigKeys = %d, want 3 (the deployed release's, not the newest)", info.ConfigKeys)
	}
	want := []ProcessSummary{{Name: "web", Command: "./server", Desired: 2, Replicas: 2, Ready: 2}, {Name: "worker", Command: "./work", Desired: 1, Replicas: 1, Ready: 1}}
	if !slices.Equal(info.Processes, want) {
		t.Errorf("processes = %+v, want %+v", info.Processes, want)
	}
	if info.LastChange == nil || info.LastChange.Version != 3 || info.LastChange.Status != StatusFailed {
		t.Errorf("LastChange = %+v, want v3 failed", info.LastChange)
	}
	wantAddr := []string{"http://10.0.0.7:80", "http://shop.dev.svc:80"}
	if !slices.Equal(info.Addresses, wantAddr) {
		t.Errorf("addresses = %v, want %v", info.Addresses, wantAddr)
	}
	if info.Description != "the shop" || info.Release != 2 || info.Image != "shop:2" {
		t.Errorf("info = %+v", info)
	}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "top-secret-b") {
		t.Errorf("info JSON shows a config value: %s", b)
	}
	if !strings.Contains(string(b), `"configKeys":3`) {
		t.Errorf("info JSON lacks the key count: %s", b)
	}
}

func TestGetInfoAddresses(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{"no service", nil, []string{}},
		{"headless", webService("shop", "None"), []string{"http://shop.dev.svc:80"}},
		{"no cluster IP yet", webService("shop", ""), []string{"http://shop.dev.svc:80"}},
		{"IPv6", webService("shop", "fd00::7"), []string{"http://[fd00::7]:80", "http://shop.dev.svc:80"}},
		{"someone else's service", webService("other", "10.0.0.1"), []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := newStore(t)
			ctx := context.Background()
			if tt.svc != nil {
				tt.svc.Name = "shop" // same name, maybe another owner
				if _, err := c.CoreV1().Services(testNS).Create(ctx, tt.svc, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			mustCreateApp(t, s, &App{Name: "shop"})
			info, err := GetInfo(ctx, s, "shop")
			if err != nil {
				t.Fatal(err)
			}
			if info.Addresses == nil || !slices.Equal(info.Addresses, tt.want) {
				t.Errorf("addresses = %#v, want %#v", info.Addresses, tt.want)
			}
		})
	}
}

func TestGetInfoBeforeFirstDeploy(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "shop", LastRelease: 1})
	// config staged before any deploy: counted from the newest release
	mustCreateRelease(t, s, &Release{App: "shop", Version: 1, Status: StatusStaged, Kind: KindEnv}, ConfigMap{"A": "1", "B": "2"})
	info, err := GetInfo(ctx, s, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if info.ConfigKeys != 2 || info.LastChange == nil || info.LastChange.Kind != KindEnv {
		t.Errorf("info = %+v", info)
	}
	if _, err := GetInfo(ctx, s, "nope"); !IsNotFound(err) {
		t.Errorf("GetInfo(missing) = %v", err)
	}
}

func TestSummarizeRelease(t *testing.T) {
	r := &Release{Version: 4, Kind: KindRollback, Status: StatusDeployed, Image: "i", Message: "m", Author: "a",
		Processes: map[string]string{"worker": "w", "web": "s", "clock": "c"}, FailReason: "f"}
	got := SummarizeRelease(r)
	if !slices.Equal(got.Processes, []string{"web", "clock", "worker"}) {
		t.Errorf("processes = %v", got.Processes)
	}
	if got.ConfigKeys == nil {
		t.Error("ConfigKeys is nil, want [] in JSON")
	}
	if got.Version != 4 || got.Kind != KindRollback || got.Image != "i" || got.FailReason != "f" || got.Author != "a" {
		t.Errorf("summary = %+v", got)
	}
}

// app info shows a build env's names, never its values; the record keeps
// them for the next build.
func TestGetInfoHidesBuildEnvValues(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreateApp(t, s, &App{Name: "shop", Build: &BuildSettings{Builder: "b", BuildEnv: []string{"NPM_TOKEN=s3cret", "MODE=prod"}}})
	info, err := GetInfo(ctx, s, "shop")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(info)
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "prod") || !strings.Contains(string(b), `"buildEnv":["NPM_TOKEN","MODE"]`) {
		t.Errorf("info %s", b)
	}
	a, err := s.GetApp(ctx, "shop")
	if err != nil || a.Build.BuildEnv[0] != "NPM_TOKEN=s3cret" {
		t.Errorf("the record lost its build env: %+v, %v", a.Build, err)
	}
}
