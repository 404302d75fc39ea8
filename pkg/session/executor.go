// Package session runs commands in an app's containers: a TTY-aware executor
// (WebSocket first, SPDY fallback) with raw mode and live resize, shells in
// units, commands on one or every unit, and one-off run pods built from the
// app's current release. Every session records an audit Event on its pod.
package session

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Target is one container of one pod.
type Target struct {
	Namespace, Pod, Container string
}

// Streams are the local ends of a remote session. With TTY set the remote
// side merges stderr into stdout, so Stderr is not used; Sizes then carries
// the terminal's size and its changes.
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	Sizes  remotecommand.TerminalSizeQueue
}

// Executor streams to a container: a new process in it (exec) or its main
// process (attach). Returned errors carry a remote exit code when there is
// one (see ExitCode). Tests replace it with a fake.
type Executor interface {
	Exec(ctx context.Context, t Target, command []string, s Streams) error
	Attach(ctx context.Context, t Target, s Streams) error
}

// Protocol is how a session reaches the API server.
type Protocol string

const (
	// ProtocolAuto tries WebSocket and falls back to SPDY when the server
	// or a proxy in between refuses the WebSocket upgrade, as kubectl does.
	ProtocolAuto      Protocol = ""
	ProtocolWebSocket Protocol = "websocket"
	ProtocolSPDY      Protocol = "spdy"
)

// ProtocolEnv forces one protocol, for tests and for proxies that break one
// of them.
const ProtocolEnv = "TUG_EXEC_PROTOCOL"

// ParseProtocol reads the value of TUG_EXEC_PROTOCOL.
func ParseProtocol(v string) (Protocol, error) {
	switch p := Protocol(strings.ToLower(strings.TrimSpace(v))); p {
	case ProtocolAuto, ProtocolWebSocket, ProtocolSPDY:
		return p, nil
	case "auto":
		return ProtocolAuto, nil
	}
	return "", fmt.Errorf("%s=%q: must be websocket, spdy or auto", ProtocolEnv, v)
}

// Remote is the Executor that talks to a real API server.
type Remote struct {
	Config   *rest.Config
	Client   kubernetes.Interface
	Protocol Protocol
}

func (r *Remote) Exec(ctx context.Context, t Target, command []string, s Streams) error {
	return r.stream(ctx, r.execURL(t, command, s), s)
}

func (r *Remote) Attach(ctx context.Context, t Target, s Streams) error {
	return r.stream(ctx, r.attachURL(t, s), s)
}

// execURL asks for the streams s has: with a TTY, no separate stderr.
func (r *Remote) execURL(t Target, command []string, s Streams) *url.URL {
	return r.url(t, "exec", &corev1.PodExecOptions{
		Container: t.Container, Command: command,
		Stdin: s.Stdin != nil, Stdout: s.Stdout != nil, Stderr: s.Stderr != nil && !s.TTY, TTY: s.TTY,
	})
}

func (r *Remote) attachURL(t Target, s Streams) *url.URL {
	return r.url(t, "attach", &corev1.PodAttachOptions{
		Container: t.Container,
		Stdin:     s.Stdin != nil, Stdout: s.Stdout != nil, Stderr: s.Stderr != nil && !s.TTY, TTY: s.TTY,
	})
}

func (r *Remote) url(t Target, sub string, opts runtime.Object) *url.URL {
	return r.Client.CoreV1().RESTClient().Post().
		Namespace(t.Namespace).Resource("pods").Name(t.Pod).SubResource(sub).
		VersionedParams(opts, scheme.ParameterCodec).URL()
}

func (r *Remote) stream(ctx context.Context, u *url.URL, s Streams) error {
	ex, err := newExecutor(r.Config, u, r.Protocol)
	if err != nil {
		return err
	}
	opts := remotecommand.StreamOptions{Stdin: s.Stdin, Stdout: s.Stdout, Tty: s.TTY, TerminalSizeQueue: s.Sizes}
	if !s.TTY {
		// With a TTY the remote side has one stream for both.
		opts.Stderr = s.Stderr
	}
	return ex.StreamWithContext(ctx, opts)
}

// newExecutor builds the executor for one session: an executor may not
// serve two sessions at once.
func newExecutor(config *rest.Config, u *url.URL, p Protocol) (remotecommand.Executor, error) {
	// The WebSocket handshake is a GET (RFC 6455); SPDY's upgrade is a POST.
	switch p {
	case ProtocolWebSocket:
		return remotecommand.NewWebSocketExecutor(config, "GET", u.String())
	case ProtocolSPDY:
		return remotecommand.NewSPDYExecutor(config, "POST", u)
	}
	ws, err := remotecommand.NewWebSocketExecutor(config, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(config, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, shouldFallback)
}

// shouldFallback is true when the WebSocket upgrade itself failed (an old
// server, a proxy that drops the Upgrade header), never when a session that
// started fails later: running a command twice is not a fallback.
func shouldFallback(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}
