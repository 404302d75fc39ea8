package session

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// Unit is one of an app's units (a pod of one of its processes) as remote
// commands see it.
type Unit struct {
	Name      string
	Process   string
	Container string
	Node      string
	Phase     corev1.PodPhase
	Running   bool // its container runs: commands can be executed in it
	Ready     bool
	Created   time.Time
	Pod       *corev1.Pod
}

// ListUnits returns the app's units in one LIST: pods of its processes, not
// one-off run pods and not units on their way out, web first, then by
// process and name.
func ListUnits(ctx context.Context, client kubernetes.Interface, namespace, appName string) ([]Unit, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var units []Unit
	for i := range list.Items {
		p := &list.Items[i]
		if p.Labels[kube.LabelProcess] == "" || p.Labels[kube.LabelKind] == KindRun || p.DeletionTimestamp != nil {
			continue
		}
		units = append(units, unitOf(p))
	}
	SortUnits(units)
	return units, nil
}

func unitOf(p *corev1.Pod) Unit {
	u := Unit{Name: p.Name, Process: p.Labels[kube.LabelProcess], Node: p.Spec.NodeName, Phase: p.Status.Phase,
		Created: p.CreationTimestamp.Time, Pod: p, Container: kube.ProcessContainer(p)}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == u.Container {
			u.Running = c.State.Running != nil && p.Status.Phase == corev1.PodRunning
		}
	}
	u.Ready = kube.PodReady(p)
	return u
}

// mainContainer is the container that runs the process: the one named

// SortUnits orders units web first, then by process and name.
func SortUnits(units []Unit) {
	sort.SliceStable(units, func(i, j int) bool {
		a, b := units[i], units[j]
		if a.Process != b.Process {
			names := []string{a.Process, b.Process}
			app.SortProcesses(names)
			return names[0] == a.Process
		}
		return a.Name < b.Name
	})
}

// Selection says which units a command acts on.
type Selection struct {
	App     string
	Process string // "" for any
	Unit    string // "" for a chosen one
}

// unitFinder loads an app and its units and picks among them, with the
// errors people need when that fails.
type unitFinder struct {
	client      kubernetes.Interface
	namespace   string
	commandName string

	app   *app.App
	units []Unit
}

func (f *unitFinder) load(ctx context.Context, sel Selection) error {
	s := &app.Store{Client: f.client, Namespace: f.namespace}
	a, err := s.GetApp(ctx, sel.App)
	if err != nil {
		return err
	}
	f.app = a
	if sel.Process != "" {
		if err := f.checkProcess(sel.Process); err != nil {
			return err
		}
	}
	f.units, err = ListUnits(ctx, f.client, f.namespace, a.Name)
	return err
}

func (f *unitFinder) checkProcess(proc string) error {
	if _, ok := f.app.Processes[proc]; ok {
		return nil
	}
	known := f.app.ProcessNames()
	if len(known) == 0 {
		return inputerr.Errorf("unknown process %q: app %q has no processes yet; deploy it with '%s app deploy %s --image IMAGE'", proc, f.app.Name, f.commandName, f.app.Name)
	}
	return inputerr.Errorf("unknown process %q: app %q has %s", proc, f.app.Name, strings.Join(known, ", "))
}

// named returns the unit called name, or an error listing the valid ones.
func (f *unitFinder) named(name string) (Unit, error) {
	for _, u := range f.units {
		if u.Name == name {
			if !u.Running {
				return Unit{}, fmt.Errorf("unit %q of app %q is not running (%s); try again when it is, or pick another", name, f.app.Name, unitState(u))
			}
			return u, nil
		}
	}
	if len(f.units) == 0 {
		return Unit{}, fmt.Errorf("unit %q not found: %s", name, f.noUnits(""))
	}
	names := make([]string, len(f.units))
	for i, u := range f.units {
		names[i] = u.Name
	}
	return Unit{}, fmt.Errorf("unit %q not found in app %q; its units are: %s", name, f.app.Name, strings.Join(names, ", "))
}

// running returns the running units of proc ("" for every process),
// ready ones first, or an error saying why there are none.
func (f *unitFinder) running(proc string) ([]Unit, error) {
	var ready, unready []Unit
	waiting := 0
	for _, u := range f.units {
		if proc != "" && u.Process != proc {
			continue
		}
		switch {
		case u.Running && u.Ready:
			ready = append(ready, u)
		case u.Running:
			unready = append(unready, u)
		default:
			waiting++
		}
	}
	if len(ready)+len(unready) > 0 {
		return append(ready, unready...), nil
	}
	if waiting > 0 {
		return nil, fmt.Errorf("no unit of %s is running yet (%d not started); see '%s unit list %s'", f.what(proc), waiting, f.commandName, f.app.Name)
	}
	return nil, fmt.Errorf("%s", f.noUnits(proc))
}

// defaultProcess is the process whose unit a command uses when none is
// named: web, else the first one.
func (f *unitFinder) defaultProcess() string {
	names := f.app.ProcessNames()
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func (f *unitFinder) what(proc string) string {
	if proc == "" {
		return fmt.Sprintf("app %q", f.app.Name)
	}
	return fmt.Sprintf("process %q of app %q", proc, f.app.Name)
}

// noUnits says that there are no units, and how to get some.
func (f *unitFinder) noUnits(proc string) string {
	a := f.app
	if a.Release == 0 {
		return fmt.Sprintf("app %q has no units: it has not been deployed; deploy it with '%s app deploy %s --image IMAGE'", a.Name, f.commandName, a.Name)
	}
	if proc == "" {
		proc = f.defaultProcess()
	}
	return fmt.Sprintf("%s has no units; start one with '%s app scale %s %s=1'", f.what(proc), f.commandName, a.Name, proc)
}

// unitState is a unit's status as `tug unit list` shows it.
func unitState(u Unit) string {
	au := app.UnitOf(u.Pod, time.Now())
	if au.Reason != "" {
		return au.Status + ": " + au.Reason
	}
	return au.Status
}
