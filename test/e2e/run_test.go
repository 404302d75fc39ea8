package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRunExitCodesOutputEnvAndAudit(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1, "GREETING=hello-from-config")

	r := h.Tug("run", "shop", "--", "sh", "-c", "echo out-$GREETING-$PORT; echo to-stderr >&2; exit 3")
	if r.Code != 3 {
		t.Fatalf("run exiting 3: %s", r)
	}
	// the log carries stdout and stderr together, in the pod's own env
	if !strings.Contains(r.Stdout, "out-hello-from-config-8080") || !strings.Contains(r.Stdout, "to-stderr") {
		t.Fatalf("run output should have the app's env and both streams:\n%s", r)
	}
	if r := h.Tug("run", "shop", "--", "sh", "-c", "exit 0"); r.Code != 0 {
		t.Fatalf("run exiting 0: %s", r)
	}

	// --env: the value reaches the command, wins over the config, and stays
	// out of the pod's spec and the audit events
	secret := "run-only-value-31337"
	r = h.TugRun(Run{Args: []string{"run", "shop", "--env", "EXTRA=" + secret, "-e", "GREETING=overridden", "--", "sh", "-c", "echo extra=$EXTRA greeting=$GREETING"}})
	if r.Code != 0 || !strings.Contains(r.Stdout, "extra="+secret+" greeting=overridden") {
		t.Fatalf("run with --env: %s", r)
	}
	// a bare KEY takes its value from tug's environment
	r = h.TugRun(Run{Args: []string{"run", "shop", "--env", "FROM_HERE", "--", "sh", "-c", "echo from-here=$FROM_HERE"}, Env: []string{"FROM_HERE=local-value"}})
	if r.Code != 0 || !strings.Contains(r.Stdout, "from-here=local-value") {
		t.Fatalf("run with --env KEY: %s", r)
	}

	// every run pod (and its --env Secret) is gone
	h.waitNoRunPods(60 * time.Second)
	h.Eventually(60*time.Second, "the runs' env Secrets are removed", func() (bool, error) {
		s, err := h.Client.CoreV1().Secrets(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/kind=run-env"})
		return err == nil && len(s.Items) == 0, err
	})

	// the audit trail: who ran which program, never its arguments (a
	// shell may have expanded secrets into them) nor a value
	ev := h.waitEvent("TugRun", "shop-run-", "sh [2 arguments not recorded]")
	if strings.Contains(ev.Message, "exit 3") {
		t.Fatalf("the run event records the command's arguments: %q", ev.Message)
	}
	if !strings.Contains(ev.Message, "ran: ") || ev.Annotations["tug.dev/user"] == "" || !strings.Contains(ev.Message, ev.Annotations["tug.dev/user"]) {
		t.Fatalf("run event should name the user and the command: %+v", ev)
	}
	envEvent := h.waitEvent("TugRun", "shop-run-", "EXTRA")
	for _, e := range h.events("TugRun") {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), secret) {
			t.Fatalf("an audit event holds an --env value: %s", b)
		}
	}
	if !strings.Contains(envEvent.Message, "--env EXTRA, GREETING") {
		t.Fatalf("the event should name the --env keys: %q", envEvent.Message)
	}
}

func TestRunInterruptedLeavesNoPods(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	const rounds = 20
	for i := 0; i < rounds; i++ {
		// Alternate between a run whose command runs and one still starting
		// (the pod may not even exist yet): both must leave nothing behind.
		wait := "running"
		if i%2 == 1 {
			wait = "starting"
		}
		sig := os.Interrupt
		if i == rounds-1 {
			sig = syscall.SIGTERM
		}
		h.interrupt(i, Interrupt{Args: []string{"run", "shop", "--", "sleep", "300"}, WaitFor: wait, Timeout: 60 * time.Second, Signal: sig})
	}
	h.waitNoRunPods(90 * time.Second)
}

