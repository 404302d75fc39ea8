package app

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// Unit is one running (or trying to run) instance of a process: a pod. Its
// JSON shape is documented in docs/output.md.
type Unit struct {
	Name     string `json:"name"`
	App      string `json:"app"`
	Process  string `json:"process"`
	Release  int    `json:"release"`
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
	// LastExitCode is the exit code of the unit's last crash, if any.
	LastExitCode *int32    `json:"lastExitCode,omitempty"`
	Node         string    `json:"node,omitempty"`
	IP           string    `json:"ip,omitempty"`
	Address      string    `json:"address,omitempty"` // host:port, for web units
	Image        string    `json:"image"`
	CreatedAt    time.Time `json:"createdAt"`
	UnitUsage
}

// Unit statuses, as people think of them rather than pod phases.
const (
	UnitPending  = "pending"  // not placed on a node yet (reason: the scheduler's)
	UnitCreated  = "created"  // placed; containers being created
	UnitStarting = "starting" // running, readiness not passed yet
	UnitStarted  = "started"  // running and ready
	UnitUnready  = "unready"  // running, readiness failing for longer than its probe allows
	UnitStopping = "stopping" // being terminated
	UnitStopped  = "stopped"  // exited and will not restart
	UnitCrashed  = "crashed"  // exits and is restarted (CrashLoopBackOff)
	UnitError    = "error"    // cannot start: image pull, config, ... (reason says which)
	UnitLost     = "lost"     // its node stopped reporting: it may or may not still run
)

// ListUnitsOptions select units.
type ListUnitsOptions struct {
	App     string // "" with All: every app in the namespace
	Process string // RunProcess: the one-off run pods alone
	All     bool
	// Runs adds the one-off run pods (tug run, --detach or not), as
	// process RunProcess, after the units: Heroku's ps lists its run.N
	// dynos the same way.
	Runs bool
}

// ListUnits lists the units of an app (or of every app) with one LIST of
// pods by label selector, however many units there are. One-off run pods
// are listed only with Runs (or Process RunProcess).
func ListUnits(ctx context.Context, client kubernetes.Interface, namespace string, o ListUnitsOptions) ([]Unit, error) {
	managed := kube.LabelManagedBy + "=" + kube.ManagedBy
	runs := o.Runs || o.Process == RunProcess
	var sel string
	switch {
	case o.Process == RunProcess:
		sel = kube.KindSelector(kindRun, o.App)
	case o.Process != "":
		sel = kube.ProcessSelector(o.App, o.Process)
	case o.All && runs:
		sel = managed
	case o.All:
		sel = managed + "," + kube.LabelProcess
	case runs:
		sel = kube.AppSelector(o.App)
	default:
		sel = kube.AppSelector(o.App) + "," + kube.LabelProcess
	}
	// Pages of kube.PageSize pods: only the small Units are kept, so memory
	// grows with them, not with whole pod objects.
	now := time.Now()
	var units []Unit
	err := kube.EachPod(ctx, client, namespace, metav1.ListOptions{LabelSelector: sel}, func() { units = units[:0] }, func(p *corev1.Pod) {
		switch {
		case p.Labels[kube.LabelKind] == kindRun:
			if runs {
				units = append(units, UnitOf(p, now))
			}
		case p.Labels[kube.LabelProcess] != "":
			units = append(units, UnitOf(p, now))
		}
	})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	if units == nil {
		units = []Unit{}
	}
	sort.Slice(units, func(i, j int) bool {
		if units[i].App != units[j].App {
			return units[i].App < units[j].App
		}
		if (units[i].Process == RunProcess) != (units[j].Process == RunProcess) {
			return units[j].Process == RunProcess // runs after the units
		}
		if units[i].Process != units[j].Process {
			names := []string{units[i].Process, units[j].Process}
			SortProcesses(names)
			return names[0] == units[i].Process
		}
		return units[i].Name < units[j].Name
	})
	return units, nil
}

