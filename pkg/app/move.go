package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/kube"
)

// An app moves between clusters in steps (move.App): a copy is made in
// the target cluster, rolled out there, and the source copy removed. Each
// copy's record says where it stands, so a tug killed midway leaves copies
// that the cluster lookup (pkg/cluster) can tell apart, and running the
// move again finishes it. The marks live in the record itself rather than
// in annotations: every UpdateApp rewrites the ConfigMap from the record.

// Move roles.
const (
	// MoveSource is the copy that serves while the move is under way.
	MoveSource = "source"
	// MoveTarget is the copy being made; it serves once rolled out, and
	// its mark is dropped when the source copy is superseded.
	MoveTarget = "target"
)

// Move is a copy's part in an unfinished move.
type Move struct {
	Role string `json:"role"`
	// From and To name the clusters (tug's names, else kubeconfig contexts).
	From string `json:"from"`
	To   string `json:"to"`
	// Pool is the pool the app moves to.
	Pool      string    `json:"pool"`
	StartedAt time.Time `json:"startedAt"`
	// Superseded (source copy only): the target copy serves now, and this
	// one is about to be removed.
	Superseded bool `json:"superseded,omitempty"`
}

// SameMove reports whether m and o mark the two sides (or the same side)
// of one move: the same clusters and the same start. A copy marked by
// another move, or not marked at all, is not this move's to remove.
func (m *Move) SameMove(o *Move) bool {
	return m != nil && o != nil && m.From == o.From && m.To == o.To && m.StartedAt.Equal(o.StartedAt)
}

// LocateCopy is what the cluster lookup (cluster.Locate) ranks of this copy
// of the app, found in namespace: its pool and its part in an unfinished
// move. A move's target and a superseded source rank below the copy that
// serves; a source that still serves ranks as an unmarked copy.
func (a *App) LocateCopy(namespace string) cluster.Copy {
	cp := cluster.Copy{Found: true, Namespace: namespace, Pool: a.Pool}
	if m := a.Move; m != nil {
		cp.Describe, cp.MovePool, cp.MoveTo = m.Describe(), m.Pool, m.To
		switch {
		case m.Role == MoveTarget:
			cp.Move = cluster.MoveTarget
		case m.Superseded:
			cp.Move = cluster.MoveSuperseded
		}
	}
	return cp
}

// Describe says in a phrase where the move stands, from this copy's side.
func (m *Move) Describe() string {
	switch {
	case m.Role == MoveTarget:
		return fmt.Sprintf("unfinished move from cluster %q to cluster %q (pool %q): this is the new copy", m.From, m.To, m.Pool)
	case m.Superseded:
		return fmt.Sprintf("unfinished move from cluster %q to cluster %q (pool %q): this copy is superseded and about to be removed", m.From, m.To, m.Pool)
	default:
		return fmt.Sprintf("unfinished move from cluster %q to cluster %q (pool %q): this copy still serves", m.From, m.To, m.Pool)
	}
}

// CopyTo copies app name's records into dst's namespace: the app record
// (marked with mark, its namespace set to dst's) and every other
// ConfigMap and Secret tug keeps for the app (release history with each
// release's config, registry credentials, TLS certificates). It creates
// only, the marked record first: an object of the same name already in dst
// fails the copy and is left alone: CopyTo then deletes what it created
// (the record last), so a failed copy leaves nothing of its own in dst. A
// copy cut short (the tug killed) is one whose record says so, which is
// removed (lifecycle.Remove) before copying again.
func (s *Store) CopyTo(ctx context.Context, dst *Store, name string, mark *Move) (*App, error) {
	a, err := s.GetApp(ctx, name)
	if err != nil {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: kube.AppSelector(name)}
	secrets, err := s.Client.CoreV1().Secrets(s.Namespace).List(ctx, sel)
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	cms, err := s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, sel)
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	// The record first, marked: a copy cut short is then one the lookup
	// recognises and a second run removes before copying again.
	c, err := markedCopy(a, dst.Namespace, mark)
	if err != nil {
		return nil, err
	}
	if err := dst.CreateApp(ctx, c); err != nil {
		return nil, err
	}
	made := &madeCopy{dst: dst, name: name}
	if err := made.copySecrets(ctx, secrets.Items); err != nil {
		return nil, made.undo(ctx, err)
	}
	if err := made.copyConfigMaps(ctx, cms.Items); err != nil {
		return nil, made.undo(ctx, err)
	}
	return dst.GetApp(ctx, name)
}

