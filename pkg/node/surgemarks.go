package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
)

// AnnotationSurges lists, on a node being drained, the processes the drain
// gave one more unit and has not put back yet. It is written before the
// unit count goes up and cleared once it is back, so a removal killed in
// between leaves a record the next `node remove` of that node finishes.
const AnnotationSurges = "tug.dev/drain-surges"

// surgeMark is one entry of AnnotationSurges. Lock is the holder identity
// of the app's deploy lock when the count went up: while the lease still
// names it, nobody took the app's lock since, so the count is still the
// drain's to put back. A mark without Lock is one a live drain failed to
// put back: the count goes back if it is still To.
type surgeMark struct {
	Namespace string `json:"namespace"`
	App       string `json:"app"`
	Process   string `json:"process"`
	From      int32  `json:"from"`
	To        int32  `json:"to"`
	Lock      string `json:"lock"`
}

func (m surgeMark) surge() *Surge {
	return &Surge{Namespace: m.Namespace, App: m.App, Process: m.Process, From: m.From, To: m.To}
}

// surgeMarks reads a node's marks; a damaged annotation reads as none (it
// is tug's own, and nothing else can be done with it).
func surgeMarks(n *corev1.Node) []surgeMark {
	var marks []surgeMark
	if v := n.Annotations[AnnotationSurges]; v != "" {
		_ = json.Unmarshal([]byte(v), &marks)
	}
	return marks
}

// setMark adds (or, with add false, removes) m on the drained node.
func (d *drainer) setMark(ctx context.Context, m surgeMark, add bool) error {
	_, err := modify(ctx, d.client, d.node.Name, func(n *corev1.Node) bool {
		marks := surgeMarks(n)
		i := slices.Index(marks, m)
		switch {
		case add && i < 0:
			marks = append(marks, m)
		case !add && i >= 0:
			marks = slices.Delete(marks, i, i+1)
		default:
			return false
		}
		if len(marks) == 0 {
			delete(n.Annotations, AnnotationSurges)
			return true
		}
		b, _ := json.Marshal(marks)
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[AnnotationSurges] = string(b)
		return true
	})
	return err
}

// lockHolder is who holds the app's deploy lock now ("" when nobody does).
func (d *drainer) lockHolder(ctx context.Context, proc process) (string, error) {
	l, err := d.client.CoordinationV1().Leases(proc.namespace).Get(ctx, lock.Name(proc.app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return deref(l.Spec.HolderIdentity), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// earlierSurge is a count an earlier, stopped removal of this node raised,
// claimed by this run: the app's lock is held until it is put back.
type earlierSurge struct {
	mark    surgeMark
	release func()
}

// claimEarlier takes over what an earlier, stopped removal of this node
// left raised (its marks). A count is the drain's to put back only while
// the app's lock still names that removal: then no deploy, scale or other
// drain took the lock since (else the count is theirs now, and the mark is
// dropped; see surgeMark for a mark without a lock). This run takes the
// lock at once, before its own work takes and releases it, and holds it
// until finishEarlier.
func (d *drainer) claimEarlier(ctx context.Context, marks []surgeMark) ([]earlierSurge, []error) {
	var (
		claimed []earlierSurge
		errs    []error
	)
	for _, m := range marks {
		proc := process{m.Namespace, m.App, m.Process}
		holder, err := d.lockHolder(ctx, proc)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: reading the app's deploy lock: %w", proc, kube.TranslateError(err)))
			continue
		}
		if m.Lock != "" && holder != m.Lock {
			if err := d.setMark(ctx, m, false); err != nil {
				errs = append(errs, fmt.Errorf("%s: clearing node %s's record of a raised unit count: %w", proc, d.node.Name, err))
			}
			continue
		}
		release, err := d.lockApp(ctx, proc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		claimed = append(claimed, earlierSurge{mark: m, release: release})
	}
	return claimed, errs
}

// finishEarlier puts back the claimed counts (each only if it is still the
// raised one), clears their marks and releases the apps' locks. It runs
// whether this run's own moves worked or not, as a run puts its own surges
// back either way.
func (d *drainer) finishEarlier(claimed []earlierSurge) []error {
	var errs []error
	for _, c := range claimed {
		m := c.mark
		d.o.Progress.Update(fmt.Sprintf("%s/%s (%s): putting back the unit count an interrupted removal raised (%d -> %d units)", m.Namespace, m.App, m.Process, m.To, m.From))
		s := m.surge()
		s.Earlier, s.mark = true, &m
		if err := d.putBack(s); err != nil {
			errs = append(errs, err)
		}
		c.release()
	}
	return errs
}
