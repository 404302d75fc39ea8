// Package logs shows an app's logs: the lines of every unit, merged in time
// order and prefixed with the unit's name, and with Follow the units that
// start later too. It opens one stream per unit, with no cap.
package logs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
)

// Options are `tug logs`'s.
type Options struct {
	App     string
	Process string // only this process's units; "" for all, one-off runs included
	Unit    string // only this unit (or run pod); its lines are not prefixed
	Follow  bool
	// Tail is how many of each unit's last lines to show first; < 0 for all.
	Tail       int64
	Since      time.Duration
	SinceTime  time.Time
	Timestamps bool
	Previous   bool // the previous (crashed) container of each unit
}

// Streams are where logs are written; *cli.IOStreams satisfies it.
type Streams interface {
	Stdout() io.Writer
	Stderr() io.Writer
	// ColorEnabled and ErrColorEnabled report whether stdout and stderr
	// may carry ANSI colour.
	ColorEnabled() bool
	ErrColorEnabled() bool
}

// Deps are what logs need.
type Deps struct {
	Client      kubernetes.Interface
	Namespace   string
	IO          Streams
	CommandName string
}

// Show prints the app's logs to d.IO.Stdout() (notes about units go to stderr).
// With Follow it runs until ctx ends, and then returns nil: Ctrl-C is how
// following ends.
func Show(ctx context.Context, d Deps, o Options) error {
	if d.CommandName == "" {
		d.CommandName = "tug"
	}
	s := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	if err := knownProcess(a, o.Process); err != nil {
		return err
	}
	pods, rv, err := unitsToShow(ctx, d, o, a)
	if err != nil {
		return err
	}

	out := newPrinter(d.IO, o)
	defer out.close()
	if len(pods) == 0 && !o.Follow {
		fmt.Fprintf(d.IO.Stderr(), "%s\n", noUnits(a, o.Process, d.CommandName))
		return nil
	}
	backlog := noteUnstarted(out, a, o, pods)
	last, failed := showBacklog(ctx, d, o, out, backlog)
	if !o.Follow {
		// Ctrl-C is how a long backlog is cut short, not a failure
		if ctx.Err() == nil && failed > 0 && failed == len(backlog) {
			return fmt.Errorf("could not read the logs of any unit of app %q", a.Name)
		}
		return nil
	}
	if len(pods) == 0 {
		fmt.Fprintf(d.IO.Stderr(), "%s; waiting for units to start (Ctrl-C to stop)\n", noUnits(a, o.Process, d.CommandName))
	}
	f := &follower{d: d, o: o, out: out, app: a.Name, rv: rv}
	return f.run(ctx, pods, last)
}

// knownProcess refuses, as a usage error, a process the app does not have.
func knownProcess(a *app.App, proc string) error {
	if proc == "" {
		return nil
	}
	if _, ok := a.Processes[proc]; ok {
		return nil
	}
	known := a.ProcessNames()
	if len(known) == 0 {
		return inputerr.Errorf("unknown process %q: app %q has no processes yet", proc, a.Name)
	}
	return inputerr.Errorf("unknown process %q: app %q has %s", proc, a.Name, strings.Join(known, ", "))
}

