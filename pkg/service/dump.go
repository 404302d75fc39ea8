package service

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// ConnectTarget is where 'service connect' runs and what: the service's
// unit and the plan's client (or argv, a command of the user's).
func ConnectTarget(ctx context.Context, d Deps, name string, argv []string) (session.Target, []string, error) {
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return session.Target{}, nil, err
	}
	if len(argv) == 0 {
		if len(rec.Spec.Connect) == 0 {
			return session.Target{}, nil, fmt.Errorf("plan %q names no client to connect with; give a command after --", rec.Plan)
		}
		argv = rec.Spec.Connect
	}
	t, err := d.readyUnit(ctx, rec)
	return t, argv, err
}

// Backup streams a logical dump of the service (the plan's dump command,
// run in its unit) to w. Nothing is written to the unit: the dump goes
// straight through the API server.
func Backup(ctx context.Context, d Deps, name string, w io.Writer) error {
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return err
	}
	if len(rec.Spec.Dump) == 0 {
		return fmt.Errorf("plan %q does not say how to dump a service", rec.Plan)
	}
	var errOut bytes.Buffer
	if err := d.runInUnit(ctx, rec, rec.Spec.Dump, nil, w, &errOut); err != nil {
		return fmt.Errorf("dumping service %q: %v: %s", name, err, text.Excerpt(errOut.String()))
	}
	return nil
}

// Restore feeds a dump made by Backup to the plan's restore command in the
// service's unit. What the dump holds replaces what the database holds.
func Restore(ctx context.Context, d Deps, name string, r io.Reader) error {
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return err
	}
	if len(rec.Spec.Restore) == 0 {
		return fmt.Errorf("plan %q does not say how to restore a service", rec.Plan)
	}
	var errOut bytes.Buffer
	in := &readErr{r: r}
	err = d.runInUnit(ctx, rec, rec.Spec.Restore, in, nil, &errOut)
	if in.err != nil {
		// the exec's stdin copy ends the stream as if the dump were whole:
		// its error is said here, not lost
		return fmt.Errorf("restoring service %q: reading the dump failed part way: %v", name, in.err)
	}
	if err != nil {
		return fmt.Errorf("restoring service %q: %v: %s", name, err, text.Excerpt(errOut.String()))
	}
	return nil
}

// readErr keeps the first error (not EOF) its reader returned.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// Exists fails with a not-found input error for a missing service: for
// commands that check before they ask.
func Exists(ctx context.Context, d Deps, name string) error {
	_, err := readRecord(ctx, d.Client, d.Namespace, name)
	return err
}
