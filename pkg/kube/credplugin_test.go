package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestTranslateMissingCredentialPlugin goes through client-go's real exec
// authenticator: a kubeconfig user whose exec command is not on PATH must
// read as a missing plugin, not as an unreachable cluster.
func TestTranslateMissingCredentialPlugin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the request reached the server: %s", r.URL)
	}))
	defer srv.Close()
	t.Setenv("PATH", t.TempDir())
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host: srv.URL,
		ExecProvider: &clientcmdapi.ExecConfig{
			Command:         "tug-test-no-such-login",
			APIVersion:      "client.authentication.k8s.io/v1",
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Pods("dev").List(context.Background(), metav1.ListOptions{})
	if err == nil {
		t.Fatal("listing with a missing credential plugin succeeded")
	}
	got := TranslateError(err).Error()
	want := "the kubeconfig's credential plugin tug-test-no-such-login is not installed; install it, put it on PATH, or check --context and --user"
	if got != want {
		t.Errorf("got  %q\nwant %q\n(from %q)", got, want, err)
	}
	if strings.Contains(got, "cannot reach") {
		t.Errorf("still reads as a network failure: %q", got)
	}
}

func TestTranslateFailedCredentialPlugin(t *testing.T) {
	err := TranslateError(&urlErr{"exec: executable aws failed with exit code 255"})
	want := "the kubeconfig's credential plugin aws failed with exit code 255; run it by hand to see why, or check --context and --user"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}

type urlErr struct{ s string }

func (e *urlErr) Error() string { return e.s }
