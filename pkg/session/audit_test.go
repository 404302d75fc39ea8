package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestAuditEvent(t *testing.T) {
	pod := unitPod("shop-web-a", "web", true)
	pod.UID = "uid-1"
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	e := auditEvent(pod, ReasonShell, "alice", "bash, else sh", "alice opened a shell: bash, else sh", now)
	if e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.Name != "shop-web-a" || e.InvolvedObject.UID != "uid-1" || e.Namespace != ns {
		t.Fatalf("involved object: %+v", e.InvolvedObject)
	}
	if e.Reason != "TugShell" || e.Type != "Normal" || e.Count != 1 || !e.LastTimestamp.Time.Equal(now) || e.Source.Component != "tug" {
		t.Fatalf("event: %+v", e)
	}
	if e.Annotations[AnnotationUser] != "alice" || e.Annotations[AnnotationCommand] != "bash, else sh" || e.Labels["tug.dev/app"] != "shop" {
		t.Fatalf("annotations/labels: %v %v", e.Annotations, e.Labels)
	}
	if !strings.HasPrefix(e.Name, "shop-web-a.") {
		t.Fatalf("name %q", e.Name)
	}
}

func TestAuditRecordsAndReportsFailure(t *testing.T) {
	c := fake.NewClientset()
	pod := unitPod("shop-web-a", "web", true)
	if err := audit(context.Background(), c, pod, ReasonExec, func() string { return "bob" }, "ls", "%s ran: ls 100%%")(); err != nil {
		t.Fatal(err)
	}
	list, _ := c.CoreV1().Events(ns).List(context.Background(), metaList())
	if len(list.Items) != 1 || list.Items[0].Message != "bob ran: ls 100%" {
		t.Fatalf("events: %+v", list.Items)
	}
	c.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no"))
	})
	err := audit(context.Background(), c, pod, ReasonExec, nil, "ls", "%s ran: ls")()
	if err == nil || !strings.Contains(err.Error(), "audit event") {
		t.Fatalf("a refused event should be reported: %v", err)
	}
}

func TestShellJoin(t *testing.T) {
	got := ShellJoin([]string{"sh", "-c", "echo $HOME; exit 3", "", "a'b", "x=1", "/usr/bin/env"})
	want := `sh -c 'echo $HOME; exit 3' '' 'a'\''b' x=1 /usr/bin/env`
	if got != want {
		t.Fatalf("ShellJoin = %s\nwant      %s", got, want)
	}
}

// Audit Events are readable with the view role: they keep the program, never
// an argument (a locally expanded $DATABASE_URL would be one).
func TestAuditCommandRecordsNoArguments(t *testing.T) {
	secret := "postgres://app:hunter2@db/shop"
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{nil, ""},
		{[]string{"rails"}, "rails"},
		{[]string{"psql", secret}, "psql [1 argument not recorded]"},
		{[]string{"sh", "-c", "psql " + secret}, "sh [2 arguments not recorded]"},
		{[]string{"my tool", "x"}, "'my tool' [1 argument not recorded]"},
	} {
		if got := AuditCommand(tc.argv); got != tc.want {
			t.Errorf("AuditCommand(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
	if got := auditShell("psql "+secret, secret); strings.Contains(got, "hunter2") || got != "psql [1 argument not recorded]" {
		t.Errorf("auditShell = %q", got)
	}
	if got := auditShell("", "bash, else sh"); got != "bash, else sh" {
		t.Errorf("auditShell without a command = %q", got)
	}
}
