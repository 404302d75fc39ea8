package session

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream"
)

func TestParseProtocol(t *testing.T) {
	for in, want := range map[string]Protocol{"": ProtocolAuto, "auto": ProtocolAuto, "websocket": ProtocolWebSocket, " SPDY ": ProtocolSPDY} {
		if got, err := ParseProtocol(in); err != nil || got != want {
			t.Errorf("ParseProtocol(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseProtocol("http2"); err == nil {
		t.Error("an unknown protocol must be refused")
	}
}

func TestShouldFallback(t *testing.T) {
	upgrade := &httpstream.UpgradeFailureError{Cause: errors.New("403")}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{upgrade, true},
		{fmt.Errorf("dial: %w", upgrade), true},
		{errors.New("proxy: unknown scheme: https"), true},
		{errors.New("command terminated with non-zero exit code"), false},
		{errors.New("connection reset by peer"), false},
	} {
		if got := shouldFallback(c.err); got != c.want {
			t.Errorf("shouldFallback(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestNewExecutorHonoursTheProtocol(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	u, _ := url.Parse("https://127.0.0.1:1/api/v1/namespaces/n/pods/p/exec")
	for p, want := range map[Protocol]string{
		ProtocolAuto:      "*remotecommand.FallbackExecutor",
		ProtocolWebSocket: "*remotecommand.wsStreamExecutor",
		ProtocolSPDY:      "*remotecommand.spdyStreamExecutor",
	} {
		ex, err := newExecutor(cfg, u, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%T", ex); got != want {
			t.Errorf("protocol %q: executor %s, want %s", p, got, want)
		}
	}
}

func TestStreamURLs(t *testing.T) {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "https://cluster.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	r := &Remote{Client: client}
	tgt := Target{Namespace: "ns", Pod: "web-1", Container: "web"}
	var in, out bytes.Buffer
	got := r.execURL(tgt, []string{"ls", "-l"}, Streams{Stdin: &in, Stdout: &out, Stderr: &out, TTY: true})
	want := "https://cluster.invalid/api/v1/namespaces/ns/pods/web-1/exec?command=ls&command=-l&container=web&stdin=true&stdout=true&tty=true"
	if got.String() != want {
		t.Errorf("exec with a TTY (no separate stderr):\n got %s\nwant %s", got, want)
	}
	got = r.execURL(tgt, []string{"env"}, Streams{Stdout: &out, Stderr: &out})
	want = "https://cluster.invalid/api/v1/namespaces/ns/pods/web-1/exec?command=env&container=web&stderr=true&stdout=true"
	if got.String() != want {
		t.Errorf("exec without stdin:\n got %s\nwant %s", got, want)
	}
	got = r.attachURL(tgt, Streams{Stdin: &in, Stdout: &out, Stderr: &out})
	want = "https://cluster.invalid/api/v1/namespaces/ns/pods/web-1/attach?container=web&stderr=true&stdin=true&stdout=true"
	if got.String() != want {
		t.Errorf("attach:\n got %s\nwant %s", got, want)
	}
}
