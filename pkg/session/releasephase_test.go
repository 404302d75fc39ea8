package session

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/render"
)

// The release phase's audit Events say who started it, for which release,
// and how it ended with its exit code: never its arguments or output.
func TestReleasePhaseAuditEvents(t *testing.T) {
	for _, c := range []struct {
		code      int32
		phase     string
		eventType string
		message   string
		exitCode  string
	}{
		{0, deploy.PhaseSucceeded, corev1.EventTypeNormal, "alice: release phase of v2 succeeded (exit code 0)", "0"},
		{4, deploy.PhaseFailed, corev1.EventTypeWarning, "alice: release phase of v2 failed with exit code 4", "4"},
	} {
		t.Run(c.phase, func(t *testing.T) {
			h := newRunHarness(t, nil)
			a := &app.App{Name: "shop", Namespace: ns, Processes: map[string]app.Process{"web": {Replicas: 1}}}
			rel := &app.Release{App: "shop", Version: 2, Image: "img:v2", Processes: map[string]string{"web": "serve"}}
			dep := render.Release(a, rel, app.ConfigMap{"TOKEN": "t0ps3cret"}).Deployments[0]
			secretArg := "--password=hunter2"
			done := make(chan struct{})
			var code int
			var err error
			go func() {
				defer close(done)
				code, err = RunReleasePhase(context.Background(), h.deps, deploy.ReleasePhaseSpec{
					App: a, Release: 2, Process: "web", Command: []string{"./migrate", secretArg}, Deployment: dep,
				})
			}()
			h.nextWatch()
			h.setState(corev1.PodRunning, running())
			h.nextWatch()
			h.setState(corev1.PodFailed, exited(c.code))
			<-done
			if err != nil || code != int(c.code) {
				t.Fatalf("RunReleasePhase = %d, %v; want %d", code, err, c.code)
			}
			if h.out.String() != "" || !strings.Contains(h.errOut.String(), "output of the run") {
				t.Errorf("the phase's output belongs on stderr: stdout %q, stderr %q", h.out.String(), h.errOut.String())
			}
			if pods := h.runPods(); len(pods) != 0 {
				t.Errorf("the phase's pod is left: %s", pods[0].Name)
			}
			list, lerr := h.c.CoreV1().Events(ns).List(context.Background(), metaList())
			if lerr != nil {
				t.Fatal(lerr)
			}
			var phases, messages []string
			for _, e := range list.Items {
				if e.Reason != ReasonReleasePhase {
					continue
				}
				phases = append(phases, e.Annotations[AnnotationPhase])
				messages = append(messages, e.Message)
				if e.Annotations[AnnotationRelease] != "2" || e.Annotations[AnnotationUser] != "alice" ||
					e.Annotations[AnnotationCommand] != "./migrate [1 argument not recorded]" || e.InvolvedObject.Kind != "Pod" {
					t.Errorf("event %s: annotations %v, object %+v", e.Name, e.Annotations, e.InvolvedObject)
				}
				if e.Annotations[AnnotationPhase] == c.phase && (e.Type != c.eventType || e.Message != c.message || e.Annotations[AnnotationExitCode] != c.exitCode) {
					t.Errorf("end event: type %s, message %q, exit code %q", e.Type, e.Message, e.Annotations[AnnotationExitCode])
				}
				for _, secret := range []string{"hunter2", "t0ps3cret", "output of the run"} {
					if strings.Contains(e.Message+strings.Join(slices.Collect(maps.Values(e.Annotations)), " "), secret) {
						t.Errorf("event %q records %q", e.Message, secret)
					}
				}
			}
			slices.Sort(phases)
			want := []string{c.phase, "started"}
			slices.Sort(want)
			if !slices.Equal(phases, want) {
				t.Errorf("events %v (%q), want %v", phases, messages, want)
			}
			if !slices.Contains(messages, "alice: release phase of v2 started: ./migrate [1 argument not recorded]") {
				t.Errorf("no start event: %q", messages)
			}
		})
	}
}

// A release phase's output is the cluster's text on tug's stderr: its
// escapes (a clipboard write, a screen clear, a cursor move, C1 CSI, NUL,
// BEL) reach the terminal as visible text, its colour only where colour is
// on (it is off here), and a sequence it leaves open does not swallow the
// newline that ends its line.
func TestReleasePhaseOutputIsSafeForATerminal(t *testing.T) {
	h := newRunHarness(t, nil)
	h.c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		return true, &runtime.Unknown{Raw: []byte("migrating\x1b]52;c;aGk=\x07\x1b[2J\x1b[5A\u009b2J\x00\x07 \x1b[32mdone\x1b[0m\r\nleft open\x1b[3")}, nil
	})
	a := &app.App{Name: "shop", Namespace: ns, Processes: map[string]app.Process{"web": {Replicas: 1}}}
	rel := &app.Release{App: "shop", Version: 2, Image: "img:v2", Processes: map[string]string{"web": "serve"}}
	dep := render.Release(a, rel, nil).Deployments[0]
	done := make(chan error, 1)
	go func() {
		_, err := RunReleasePhase(context.Background(), h.deps, deploy.ReleasePhaseSpec{
			App: a, Release: 2, Process: "web", Command: []string{"./migrate"}, Deployment: dep,
		})
		done <- err
	}()
	h.nextWatch()
	h.setState(corev1.PodRunning, running())
	h.nextWatch()
	h.setState(corev1.PodSucceeded, exited(0))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := h.errOut.String()
	want := "migrating^[]52;c;aGk=^G^[[2J^[[5A\\u009b2J^@^G done\nleft open^[[3\n"
	if !strings.Contains(got, want) || strings.Contains(got, "\x1b") {
		t.Errorf("stderr = %q, want it to hold %q and no ESC", got, want)
	}
}

// The phase's output, on stdout or stderr, that ends without a newline
// gets one before tug's next line: "failed: ..." must not be glued to it.
func TestReleasePhaseOutputEndsItsLine(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(io IO)
		want  string
	}{
		{"stdout open", func(io IO) { _, _ = io.Stdout().Write([]byte("migrating")) }, "migrating\n"},
		{"stderr open", func(io IO) { _, _ = io.Stderr().Write([]byte("oops")) }, "oops\n"},
		{"stdout closed, stderr open", func(io IO) {
			_, _ = io.Stdout().Write([]byte("a\n"))
			_, _ = io.Stderr().Write([]byte("b"))
		}, "a\nb\n"},
		{"ended", func(io IO) { _, _ = io.Stderr().Write([]byte("done\n")) }, "done\n"},
	} {
		var buf strings.Builder
		out := &lineEnd{w: &buf}
		c.write(stderrIO{out: out})
		out.finish()
		if buf.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, buf.String(), c.want)
		}
	}
}
