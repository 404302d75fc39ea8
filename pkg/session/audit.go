package session

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// Audit event reasons: `kubectl get events --field-selector reason=TugShell`.
const (
	ReasonShell = "TugShell"
	ReasonExec  = "TugExec"
	ReasonRun   = "TugRun"
	// ReasonReleasePhase: a release phase started, succeeded or failed
	// (annotation AnnotationPhase; AnnotationExitCode once it ended).
	ReasonReleasePhase = "TugReleasePhase"
)

// Annotations on audit events, for tools that would rather not parse the
// message.
const (
	AnnotationUser    = "tug.dev/user"
	AnnotationCommand = "tug.dev/command"
	// on TugReleasePhase events
	AnnotationRelease  = "tug.dev/release"
	AnnotationPhase    = "tug.dev/release-phase" // started, succeeded, failed
	AnnotationExitCode = "tug.dev/exit-code"
)

// auditTimeout bounds how long a session's end waits for its audit event.
const auditTimeout = 5 * time.Second

// audit records, in the background, an Event on pod saying who ran what.
// The session does not wait for it to start; wait returns its error (nil
// when recorded) before the command ends, so the record exists when tug
// exits. command is what AuditCommand keeps of the command line: never its
// arguments, which may be secrets the user's shell expanded.
//
// message is a format whose one %s is the user. edits, if any, change the
// event before it is sent (its type, more annotations).
func audit(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, reason string, user func() string, command, message string, edits ...func(*corev1.Event)) (wait func() error) {
	done := make(chan error, 1)
	ctx = context.WithoutCancel(ctx) // an interrupted session is still recorded
	now := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, auditTimeout)
		defer cancel()
		who := "unknown"
		if user != nil {
			who = user()
		}
		ev := auditEvent(pod, reason, who, command, fmt.Sprintf(message, who), now)
		for _, edit := range edits {
			edit(ev)
		}
		_, err := client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		done <- err
	}()
	return func() error {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("could not record the audit event on pod %s: %w", pod.Name, kube.TranslateError(err))
			}
			return nil
		case <-time.After(auditTimeout):
			return fmt.Errorf("could not record the audit event on pod %s: no answer within %s", pod.Name, auditTimeout)
		}
	}
}

// auditEvent is a core/v1 Event, the kind `kubectl get events` and
// `kubectl describe pod` show.
func auditEvent(pod *corev1.Pod, reason, user, command, message string, now time.Time) *corev1.Event {
	host, _ := os.Hostname()
	labels := map[string]string{kube.LabelManagedBy: kube.ManagedBy}
	if a := pod.Labels[kube.LabelApp]; a != "" {
		labels[kube.LabelApp] = a
		labels[kube.LabelName] = a
	}
	t := metav1.NewTime(now)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// the event recorder's naming: unique per object and instant
			Name:        fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()),
			Namespace:   pod.Namespace,
			Labels:      labels,
			Annotations: map[string]string{AnnotationUser: user, AnnotationCommand: command},
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion,
		},
		Reason:         reason,
		Message:        message,
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "tug", Host: host},
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
	}
}

// AuditCommand is what an audit Event records of a command: the program and
// how many arguments it had, not the arguments. Any argument may be a secret
// (a locally expanded $DATABASE_URL looks like any other word), and Events
// are readable with the view role; matching against the app's config would
// miss secrets that are not in it. The full command stays in the user's
// shell history, not in the cluster.
func AuditCommand(argv []string) string {
	switch len(argv) {
	case 0:
		return ""
	case 1:
		return shellQuote(argv[0])
	}
	n := len(argv) - 1
	if n == 1 {
		return shellQuote(argv[0]) + " [1 argument not recorded]"
	}
	return fmt.Sprintf("%s [%d arguments not recorded]", shellQuote(argv[0]), n)
}

// auditShell is what a shell's audit Event records: the command typed with
// --command (as AuditCommand keeps it), or how the shell was chosen.
func auditShell(command, described string) string {
	if command == "" {
		return described
	}
	return AuditCommand(strings.Fields(command))
}

// ShellJoin writes a command as a shell would read it back, for messages.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