// unitsToShow lists the app's pods that o selects, in name order, and the
// list's resourceVersion, which following watches from. A --unit that
// names none is an error that lists the units there are.
func unitsToShow(ctx context.Context, d Deps, o Options, a *app.App) ([]*corev1.Pod, string, error) {
	list, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(a.Name)})
	if err != nil {
		return nil, "", kube.TranslateError(err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; o.selects(p) {
			pods = append(pods, p)
		}
	}
	if o.Unit != "" && len(pods) == 0 {
		return nil, "", unknownUnit(a, o.Unit, list.Items)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, list.ResourceVersion, nil
}

// noteUnstarted says which units have no log to show yet (or, with
// --previous, no previous one) and returns those that have. With
// --previous for every unit, the units that never restarted are counted in
// one line, not given a line each; while following, a unit that has not
// started gets no note: its lines come when it starts.
func noteUnstarted(out *printer, a *app.App, o Options, pods []*corev1.Pod) []*corev1.Pod {
	countUnrestarted := o.Previous && o.Unit == ""
	backlog := make([]*corev1.Pod, 0, len(pods))
	var noted []string // unit, why, unit, why...
	unrestarted := 0
	for _, p := range pods {
		if why := notStarted(p, o.Previous); why != "" {
			switch {
			case countUnrestarted:
				unrestarted++
			case !o.Follow || o.Previous:
				noted = append(noted, p.Name, why)
			}
			continue
		}
		backlog = append(backlog, p)
	}
	// every name is known before the first line, so the column is set once
	for _, p := range backlog {
		out.width(p.Name)
	}
	for i := 0; i < len(noted); i += 2 {
		out.width(noted[i])
	}
	for i := 0; i < len(noted); i += 2 {
		out.note(noted[i], noted[i+1])
	}
	if unrestarted > 0 {
		out.say(unrestartedNote(a, o.Process, unrestarted, len(pods)))
	}
	return backlog
}

// selects reports whether p's lines are shown.
func (o Options) selects(p *corev1.Pod) bool {
	if o.Unit != "" {
		return p.Name == o.Unit
	}
	proc := p.Labels[kube.LabelProcess]
	if o.Process != "" {
		return proc == o.Process && p.Labels[kube.LabelKind] != session.KindRun
	}
	return proc != "" || p.Labels[kube.LabelKind] == session.KindRun
}

func unknownUnit(a *app.App, name string, pods []corev1.Pod) error {
	var names []string
	for _, p := range pods {
		if p.Labels[kube.LabelProcess] != "" || p.Labels[kube.LabelKind] == session.KindRun {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("unit %q not found: app %q has no units", name, a.Name)
	}
	sort.Strings(names)
	return fmt.Errorf("unit %q not found in app %q; its units are: %s", name, a.Name, strings.Join(names, ", "))
}

func noUnits(a *app.App, proc, cmdName string) string {
	if a.Release == 0 {
		return fmt.Sprintf("app %q has no units: it has not been deployed; deploy it with '%s app deploy %s --image IMAGE'", a.Name, cmdName, a.Name)
	}
	what := fmt.Sprintf("app %q", a.Name)
	if proc != "" {
		what = fmt.Sprintf("process %q of app %q", proc, a.Name)
	}
	return what + " has no units"
}

// unrestartedNote says that n of the total units have no previous
// container to show the log of.
func unrestartedNote(a *app.App, proc string, n, total int) string {
	what := fmt.Sprintf("app %q", a.Name)
	if proc != "" {
		what = fmt.Sprintf("process %q of app %q", proc, a.Name)
	}
	if n == total {
		return fmt.Sprintf("no unit of %s has restarted, so none has a previous log", what)
	}
	return fmt.Sprintf("%d of the %d units of %s have not restarted: no previous log for them", n, total, what)
}

func status(p *corev1.Pod) *corev1.ContainerStatus {
	name := kube.ProcessContainer(p)
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// notStarted says why p has no log to show yet ("" when it has one).
func notStarted(p *corev1.Pod, previous bool) string {
	cs := status(p)
	if previous {
		if cs == nil || cs.LastTerminationState.Terminated == nil {
			return "no previous container: it has not restarted"
		}
		return ""
	}
	if cs == nil || (cs.State.Running == nil && cs.State.Terminated == nil) {
		reason := "pending"
		if cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			reason = cs.State.Waiting.Reason
		}
		return "not started yet (" + reason + ")"
	}
	return ""
}

// line is one log line of one unit.
type line struct {
	unit string
	ts   time.Time
	raw  []byte // the line as the API server sent it, timestamp first, with "\n"
	text []byte // raw without the timestamp
}

// splitLine reads the timestamp the API server puts first (Timestamps is
// always asked for: the merge orders lines by it).
func splitLine(unit string, raw []byte) line {
	l := line{unit: unit, raw: raw, text: raw}
	if i := bytes.IndexByte(raw, ' '); i > 0 {
		if ts, err := time.Parse(time.RFC3339Nano, string(raw[:i])); err == nil {
			l.ts, l.text = ts, raw[i+1:]
		}
	}
	return l
}

// readLines sends each line of r to emit, adding a final "\n" when the log
// ends without one.
func readLines(r io.Reader, unit string, emit func(line) bool) error {
	br := bufio.NewReaderSize(r, 32<<10)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if b[len(b)-1] != '\n' {
				b = append(b, '\n')
			}
			if !emit(splitLine(unit, b)) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func logOptions(o Options, p *corev1.Pod) *corev1.PodLogOptions {
	lo := &corev1.PodLogOptions{Container: kube.ProcessContainer(p), Timestamps: true, Previous: o.Previous}
	if o.Tail >= 0 {
		tail := o.Tail
		lo.TailLines = &tail
	}
	if o.Since > 0 {
		secs := int64((o.Since + time.Second - 1) / time.Second)
		lo.SinceSeconds = &secs
	} else if !o.SinceTime.IsZero() {
		t := metav1.NewTime(o.SinceTime)
		lo.SinceTime = &t
	}
	return lo
}

// kubeletLogError recognises the kubelet's answer, sent with status 200 as
// if it were the log, when a container's log is gone.
func kubeletLogError(l line) bool {
	return l.ts.IsZero() && (bytes.HasPrefix(l.raw, []byte("unable to retrieve container logs for ")) ||
		bytes.HasPrefix(l.raw, []byte("failed to try resolving symlinks")))
}

func isCanceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled)
}
