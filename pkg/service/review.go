package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// ReviewOwner is the review app a service was made for by 'tug review up':
// review Name of app Of, whose app is App. Such a service is the review
// app's alone; it goes with it, data and all (a review database is
// disposable). Its objects carry the review's labels, as the review app's
// record does, so kubectl finds them.
type ReviewOwner struct {
	Of   string `json:"of"`
	Name string `json:"name"`
	App  string `json:"app"`
	// Base is the app's service this one stands in for.
	Base string `json:"base"`
	// ForkedFrom is set once the service was restored from Base's data
	// (--fork-service); nil: it started empty, or the restore did not finish.
	ForkedFrom *Fork `json:"forkedFrom,omitempty"`
}

// Fork is where a review service's data came from.
type Fork struct {
	Service string `json:"service"`
	// Backup is the stored dump restored ('tug service backups'); "":
	// there was none, and a dump was taken for the fork.
	Backup string    `json:"backup,omitempty"`
	Time   time.Time `json:"time"`
}

func (f *Fork) String() string {
	if f.Backup == "" {
		return fmt.Sprintf("a dump of service %s taken at %s (it has no stored backup)", f.Service, f.Time.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("backup %s of service %s (%s)", f.Backup, f.Service, f.Time.UTC().Format(time.RFC3339))
}

// labels are the review's labels (none for a service of no review).
func (r *ReviewOwner) labels() map[string]string {
	if r == nil {
		return nil
	}
	return map[string]string{app.LabelReviewOf: r.Of, app.LabelReview: r.Name}
}

// same says whether two owners are the same review (nil: no review).
func (r *ReviewOwner) same(o *ReviewOwner) bool {
	if r == nil || o == nil {
		return r == nil && o == nil
	}
	return r.Of == o.Of && r.Name == o.Name && r.App == o.App
}

// describe names the review whose service this is (r is never nil).
func (r *ReviewOwner) describe() string {
	return fmt.Sprintf("review %s of app %s's", r.Name, r.Of)
}

// labels are every object's labels: the service's, and its review's.
func (r *Record) labels() map[string]string {
	l := Labels(r.Name)
	maps.Copy(l, r.Review.labels())
	return l
}

// ReviewServiceName is the name of review app reviewApp's own copy of
// service base: REVIEWAPP-BASE, cut to MaxNameLen with a hash of the
// whole kept, so two reviews' names never meet.
func ReviewServiceName(reviewApp, base string) string {
	n := reviewApp + "-" + base
	if len(n) <= MaxNameLen {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	h := hex.EncodeToString(sum[:])[:8]
	return strings.TrimRight(n[:MaxNameLen-len(h)-1], "-") + "-" + h
}

// ReviewServices are the service records of review name of app of (name
// "": of every review of of; of "": of every review).
func ReviewServices(ctx context.Context, client kubernetes.Interface, ns, of, name string) ([]*Record, error) {
	recs, err := listRecords(ctx, client, ns)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, r := range recs {
		if owns(r.Review, of, name) {
			out = append(out, r)
		}
	}
	return out, nil
}

// owns says whether o is review name of app of ("" matches any).
func owns(o *ReviewOwner, of, name string) bool {
	return o != nil && (of == "" || o.Of == of) && (name == "" || o.Name == name)
}

// RemoveReview removes a review app's own service with its data (a review
// database is disposable), bound or not, once its review app is gone
// (callers remove the app first). A service that belongs to no review,
// or to another, is never touched; one already gone is no error. It says
// whether it removed the service: not when the review app has a record
// again, checked under the service's lock (a review up of the same name
// made it meanwhile, and makes its services under their locks after it).
func RemoveReview(ctx context.Context, d Deps, name string, owner ReviewOwner) (bool, error) {
	ctx, unlock, err := d.Hold(ctx, name)
	if err != nil {
		return false, err
	}
	defer unlock()
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if app.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !rec.Review.same(&owner) {
		return false, fmt.Errorf("service %q is not %s: left alone", name, owner.describe())
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	if _, err := store.GetApp(ctx, owner.App); !app.IsNotFound(err) {
		return false, err // nil: the review app is back, and the service is its
	}
	// another app bound to the review's copy by hand keeps it: deleting
	// it would break that app's next unit (its binding Secret gone)
	apps, err := boundApps(ctx, d, rec)
	if err != nil {
		return false, err
	}
	var others []string
	for _, a := range apps {
		if a.App != owner.App {
			others = append(others, a.App)
		}
	}
	if len(others) > 0 {
		return false, fmt.Errorf("service %q of %s is bound to %s too: left in place; unbind it ('tug service unbind APP %s'), then 'tug service remove %s --delete-data'", name, owner.describe(), strings.Join(others, ", "), name, name)
	}
	if _, err = d.removeHeld(ctx, rec, true); err != nil {
		return false, err
	}
	return true, nil
}

// ForkInto restores service dst (a review app's copy of src, just made)
// from src's newest stored backup, or, when src has none, from a dump of
// src taken now; dst's record then says where its data came from, so a
// later review up does not fork it again. It returns that.
func ForkInto(ctx context.Context, d Deps, src, dst string, now time.Time) (*Fork, error) {
	f, err := d.newestBackup(ctx, src)
	if err != nil {
		return nil, err
	}
	if f != nil {
		d.Progress.Update(fmt.Sprintf("restoring %s into service %s", f, dst))
		err = restoreFile(ctx, d, src, f.Backup, dst)
	} else {
		f = &Fork{Service: src, Time: now.UTC()}
		d.Progress.Update(fmt.Sprintf("service %s has no stored backup: dumping it now into service %s", src, dst))
		err = d.dumpInto(ctx, src, dst)
	}
	if err != nil {
		return nil, fmt.Errorf("forking service %s into %s: %w", src, dst, err)
	}
	_, err = editRecord(ctx, d.Client, d.Namespace, dst, func(r *Record) error {
		if r.Review == nil {
			return fmt.Errorf("service %q belongs to no review app", dst)
		}
		r.Review.ForkedFrom = f
		return nil
	})
	return f, err
}

// newestBackup is src's newest stored dump (nil: it has none).
func (d Deps) newestBackup(ctx context.Context, src string) (*Fork, error) {
	_, err := d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).Get(ctx, BackupsClaimName(src), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, kube.TranslateError(err)
	}
	files, err := Backups(ctx, d, src)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	return &Fork{Service: src, Backup: files[0].Name, Time: files[0].Time}, nil
}

// dumpInto streams a dump of src straight into dst's restore.
func (d Deps) dumpInto(ctx context.Context, src, dst string) error {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(Backup(ctx, d, src, pw))
	}()
	err := Restore(ctx, d, dst, pr)
	// a restore that stopped reading must not leave the dump blocked
	pr.CloseWithError(io.ErrClosedPipe)
	select {
	case <-done:
	case <-ctx.Done():
	}
	return err
}

// Lookup is service name's record, or a not-found input error.
func Lookup(ctx context.Context, client kubernetes.Interface, ns, name string) (*Record, error) {
	return readRecord(ctx, client, ns, name)
}