// UnitOf describes a pod as a unit. now is passed in so the rule for
// "unready" (running longer than its readiness probe needs) is testable.
func UnitOf(p *corev1.Pod, now time.Time) Unit {
	u := Unit{
		Name: p.Name, App: p.Labels[kube.LabelApp], Process: p.Labels[kube.LabelProcess],
		Node: p.Spec.NodeName, IP: p.Status.PodIP, CreatedAt: p.CreationTimestamp.Time,
	}
	u.Release, _ = strconv.Atoi(p.Labels[kube.LabelRelease])
	if p.Labels[kube.LabelKind] == kindRun {
		// A run pod carries no process or release label (a rollout must
		// not count it); its release is an annotation of the same name.
		u.Process = RunProcess
		u.Release, _ = strconv.Atoi(p.Annotations[kube.LabelRelease])
	}
	u.CPULimit, u.MemoryLimit = podLimits(p)
	if len(p.Spec.Containers) > 0 {
		u.Image = p.Spec.Containers[0].Image
		for _, port := range p.Spec.Containers[0].Ports {
			if port.Name == "http" && u.IP != "" {
				u.Address = fmt.Sprintf("%s:%d", u.IP, port.ContainerPort)
			}
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		u.Restarts += c.RestartCount
		if t := c.LastTerminationState.Terminated; t != nil {
			code := t.ExitCode
			u.LastExitCode = &code
		}
		if t := c.State.Terminated; t != nil {
			code := t.ExitCode
			u.LastExitCode = &code
		}
	}
	u.Ready = kube.PodReady(p)
	u.Status, u.Reason = unitStatus(p, now)
	return u
}

// errorReasons are container waiting reasons that waiting will not fix.
var errorReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"PreStartHookError": true, "PostStartHookError": true,
}

// unitStatus is the unit's status as users think of it, and why. Each
// step below decides it or, with status "", leaves it to the next, in the
// order they win: a lost node, a deletion, the pod's end, its placement,
// then its containers in order.
func unitStatus(p *corev1.Pod, now time.Time) (status, reason string) {
	if lost, why := nodeLost(p); lost {
		return UnitLost, why
	}
	if p.DeletionTimestamp != nil {
		return UnitStopping, ""
	}
	if status, reason := endedStatus(p); status != "" {
		return status, reason
	}
	if why, waiting := unscheduled(p); waiting {
		return UnitPending, why
	}
	for i, c := range p.Status.ContainerStatuses {
		if status, reason := containerStatus(p, i, c, now); status != "" {
			return status, reason
		}
	}
	if len(p.Status.ContainerStatuses) == 0 {
		return UnitCreated, ""
	}
	if kube.PodReady(p) {
		return UnitStarted, ""
	}
	return UnitStarting, ""
}

// endedStatus is the status of a pod that ran to its end.
func endedStatus(p *corev1.Pod) (status, reason string) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return UnitStopped, "exited 0"
	case corev1.PodFailed:
		if p.Status.Reason == "" {
			// A run's command that exited non-zero: it ended, it did
			// not fail to start.
			for _, c := range p.Status.ContainerStatuses {
				if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
					return UnitStopped, fmt.Sprintf("exit code %d", t.ExitCode)
				}
			}
		}
		return UnitError, firstNonEmpty(p.Status.Reason, p.Status.Message, "failed")
	}
	return "", ""
}

// unscheduled says why a pod has no node yet: the scheduler's word when
// it has said it cannot place it.
func unscheduled(p *corev1.Pod) (why string, waiting bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return firstNonEmpty(c.Message, c.Reason), true
		}
	}
	if p.Spec.NodeName == "" {
		return "waiting for the scheduler", true
	}
	return "", false
}

// containerStatus is the status container status c (the i-th) gives the
// unit, "" for a container running and ready.
func containerStatus(p *corev1.Pod, i int, c corev1.ContainerStatus, now time.Time) (status, reason string) {
	if w := c.State.Waiting; w != nil {
		return waitingStatus(c, w)
	}
	if t := c.State.Terminated; t != nil {
		return UnitCrashed, fmt.Sprintf("exit code %d", t.ExitCode)
	}
	if c.State.Running == nil || c.Ready {
		return "", ""
	}
	// unready: failing its probe once the probe has had its first run
	// of checks, else still starting
	if i < len(p.Spec.Containers) {
		if probe := p.Spec.Containers[i].ReadinessProbe; probe != nil && now.Sub(c.State.Running.StartedAt.Time) > readinessWindow(probe) {
			return UnitUnready, "readiness check failing"
		}
	}
	return UnitStarting, ""
}