func TestRunInteractiveTTY(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	cmd, tty := h.TTY(24, 80, "run", "shop", "-it", "--", "sh")
	s := NewStream(tty)
	s.WaitFor(t, "running", 60*time.Second)
	fmt.Fprint(tty, "echo answer-$((6*7))\r")
	s.WaitFor(t, "answer-42", 20*time.Second)
	// the terminal's size reaches the process (it may take a moment)
	fmt.Fprint(tty, "until [ -n \"$(stty size)\" ]; do sleep 0.05; done; echo size=$(stty size)\r")
	s.WaitFor(t, "size=24 80", 20*time.Second)
	fmt.Fprint(tty, "exit 4\r")
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 4 {
		t.Fatalf("run -it exiting 4: tug exited %d (%v); output:\n%s", code, err, s.String())
	}
	h.waitNoRunPods(60 * time.Second)
}

func TestRunStdinWithoutTTY(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	r := h.TugRun(Run{Args: []string{"run", "shop", "-i", "--", "sh", "-c", "read a; read b; echo got-$a-$b; exit 5"}, Stdin: "one\ntwo\n"})
	if r.Code != 5 || !strings.Contains(r.Stdout, "got-one-two") {
		t.Fatalf("run -i with piped stdin: %s", r)
	}
	// -t without a terminal: a warning, and the run goes on without a TTY
	r = h.TugRun(Run{Args: []string{"run", "shop", "-t", "--", "sh", "-c", "read a; tty; echo got-$a"}, Stdin: "x\n"})
	if r.Code != 0 || !strings.Contains(r.Stderr, "not a terminal") || !strings.Contains(r.Stdout, "not a tty") || !strings.Contains(r.Stdout, "got-x") {
		t.Fatalf("run -t without a terminal: %s", r)
	}
	h.waitNoRunPods(60 * time.Second)
}

func TestRunTimeoutAndDetach(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	r := h.Tug("run", "shop", "--timeout", "4s", "--", "sleep", "300")
	if r.Code != 124 || !strings.Contains(r.Stderr, "--timeout 4s") {
		t.Fatalf("run past its --timeout: want exit 124, got %s", r)
	}
	h.waitNoRunPods(60 * time.Second) // the timed-out run's pod, on its way out

	r = h.Tug("run", "shop", "--detach", "--", "sh", "-c", "echo detached-output; sleep 300")
	name := strings.TrimSpace(r.Stdout)
	if r.Code != 0 || !strings.HasPrefix(name, "shop-run-") || strings.Contains(name, "\n") {
		t.Fatalf("run --detach should print the pod's name alone: %s", r)
	}
	pod, err := h.Client.CoreV1().Pods(h.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the detached pod: %v", err)
	}
	if pod.Labels["tug.dev/kind"] != "run" || pod.Labels["tug.dev/process"] != "" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("run pod labels/policy: %v %s", pod.Labels, pod.Spec.RestartPolicy)
	}
	if !strings.Contains(r.Stderr, "tug unit kill shop "+name) || strings.Contains(r.Stderr, "kubectl") {
		t.Errorf("run --detach should say how tug stops it: %s", r)
	}
	// unit list shows it after the units, as process run; -p run alone
	units := h.units("shop")
	if len(units) != 2 || units[0].Process != "web" || units[1].Name != name || units[1].Process != "run" || units[1].Release != 1 {
		t.Fatalf("unit list with a detached run: %+v", units)
	}
	if runs := h.units("shop", "-p", "run"); len(runs) != 1 || runs[0].Name != name {
		t.Fatalf("unit list -p run: %+v", runs)
	}
	if web := h.units("shop", "-p", "web"); len(web) != 1 || web[0].Process != "web" {
		t.Fatalf("unit list -p web lists the run: %+v", web)
	}
	h.Eventually(30*time.Second, "the detached run's output in tug logs --unit", func() (bool, error) {
		r := h.Tug("logs", "shop", "--unit", name)
		return strings.Contains(r.Stdout, "detached-output"), nil
	})
	// tug stops it: no replacement, nothing left
	r = h.mustTug("unit", "kill", "shop", name)
	if !strings.Contains(r.Stderr, "run "+name+" stopped and removed") {
		t.Errorf("unit kill of a run: %s", r)
	}
	h.waitNoRunPods(60 * time.Second)
	if units := h.units("shop"); len(units) != 1 || units[0].Process != "web" {
		t.Errorf("units after the run was stopped: %+v", units)
	}
}

