package service

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
)

// readyUnit is the service's unit commands run in: a ready pod of it.
func (d Deps) readyUnit(ctx context.Context, rec *Record) (session.Target, error) {
	if rec.External {
		return session.Target{}, fmt.Errorf("service %q is external (made with --uri): tug runs nothing of it", rec.Name)
	}
	pods, err := d.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelService + "=" + rec.Name})
	if err != nil {
		return session.Target{}, kube.TranslateError(err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; kube.PodReady(p) {
			return session.Target{Namespace: d.Namespace, Pod: p.Name, Container: rec.Spec.Container}, nil
		}
	}
	return session.Target{}, fmt.Errorf("service %q has no ready unit; see 'tug service info %s'", rec.Name, rec.Name)
}

// runInUnit runs argv in the service's unit with stdin, its output to out
// and errOut (nil: discarded).
func (d Deps) runInUnit(ctx context.Context, rec *Record, argv []string, stdin io.Reader, out, errOut io.Writer) error {
	t, err := d.readyUnit(ctx, rec)
	if err != nil {
		return err
	}
	if out == nil {
		out = io.Discard
	}
	if errOut == nil {
		errOut = io.Discard
	}
	return d.Exec.Exec(ctx, t, argv, session.Streams{Stdin: stdin, Stdout: out, Stderr: errOut})
}
