package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/kube"
)

// How tug's records live in the cluster:
//
//	app record   ConfigMap tug-app-<app>           data["app.json"]
//	release N    ConfigMap tug-release-<app>-v<N>  the release's record (image,
//	             processes, config keys, ...) in the annotation
//	             tug.dev/release; status in the label tug.dev/status; the
//	             failure (tug.dev/failure) and the image ID its units ran
//	             (tug.dev/image-id) in annotations. Only its status, image
//	             ID and rollout settings ever change (UpdateReleaseRollout).
//	             Secret    tug-release-<app>-v<N>  data = the config (env) of
//	             the release, which containers get through envFrom;
//	             immutable, labelled tug.dev/kind=release-config.
//
// The record and the values are apart so that RBAC can let a viewer read
// release history (ConfigMaps) and never a config value (Secrets). Releases
// made before the split are one Secret, labelled tug.dev/kind=release, with
// the record in its metadata as the ConfigMap's is now: every reader takes
// a version's ConfigMap when there is one and that Secret otherwise, and
// writes go to whichever holds the record (releasestore.go).
const (
	kindApp            = "app"
	kindRelease        = "release"
	kindReleaseConfig  = "release-config"
	appRecordKey       = "app.json"
	annotationRelease  = "tug.dev/release"
	annotationFailure  = "tug.dev/failure"
	annotationImageID  = "tug.dev/image-id"
	labelStatus        = "tug.dev/status"
	releaseNamePattern = "tug-release-%s-v%d"
)

// AppRecordName is the name of the ConfigMap that holds an app's record.
func AppRecordName(app string) string { return "tug-app-" + app }

// ReleaseSecretName is the name of release v's Secret, which holds its
// config, and of the ConfigMap that holds its record.
func ReleaseSecretName(app string, v int) string { return fmt.Sprintf(releaseNamePattern, app, v) }

// NotFoundError says an app or release does not exist, and where to look.
// App is set for what belongs to an app (a release): "release v9 of app
// "shop" not found", not "release "v9 of app shop" not found".
type NotFoundError struct {
	What, Name, Namespace, Hint string
	App                         string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("%s %q not found in namespace %q", e.What, e.Name, e.Namespace)
	if e.App != "" {
		msg = fmt.Sprintf("%s %s of app %q not found in namespace %q", e.What, e.Name, e.App, e.Namespace)
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// ExistsError says CreateApp found the app made already (another tug
// may have made it since the caller looked).
type ExistsError struct{ Name, Namespace string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("app %q already exists in namespace %q", e.Name, e.Namespace)
}

// IsExists reports whether err says the app exists already.
func IsExists(err error) bool {
	var e *ExistsError
	return errors.As(err, &e)
}

// IsNotFound reports whether err says an app or release does not exist.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// Store reads and writes apps and releases in one namespace.
type Store struct {
	Client    kubernetes.Interface
	Namespace string

	// last holds the newest copy of each app record this Store has read or
	// written, so UpdateApp can write without reading first; a conflict
	// (someone else wrote) falls back to read-modify-write.
	last map[string]*App
	// orphans are, by app, the versions of config Secrets with no release
	// record that the last ListReleases saw (a create killed between its
	// two objects): PruneReleasesIn deletes them.
	orphans map[string][]int
}

func (s *Store) remember(a *App) {
	if s.last == nil {
		s.last = map[string]*App{}
	}
	s.last[a.Name] = cloneApp(a)
}

func cloneApp(a *App) *App {
	b, _ := json.Marshal(a)
	c := &App{}
	_ = json.Unmarshal(b, c)
	c.resourceVersion = a.resourceVersion
	if c.Processes == nil {
		c.Processes = map[string]Process{}
	}
	return c
}

func (s *Store) appNotFound(name string) error {
	return &NotFoundError{What: "app", Name: name, Namespace: s.Namespace, Hint: "see 'tug app list'"}
}

// CreateApp stores a new app record; it fails when the app exists.
func (s *Store) CreateApp(ctx context.Context, a *App) error {
	cm, err := s.appConfigMap(a)
	if err != nil {
		return err
	}
	created, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return &ExistsError{Name: a.Name, Namespace: s.Namespace}
	}
	if err != nil {
		return kube.TranslateError(err)
	}
	a.resourceVersion = created.ResourceVersion
	s.remember(a)
	return nil
}

func (s *Store) appConfigMap(a *App) (*corev1.ConfigMap, error) {
	data, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	labels := kube.AppLabels(a.Name)
	labels[kube.LabelKind] = kindApp
	var annotations map[string]string
	if r := a.Review; r != nil {
		// kubectl finds review apps, and their expiry, without tug
		labels[LabelReviewOf], labels[LabelReview] = r.Of, r.Name
		annotations = map[string]string{AnnotationReviewExpires: r.ExpiresAt.UTC().Format(time.RFC3339)}
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: AppRecordName(a.Name), Namespace: s.Namespace, Labels: labels, Annotations: annotations, ResourceVersion: a.resourceVersion},
		Data:       map[string]string{appRecordKey: string(data)},
	}, nil
}