// markedCopy is a copy of the app record for dst's namespace, with no
// resourceVersion (so it can be created) and marked as a move's.
func markedCopy(a *App, namespace string, mark *Move) (*App, error) {
	var c App
	b, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	c.Namespace = namespace
	c.Move = mark
	return &c, nil
}

// madeCopy is what CopyTo has created in dst so far, for undo.
type madeCopy struct {
	dst                        *Store
	name                       string
	createdSecrets, createdCMs []string
}

// copySecrets creates a copy of each of the app's Secrets in dst.
func (m *madeCopy) copySecrets(ctx context.Context, items []corev1.Secret) error {
	create := metav1.CreateOptions{FieldManager: kube.FieldManager}
	for i := range items {
		sec := &items[i]
		cp := &corev1.Secret{ObjectMeta: copyMeta(sec.ObjectMeta, m.dst.Namespace), Type: sec.Type, Data: sec.Data, Immutable: sec.Immutable}
		if _, err := m.dst.Client.CoreV1().Secrets(m.dst.Namespace).Create(ctx, cp, create); err != nil {
			return copyError("Secret", cp.Name, m.dst.Namespace, err)
		}
		m.createdSecrets = append(m.createdSecrets, cp.Name)
	}
	return nil
}

// copyConfigMaps creates a copy of each of the app's ConfigMaps in dst
// but its record, which CopyTo created first, marked.
func (m *madeCopy) copyConfigMaps(ctx context.Context, items []corev1.ConfigMap) error {
	create := metav1.CreateOptions{FieldManager: kube.FieldManager}
	for i := range items {
		cm := &items[i]
		if cm.Name == AppRecordName(m.name) {
			continue
		}
		cp := &corev1.ConfigMap{ObjectMeta: copyMeta(cm.ObjectMeta, m.dst.Namespace), Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable}
		if _, err := m.dst.Client.CoreV1().ConfigMaps(m.dst.Namespace).Create(ctx, cp, create); err != nil {
			return copyError("ConfigMap", cp.Name, m.dst.Namespace, err)
		}
		m.createdCMs = append(m.createdCMs, cp.Name)
	}
	return nil
}

// undo deletes what the copy made, the marked record last and only once
// everything else is gone: a record kept marks what is left, so the move
// says so and the next move removes it (lifecycle.Remove). It returns
// err, or a CopyLeftError when something it made stays.
func (m *madeCopy) undo(ctx context.Context, err error) error {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), copyUndoTimeout)
	defer cancel()
	dst := m.dst
	var failed []string
	for _, n := range m.createdSecrets {
		if derr := dst.Client.CoreV1().Secrets(dst.Namespace).Delete(uctx, n, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			failed = append(failed, "Secret "+n)
		}
	}
	for _, n := range m.createdCMs {
		if derr := dst.Client.CoreV1().ConfigMaps(dst.Namespace).Delete(uctx, n, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			failed = append(failed, "ConfigMap "+n)
		}
	}
	if len(failed) > 0 {
		return &CopyLeftError{Err: err, Left: failed, Namespace: dst.Namespace}
	}
	record := AppRecordName(m.name)
	if derr := dst.Client.CoreV1().ConfigMaps(dst.Namespace).Delete(uctx, record, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
		return &CopyLeftError{Err: err, Left: []string{"ConfigMap " + record}, Namespace: dst.Namespace}
	}
	return err
}

// CopyLeftError is a failed copy whose undo could not delete all it made:
// Left names what is still in the target (the marked app record among it,
// so the next move finds and removes the rest).
type CopyLeftError struct {
	Err       error
	Left      []string
	Namespace string
}

func (e *CopyLeftError) Error() string {
	return fmt.Sprintf("%v (deleting what the copy made failed too; left in namespace %q: %s)", e.Err, e.Namespace, strings.Join(e.Left, ", "))
}

func (e *CopyLeftError) Unwrap() error { return e.Err }

// copyUndoTimeout bounds the deletes of a failed copy, which run after the
// command's own context may be gone.
const copyUndoTimeout = time.Minute

func copyMeta(m metav1.ObjectMeta, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: namespace, Labels: m.Labels, Annotations: m.Annotations}
}

func copyError(kind, name, ns string, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s %s already exists in namespace %q of the target cluster; it is left alone", kind, name, ns)
	}
	return kube.TranslateError(err)
}