func TestRunBadInput(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop")
	for _, args := range [][]string{
		{"run", "shop"},
		{"run", "shop", "--"},
		{"run", "shop", "ls", "-la"},
		{"run", "--", "ls"},
		{"run", "Bad_Name", "--", "ls"},
		{"run", "shop", "--detach", "-i", "--", "sh"},
		{"run", "shop", "--env", "1BAD=x", "--", "ls"},
		{"run", "shop", "--env", "UNSET_HERE_XYZ", "--", "ls"},
		{"run", "shop", "--timeout", "-1s", "--", "ls"},
		{"app", "exec", "shop", "--all", "--unit", "x", "--", "ls"},
		{"app", "exec", "shop"},
		{"logs", "shop", "-f", "--previous"},
		{"logs", "shop", "--since", "yesterday"},
	} {
		r := h.Tug(args...)
		if r.Code != 2 || !strings.HasPrefix(r.Stderr, "error: ") {
			t.Errorf("tug %q: want exit 2 with an error line, got %s", args, r)
		}
	}
	// not deployed: says so and how
	for _, args := range [][]string{{"run", "shop", "--", "ls"}, {"shell", "shop"}, {"app", "exec", "shop", "--", "ls"}} {
		r := h.Tug(args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "app deploy shop") {
			t.Errorf("tug %q on an app never deployed: %s", args, r)
		}
	}
	if r := h.Tug("run", "ghost", "--", "ls"); r.Code != 1 || !strings.Contains(r.Stderr, `app "ghost" not found`) {
		t.Errorf("run of an unknown app: %s", r)
	}
	h.mustTug("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample")
	if r := h.Tug("run", "shop", "-p", "nope", "--", "ls"); r.Code != 2 || !strings.Contains(r.Stderr, "web") {
		t.Errorf("run with an unknown process should name the known ones: %s", r)
	}
	if r := h.Tug("run", "shop", "--", "no-such-command"); r.Code != 127 || !strings.Contains(r.Stderr, "no-such-command") {
		t.Errorf("run of a command missing from the image: want 127, got %s", r)
	}
	h.waitNoRunPods(60 * time.Second)
}

// Every unit, and every run, knows its app, process and release; the
// config cannot override them.
func TestPlatformVariables(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	r := h.mustTug("run", "shop", "--", "sh", "-c", "echo vars=$TUG_APP/$TUG_PROCESS/$TUG_RELEASE/$PORT")
	if !strings.Contains(r.Stdout, "vars=shop/web/1/8080") {
		t.Errorf("platform variables in a run: %s", r.Stdout)
	}
	if r := h.Tug("env", "set", "shop", "TUG_APP=other"); r.Code != 2 || !strings.Contains(r.Stderr, "set by tug") {
		t.Errorf("env set TUG_APP: %s", r)
	}
	// PORT is the port the app listens on: not a port is refused with
	// nothing changed; a port moves the container port, probe and Service.
	for _, bad := range []string{"PORT=http", "PORT=0", "PORT=70000"} {
		if r := h.Tug("env", "set", "shop", bad); r.Code != 2 || !strings.Contains(r.Stderr, "invalid PORT") {
			t.Errorf("env set %s: %s", bad, r)
		}
	}
	if rels := h.mustTug("release", "list", "shop", "-o", "json").Stdout; strings.Count(rels, `"version"`) != 1 {
		t.Errorf("a refused PORT made a release: %s", rels)
	}
	h.mustTug("env", "set", "shop", "PORT=8081")
	dep, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ports := dep.Spec.Template.Spec.Containers[0].Ports; len(ports) != 1 || ports[0].ContainerPort != 8081 {
		t.Errorf("container ports after PORT=8081: %+v", ports)
	}
	if r := h.mustTug("run", "shop", "--", "sh", "-c", "echo port=$PORT"); !strings.Contains(r.Stdout, "port=8081") {
		t.Errorf("PORT in a run after PORT=8081: %s", r.Stdout)
	}
}