func decodeApp(cm *corev1.ConfigMap) (*App, error) {
	a := &App{}
	if err := json.Unmarshal([]byte(cm.Data[appRecordKey]), a); err != nil {
		return nil, fmt.Errorf("app record %s is damaged: %w", cm.Name, err)
	}
	a.resourceVersion = cm.ResourceVersion
	if a.Processes == nil {
		a.Processes = map[string]Process{}
	}
	return a, nil
}

// GetApp loads an app's record.
func (s *Store) GetApp(ctx context.Context, name string) (*App, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, AppRecordName(name), metav1.GetOptions{})
	// A ConfigMap of that name that tug did not make is no app record, and
	// every change would overwrite it.
	if exists, err := kube.CheckOwned("ConfigMap", s.Namespace, AppRecordName(name), name, cm, err); err != nil {
		return nil, err
	} else if !exists {
		return nil, s.appNotFound(name)
	}
	a, err := decodeApp(cm)
	if err == nil {
		s.remember(a)
	}
	return a, err
}

// ListApps loads every app record in the namespace, sorted by name: one LIST.
func (s *Store) ListApps(ctx context.Context) ([]*App, error) {
	list, err := s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.KindSelector(kindApp, "")})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	apps := make([]*App, 0, len(list.Items))
	for i := range list.Items {
		a, err := decodeApp(&list.Items[i])
		if err != nil {
			return nil, err
		}
		apps = append(apps, a)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	return apps, nil
}

// GetAppAndList is GetApp and ListApps in one request when the LIST holds
// the app's own record (the ConfigMap of its record's name, owned by the
// app): that record, and every app record sorted by name. When it does not,
// the app's GET answers as GetApp does: why it is not there (not found, or
// a ConfigMap of its name that tug did not make), or the record when the
// LIST cannot select it.
func (s *Store) GetAppAndList(ctx context.Context, name string) (*App, []*App, error) {
	if err := ValidateName(name); err != nil {
		return nil, nil, err
	}
	list, err := s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.KindSelector(kindApp, "")})
	if err != nil {
		return nil, nil, kube.TranslateError(err)
	}
	own := slices.IndexFunc(list.Items, func(cm corev1.ConfigMap) bool {
		return cm.Name == AppRecordName(name) && kube.Owned(cm.Labels, name)
	})
	var a *App
	if own < 0 {
		a, err = s.GetApp(ctx, name)
	} else {
		// its own record first, so that a damaged one says so, as GetApp would
		a, err = decodeApp(&list.Items[own])
	}
	if err != nil {
		return nil, nil, err
	}
	s.remember(a)
	apps := make([]*App, 0, len(list.Items))
	for i := range list.Items {
		if i == own {
			apps = append(apps, a)
			continue
		}
		other, err := decodeApp(&list.Items[i])
		if err != nil {
			return nil, nil, err
		}
		apps = append(apps, other)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	return a, apps, nil
}

// UpdateApp applies change to the current record and stores it, retrying
// with a fresh copy when someone else wrote in between.
func (s *Store) UpdateApp(ctx context.Context, name string, change func(*App) error) (*App, error) {
	var updated *App
	cached := s.last[name]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var a *App
		if cached != nil {
			a, cached = cloneApp(cached), nil // only the first try
		} else {
			var err error
			if a, err = s.GetApp(ctx, name); err != nil {
				return err
			}
		}
		if err := change(a); err != nil {
			return err
		}
		cm, err := s.appConfigMap(a)
		if err != nil {
			return err
		}
		out, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		if err != nil {
			return err
		}
		a.resourceVersion = out.ResourceVersion
		updated = a
		s.remember(a)
		return nil
	})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return updated, nil
}