// waitingStatus: a container waiting to start again after a crash has
// crashed; one waiting on what waiting will not fix is in error.
func waitingStatus(c corev1.ContainerStatus, w *corev1.ContainerStateWaiting) (status, reason string) {
	switch {
	case w.Reason == "CrashLoopBackOff":
		return UnitCrashed, crashReason(c)
	case errorReasons[w.Reason]:
		return UnitError, w.Reason
	case c.RestartCount > 0:
		return UnitCrashed, crashReason(c)
	}
	return UnitCreated, w.Reason
}

// nodeLost says whether a unit's node stopped reporting. The node
// controller then marks the pod not Ready while its containers' own status
// (last reported by the kubelet) still says ready, sets the phase Unknown,
// or, deleting it, the reason NodeLost; no request about the node is needed.
func nodeLost(p *corev1.Pod) (bool, string) {
	if p.Status.Phase == corev1.PodUnknown || p.Status.Reason == "NodeLost" {
		return true, "node " + p.Spec.NodeName + " is not reporting"
	}
	if p.Spec.NodeName == "" || len(p.Spec.ReadinessGates) > 0 || len(p.Status.ContainerStatuses) == 0 || kube.PodReady(p) {
		return false, ""
	}
	containersReady := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.ContainersReady && c.Status == corev1.ConditionTrue {
			containersReady = true
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready || c.State.Running == nil {
			return false, ""
		}
	}
	if !containersReady || !podReadyKnown(p) {
		return false, ""
	}
	return true, "node " + p.Spec.NodeName + " is not reporting"
}

// podReadyKnown: the pod has a Ready condition (false here): a pod the
// kubelet has not reported yet has none.
func podReadyKnown(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return true
		}
	}
	return false
}

// readinessWindow is how long a probe needs to fail its first run of
// checks: the initial delay plus failureThreshold periods.
func readinessWindow(p *corev1.Probe) time.Duration {
	period, threshold := ProbeTiming(p.PeriodSeconds, p.FailureThreshold)
	return time.Duration(p.InitialDelaySeconds+period*threshold) * time.Second
}

func crashReason(c corev1.ContainerStatus) string {
	if t := c.LastTerminationState.Terminated; t != nil {
		if t.Reason == "OOMKilled" {
			return "OOMKilled"
		}
		return fmt.Sprintf("exit code %d", t.ExitCode)
	}
	return "CrashLoopBackOff"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// KillUnit deletes one unit; its Deployment starts a replacement. A
// one-off run pod is stopped for good (its --env Secret goes with it: the
// pod owns it). force skips the grace period (the process gets SIGKILL at
// once). It returns the unit as it was.
func KillUnit(ctx context.Context, client kubernetes.Interface, namespace, appName, unit string, force bool) (*Unit, error) {
	pods := client.CoreV1().Pods(namespace)
	p, err := pods.Get(ctx, unit, metav1.GetOptions{})
	if err != nil || p.Labels[kube.LabelApp] != appName || (p.Labels[kube.LabelProcess] == "" && p.Labels[kube.LabelKind] != kindRun) {
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, kube.TranslateError(err)
		}
		units, lerr := ListUnits(ctx, client, namespace, ListUnitsOptions{App: appName, Runs: true})
		if lerr != nil {
			return nil, lerr
		}
		names := make([]string, len(units))
		for i, u := range units {
			names[i] = u.Name
		}
		if len(names) == 0 {
			return nil, &NotFoundError{What: "unit", Name: unit, Namespace: namespace, Hint: fmt.Sprintf("app %q has no units", appName)}
		}
		return nil, &NotFoundError{What: "unit", Name: unit, Namespace: namespace, Hint: fmt.Sprintf("units of app %q: %s", appName, joinNames(names))}
	}
	u := UnitOf(p, time.Now())
	opts := metav1.DeleteOptions{}
	if force {
		opts.GracePeriodSeconds = new(int64)
	}
	return &u, kube.TranslateError(pods.Delete(ctx, unit, opts))
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
