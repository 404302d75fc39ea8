package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	clientexec "k8s.io/client-go/util/exec"
)

func TestExecAllPrefixesAndReturnsTheFirstFailure(t *testing.T) {
	c := fake.NewClientset(unitPod("shop-web-a", "web", true), unitPod("shop-web-b", "web", true), unitPod("shop-web-c", "web", true), unitPod("shop-worker-1", "worker", true))
	seedShop(t, c, nil)
	codes := map[string]int{"shop-web-a": 0, "shop-web-b": 4, "shop-web-c": 0, "shop-worker-1": 9}
	ex := &fakeExecutor{run: func(tg Target, command []string, s Streams) error {
		fmt.Fprintf(s.Stdout, "hello from %s\nsecond line", tg.Pod) // no final newline
		fmt.Fprintf(s.Stderr, "warn %s\n", tg.Pod)
		if s.Stdin != nil || s.TTY {
			return errors.New("--all must not pass stdin or a TTY")
		}
		if code := codes[tg.Pod]; code != 0 {
			return clientexec.CodeExitError{Err: errors.New("non-zero"), Code: code}
		}
		return nil
	}}
	d, _, out, errOut := testDeps(c, ex)
	err := Exec(context.Background(), d, ExecOptions{App: "shop", All: true, Command: []string{"hostname"}})
	var ee *ExecError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || ee.Failed != 2 || ee.Total != 4 {
		t.Fatalf("want the first failure in unit order (web-b: 4), got %#v", err)
	}
	if !strings.Contains(err.Error(), "shop-web-b (exit 4), shop-worker-1 (exit 9)") {
		t.Fatalf("summary: %v", err)
	}
	for pod := range codes {
		for _, want := range []string{
			fmt.Sprintf("%-13s | hello from %s\n", pod, pod),
			fmt.Sprintf("%-13s | second line\n", pod),
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		if want := fmt.Sprintf("%-13s | warn %s\n", pod, pod); !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := len(strings.Split(strings.TrimSpace(out.String()), "\n")); n != 8 {
		t.Fatalf("%d lines of stdout, want 8:\n%s", n, out)
	}
	waitEvents(t, c, "TugExec", 4)
}

func TestExecAllCountsAFailureToRunAsOne(t *testing.T) {
	c := fake.NewClientset(unitPod("shop-web-a", "web", true), unitPod("shop-web-b", "web", true))
	seedShop(t, c, nil)
	ex := &fakeExecutor{run: func(tg Target, _ []string, _ Streams) error {
		if tg.Pod == "shop-web-a" {
			return errors.New("error dialing backend: connection refused")
		}
		return clientexec.CodeExitError{Err: errors.New("x"), Code: 3}
	}}
	d, _, _, errOut := testDeps(c, ex)
	err := Exec(context.Background(), d, ExecOptions{App: "shop", All: true, Command: []string{"true"}})
	var ee *ExecError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("a unit where the command could not run counts as 1: %v", err)
	}
	if !strings.Contains(errOut.String(), "shop-web-a | error: error dialing backend") {
		t.Fatalf("the failure should be on stderr, prefixed:\n%s", errOut)
	}
}

func TestExecOneUnitPassesOutputAndCodeThrough(t *testing.T) {
	c := fake.NewClientset(unitPod("shop-web-a", "web", true), unitPod("shop-web-b", "web", true))
	seedShop(t, c, nil)
	ex := &fakeExecutor{run: func(tg Target, command []string, s Streams) error {
		fmt.Fprintf(s.Stdout, "%s ran %v", tg.Pod, command)
		return clientexec.CodeExitError{Err: errors.New("x"), Code: 6}
	}}
	d, _, out, _ := testDeps(c, ex)
	err := Exec(context.Background(), d, ExecOptions{App: "shop", Unit: "shop-web-b", Command: []string{"ls", "-l"}})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 6 {
		t.Fatalf("exit code: %v", err)
	}
	if out.String() != "shop-web-b ran [ls -l]" {
		t.Fatalf("one unit's output is passed as is: %q", out)
	}
}

// waitEvents waits for n audit events with reason (they are recorded in the
// background, but before the command returns).
func waitEvents(t *testing.T, c *fake.Clientset, reason string, n int) {
	t.Helper()
	list, err := c.CoreV1().Events(ns).List(context.Background(), metaList())
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, e := range list.Items {
		if e.Reason == reason {
			got++
			if e.Annotations[AnnotationUser] != "alice" || !strings.HasPrefix(e.Message, "alice ") {
				t.Errorf("event should name the user: %+v", e)
			}
		}
	}
	if got != n {
		t.Fatalf("%d %s events, want %d", got, reason, n)
	}
}

// An argument the user's shell expanded (a $DATABASE_URL) reaches the unit
// but not the audit Event, which the view role can read.
func TestExecAuditEventHasNoArguments(t *testing.T) {
	c := fake.NewClientset(unitPod("shop-web-a", "web", true))
	seedShop(t, c, nil)
	var ran []string
	ex := &fakeExecutor{run: func(_ Target, command []string, _ Streams) error { ran = command; return nil }}
	d, _, _, _ := testDeps(c, ex)
	secret := "postgres://app:hunter2@db/shop"
	if err := Exec(context.Background(), d, ExecOptions{App: "shop", Command: []string{"psql", secret}}); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 2 || ran[1] != secret {
		t.Fatalf("the unit ran %q", ran)
	}
	list, err := c.CoreV1().Events(ns).List(context.Background(), metaList())
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("events %v %v", list, err)
	}
	e := list.Items[0]
	if strings.Contains(e.Message, "hunter2") || strings.Contains(e.Annotations[AnnotationCommand], "hunter2") {
		t.Errorf("the audit event holds the argument: %q %v", e.Message, e.Annotations)
	}
	if e.Message != "alice ran: psql [1 argument not recorded]" {
		t.Errorf("message %q", e.Message)
	}
}
