package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestVersionsWithServer(t *testing.T) {
	cs := fake.NewClientset()
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &apimachineryversion.Info{
		GitVersion: "v1.34.4", Platform: "linux/amd64", GoVersion: "go1.24.6",
	}
	res, err := Versions(context.Background(), func() (kubernetes.Interface, error) { return cs, nil }, false)
	if err != nil {
		t.Fatal(err)
	}
	want := ServerInfo{Version: "v1.34.4", Platform: "linux/amd64", GoVersion: "go1.24.6"}
	if res.Server == nil || *res.Server != want {
		t.Errorf("server = %+v, want %+v", res.Server, want)
	}
	if res.Client.GoVersion == "" {
		t.Error("client half missing")
	}
}

func TestVersionsClientOnlyNeverBuildsAClient(t *testing.T) {
	res, err := Versions(context.Background(), func() (kubernetes.Interface, error) {
		t.Fatal("client built for --client")
		return nil, nil
	}, true)
	if err != nil || res.Server != nil {
		t.Errorf("got %+v, %v", res, err)
	}
}

func TestVersionsServerUnreachableKeepsClient(t *testing.T) {
	cs := fake.NewClientset()
	cs.Discovery().(*fakediscovery.FakeDiscovery).PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("boom")
	})
	res, err := Versions(context.Background(), func() (kubernetes.Interface, error) { return cs, nil }, false)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error %v, want the server failure", err)
	}
	if res.Server != nil || res.Client.Platform == "" {
		t.Errorf("got %+v", res)
	}
}
