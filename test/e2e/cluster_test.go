package e2e

// Smoke tests of the local cluster itself (test/cluster), through client-go
// rather than tug: if these fail, no tug e2e result means anything.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"
)

func TestClusterRunsLogsAndServes(t *testing.T) {
	h := New(t)
	d := SampleDeployment("smoke", "v1", 1)
	h.CreateDeployment(d)
	pods := h.WaitPods(selectorOf(d), 60*time.Second, "sample pod ready", AllReady(1))
	pod := pods[0]

	t.Run("logs follow", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rc, err := h.Client.CoreV1().Pods(h.NS).GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatalf("streaming logs: %v", err)
		}
		defer rc.Close()
		s := NewStream(rc)
		s.WaitFor(t, "started mode=serve", 10*time.Second)
		// two heartbeats after the start line prove the stream follows
		s.WaitFor(t, "heartbeat", 10*time.Second)
		s.WaitFor(t, "heartbeat", 10*time.Second)
	})

	t.Run("pod answers from the host", func(t *testing.T) {
		body := httpGet(t, fmt.Sprintf("http://%s:8080/version", pod.Status.PodIP))
		if strings.TrimSpace(body) != "v1" {
			t.Fatalf("GET /version = %q, want v1", body)
		}
	})

	t.Run("service answers through kube-proxy", func(t *testing.T) {
		svc, err := h.Client.CoreV1().Services(h.NS).Create(context.Background(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
			Spec: corev1.ServiceSpec{
				Selector: d.Spec.Selector.MatchLabels,
				Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstrPort(8080)}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("http://%s/version", svc.Spec.ClusterIP)
		// kube-proxy programs the rule asynchronously; nothing to watch from here
		h.Eventually(30*time.Second, "service "+url+" answers", func() (bool, error) {
			body, err := tryGet(url)
			return strings.TrimSpace(body) == "v1", err
		})
	})

	for _, proto := range []string{"websocket", "spdy"} {
		t.Run("exec with a tty over "+proto, func(t *testing.T) {
			var out bytes.Buffer
			// The terminal size reaches the pod just after the command starts
			// (the executor sends it on its own stream), so wait for it there.
			script := "i=0; until [ -n \"$(stty size 2>/dev/null)\" ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i+1)); done; stty size; exit 7"
			err := execTTY(h, pod.Name, proto, []string{"sh", "-c", script}, &out)
			var code clientexec.CodeExitError
			if !errors.As(err, &code) || code.Code != 7 {
				t.Fatalf("exit: got %v, want code 7; output %q", err, out.String())
			}
			if !strings.Contains(out.String(), "40 132") {
				t.Fatalf("stty size inside: got %q, want 40 132", out.String())
			}
		})
	}
}

type fixedSize struct{ sent bool }

func (f *fixedSize) Next() *remotecommand.TerminalSize {
	if f.sent {
		// nil ends the resize loop; a real terminal would block for the next SIGWINCH
		return nil
	}
	f.sent = true
	return &remotecommand.TerminalSize{Width: 132, Height: 40}
}

func execTTY(h *H, pod, proto string, command []string, out io.Writer) error {
	req := h.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(h.NS).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "sample", Command: command, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	var (
		ex  remotecommand.Executor
		err error
	)
	if proto == "websocket" {
		ex, err = remotecommand.NewWebSocketExecutor(h.Config, "GET", req.URL().String())
	} else {
		ex, err = remotecommand.NewSPDYExecutor(h.Config, "POST", req.URL())
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// a stdin that never ends, as a terminal's would not, until the command exits
	stdin, w := io.Pipe()
	defer w.Close()
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: out, Tty: true, TerminalSizeQueue: &fixedSize{}})
}

func TestClusterEvictionRespectsDisruptionBudget(t *testing.T) {
	h := New(t)
	ctx := context.Background()
	d := SampleDeployment("evict", "v1", 1)
	h.CreateDeployment(d)
	pod := h.WaitPods(selectorOf(d), 60*time.Second, "pod ready", AllReady(1))[0]

	minAvailable := intstr.FromInt32(1)
	pdb, err := h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "evict"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: d.Spec.Selector},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "budget observed", func() (bool, error) {
		p, err := h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Get(ctx, pdb.Name, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 1, err
	})
	evict := func() error {
		return h.Client.PolicyV1().Evictions(h.NS).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: h.NS}})
	}
	if err := evict(); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction under a budget that allows none: got %v, want 429 Too Many Requests", err)
	}

	zero := intstr.FromInt32(0)
	pdb, _ = h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Get(ctx, pdb.Name, metav1.GetOptions{})
	pdb.Spec.MinAvailable = &zero
	if _, err := h.Client.PolicyV1().PodDisruptionBudgets(h.NS).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "eviction allowed once the budget permits", func() (bool, error) {
		err := evict()
		return err == nil, err
	})
	h.WaitPods(selectorOf(d), 30*time.Second, "evicted pod gone", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.Name == pod.Name {
				return false
			}
		}
		return true
	})
}

func TestClusterTwoNodesSpreadWithAntiAffinity(t *testing.T) {
	h := New(t)
	h.needAllNodes()
	nodes, err := h.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) < 2 {
		if os.Getenv("TUG_E2E_REQUIRED") == "1" {
			t.Fatalf("the test cluster has %d node(s); make test starts two", len(nodes.Items))
		}
		t.Skip("needs two nodes: make cluster-up NODES=2")
	}
	d := SampleDeployment("spread", "v1", 2)
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: d.Spec.Selector,
			TopologyKey:   "kubernetes.io/hostname",
		}},
	}}
	h.CreateDeployment(d)
	pods := h.WaitPods(selectorOf(d), 60*time.Second, "two pods ready", AllReady(2))
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Fatalf("both pods on %s; want one per node", pods[0].Spec.NodeName)
	}
}

// No pod or service address may leave the machine: each range routes to the
// port-less local bridge, even an address with no endpoint, and pods' forwarded
// traffic is dropped unless it stays in the local ranges.
func TestClusterNetworkStaysLocal(t *testing.T) {
	if env.skip != "" {
		t.Skip(env.skip)
	}
	for _, addr := range []string{"10.202.0.250", "10.202.255.1", "10.201.250.7", "10.200.0.99"} {
		out, err := exec.Command("ip", "route", "get", addr).CombinedOutput()
		if err != nil {
			t.Fatalf("ip route get %s: %v: %s", addr, err, out)
		}
		if !strings.Contains(string(out), "dev tughost0") {
			t.Errorf("%s routes via %q; want dev tughost0 (local only)", addr, strings.TrimSpace(string(out)))
		}
	}
	out, err := exec.Command("iptables", "-S", "TUG-LOCAL-ONLY").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S TUG-LOCAL-ONLY: %v: %s", err, out)
	}
	if !strings.Contains(string(out), "-s 10.201.0.0/16 -j DROP") {
		t.Errorf("pod egress guard missing; chain is:\n%s", out)
	}
}