// DeleteAppRecord removes the app's record (its other objects are removed by
// whoever calls this; see lifecycle.Remove).
func (s *Store) DeleteAppRecord(ctx context.Context, name string) error {
	err := s.Client.CoreV1().ConfigMaps(s.Namespace).Delete(ctx, AppRecordName(name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}

// PruneReleases deletes the oldest release records beyond keep, never the
// one numbered current nor those in inUse (see ReleasesToPrune).
func (s *Store) PruneReleases(ctx context.Context, app string, keep, current int, inUse ...int) error {
	rels, err := s.ListReleases(ctx, app)
	if err != nil {
		return err
	}
	return s.PruneReleasesIn(ctx, app, rels, keep, current, inUse...)
}

// PruneReleasesIn is PruneReleases over a list the caller already has
// (newest first, from this Store's ListReleases), saving a LIST; it also
// deletes the config Secrets with no record that list saw.
func (s *Store) PruneReleasesIn(ctx context.Context, app string, rels []*Release, keep, current int, inUse ...int) error {
	// The record first: a release whose record is gone is gone, and a
	// tug killed before its Secret is deleted leaves config with no
	// record, which the next prune deletes as an orphan. Pruning runs
	// under the app's lock, so an orphan is no create on its way.
	drop := ReleasesToPrune(rels, keep, current, inUse...)
	for _, v := range s.orphans[app] {
		if !slices.ContainsFunc(rels, func(r *Release) bool { return r.Version == v }) {
			drop = append(drop, v)
		}
	}
	for _, v := range drop {
		if err := s.deleteRelease(ctx, app, v); err != nil {
			return err
		}
	}
	delete(s.orphans, app)
	return nil
}

// ReleasesToPrune says which releases of rels (newest first) go so that at
// most keep remain. Some are never pruned and take their place among the
// kept first: release current (what runs, and what a failed rollout falls
// back to), the release a rollback would go to when keep leaves room for
// one (RollbackTarget: pruning it would leave 'release rollback' nowhere to
// go while failed releases fill the history; a history of 1 asks for no
// rollback), a pending release (a rollout on its way) and a staged one
// newer than current (config waiting for the next rollout), a canary's
// release, and every release in inUse: those running units use (their
// config Secret is what the units read through envFrom), which the caller
// knows from the app's record and Deployments. The rest of the places go
// to the newest others.
func ReleasesToPrune(rels []*Release, keep, current int, inUse ...int) []int {
	back := 0
	if keep > 1 {
		back = RollbackTarget(rels, current)
	}
	protected := func(r *Release) bool {
		return r.Version == current || r.Version == back || slices.Contains(inUse, r.Version) ||
			r.Status == StatusPending || r.Status == StatusCanary || r.Status == StatusStaged && r.Version > current
	}
	free := keep
	for _, r := range rels {
		if protected(r) {
			free--
		}
	}
	var drop []int
	for _, r := range rels {
		switch {
		case protected(r):
		case free > 0:
			free--
		default:
			drop = append(drop, r.Version)
		}
	}
	return drop
}

// RollbackTarget is the release 'tug release rollback' goes to when not
// told which, of rels (newest first) while release current runs: the
// newest older release that ran and was superseded, with an image; 0 when
// there is none.
func RollbackTarget(rels []*Release, current int) int {
	for _, r := range rels {
		if r.Version < current && r.Status == StatusSuperseded && r.Image != "" {
			return r.Version
		}
	}
	return 0
}

// HistoryLimit is how many release records an app keeps: what release
// current of rels says (its Rollout.History), else the app record's
// HistoryMax, else DefaultHistoryMax.
func HistoryLimit(a *App, rels []*Release, current int) int {
	for _, r := range rels {
		if r.Version == current && r.Rollout.History > 0 {
			return r.Rollout.History
		}
	}
	if a != nil && a.HistoryMax > 0 {
		return a.HistoryMax
	}
	return RolloutDefaults.History
}

// Keys lists the config's variable names, sorted.
func (c ConfigMap) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
