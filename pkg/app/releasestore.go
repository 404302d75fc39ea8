package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"tug.dev/tug/pkg/kube"
)

// A release is two objects of one name (see the top of store.go): the
// config Secret, made first, and the record ConfigMap, made second. A
// release exists once its record does. What a kill leaves at each point:
//
//   - before the Secret is made: nothing.
//   - between the two creates: config with no record (an orphan). No
//     reader counts it (it is no release, and the app's LastRelease did
//     not move, as reconcile counts records only), the next create of
//     that version (LastRelease+1, under the app's lock) deletes and
//     remakes it (createValues), pruning deletes it, app removal too.
//   - after the record: a release past LastRelease, which reconcile
//     counts, as when a release was one Secret.
//
// Pruning deletes the record first, then the Secret: a kill between the
// two leaves an orphan, which the next prune deletes.

// ReleaseRecordSelector selects an app's release records (ConfigMaps).
func ReleaseRecordSelector(app string) string { return kube.KindSelector(kindRelease, app) }

// ReleaseExistsError says release v of an app exists already.
type ReleaseExistsError struct {
	App     string
	Version int
}

func (e *ReleaseExistsError) Error() string {
	return fmt.Sprintf("release v%d of app %q already exists; another deploy may be running", e.Version, e.App)
}

// CreateRelease stores release r with its config: the immutable config
// Secret, then the record ConfigMap.
func (s *Store) CreateRelease(ctx context.Context, r *Release, config ConfigMap) error {
	return s.createRelease(ctx, r, config, nil)
}

// ValidateRelease asks the API server whether it would store release r with
// its config (dry-run creates: admission and validation run, nothing is
// stored), so a dry run fails where the real change would, e.g. on a
// config too large for one Secret.
func (s *Store) ValidateRelease(ctx context.Context, r *Release, config ConfigMap) error {
	return s.createRelease(ctx, r, config, []string{metav1.DryRunAll})
}

func (s *Store) createRelease(ctx context.Context, r *Release, config ConfigMap, dryRun []string) error {
	r.ConfigKeys = config.Keys()
	record, err := json.Marshal(r)
	if err != nil {
		return err
	}
	name := ReleaseSecretName(r.App, r.Version)
	labels := releaseLabels(r.App, r.Version, kindReleaseConfig)
	data := make(map[string][]byte, len(config))
	for k, v := range config {
		data[k] = []byte(v)
	}
	immutable := true
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque, Immutable: &immutable, Data: data,
	}
	create := metav1.CreateOptions{FieldManager: kube.FieldManager, DryRun: dryRun}
	made, err := s.createValues(ctx, r, sec, create)
	if err != nil {
		return err
	}
	if len(dryRun) == 0 && s.orphans != nil {
		// an orphan of this version that a list saw is this release's now
		s.orphans[r.App] = slices.DeleteFunc(s.orphans[r.App], func(v int) bool { return v == r.Version })
	}
	// Killed here: config with no record, which no reader counts (see above).
	labels = releaseLabels(r.App, r.Version, kindRelease)
	labels[labelStatus] = string(r.Status)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: s.Namespace, Labels: labels,
		Annotations: map[string]string{annotationRelease: string(record)},
	}}
	_, err = s.Client.CoreV1().ConfigMaps(s.Namespace).Create(ctx, cm, create)
	if err != nil && made != nil && len(dryRun) == 0 {
		// no release: leave no config behind (a failed delete leaves an
		// orphan, which the next create or prune deletes)
		_ = s.Client.CoreV1().Secrets(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &made.UID}})
	}
	if apierrors.IsAlreadyExists(err) {
		// another release's record (a lock lost meanwhile): the config
		// just made is deleted above, not left paired with it
		return &ReleaseExistsError{App: r.App, Version: r.Version}
	}
	return kube.TranslateError(err)
}

func releaseLabels(app string, v int, kind string) map[string]string {
	labels := kube.AppLabels(app)
	labels[kube.LabelKind] = kind
	labels[kube.LabelRelease] = strconv.Itoa(v)
	return labels
}

// createValues creates release r's config Secret. Its name taken by the
// config of a create killed before its record (no record ConfigMap, no
// record in the Secret) is no release: it is deleted and made again, as
// the create runs under the app's lock. A dry run stops at saying so.
func (s *Store) createValues(ctx context.Context, r *Release, sec *corev1.Secret, create metav1.CreateOptions) (*corev1.Secret, error) {
	secrets := s.Client.CoreV1().Secrets(s.Namespace)
	made, err := secrets.Create(ctx, sec, create)
	if !apierrors.IsAlreadyExists(err) {
		return made, kube.TranslateError(err)
	}
	orphan, err := s.orphanValues(ctx, r)
	if err != nil || len(create.DryRun) > 0 {
		return nil, err
	}
	if orphan != nil {
		err := secrets.Delete(ctx, sec.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &orphan.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, kube.TranslateError(err)
		}
	}
	made, err = secrets.Create(ctx, sec, create)
	if apierrors.IsAlreadyExists(err) {
		return nil, &ReleaseExistsError{App: r.App, Version: r.Version}
	}
	return made, kube.TranslateError(err)
}

// orphanValues is the Secret of release r's name when it is config with no
// record; a ReleaseExistsError when the release exists (its record
// ConfigMap, or an old-form Secret); nil when the Secret is gone.
func (s *Store) orphanValues(ctx context.Context, r *Release) (*corev1.Secret, error) {
	name := ReleaseSecretName(r.App, r.Version)
	_, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return nil, &ReleaseExistsError{App: r.App, Version: r.Version}
	}
	if !apierrors.IsNotFound(err) {
		return nil, kube.TranslateError(err)
	}
	sec, err := s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, kube.TranslateError(err)
	case hasRecord(&sec.ObjectMeta) || !kube.Owned(sec.Labels, r.App) || sec.Labels[kube.LabelKind] != kindReleaseConfig:
		// a release of the old form, a Secret that is not tug's, or one
		// that is no release's config (one an export applied by hand)
		return nil, &ReleaseExistsError{App: r.App, Version: r.Version}
	}
	return sec, nil
}

// hasRecord says whether an object holds a release record: a record
// ConfigMap, or a Secret of the old form.
func hasRecord(m *metav1.ObjectMeta) bool {
	_, ok := m.Annotations[annotationRelease]
	return ok
}

func decodeRelease(m *metav1.ObjectMeta) (*Release, error) {
	r := &Release{}
	if err := json.Unmarshal([]byte(m.Annotations[annotationRelease]), r); err != nil {
		return nil, fmt.Errorf("release record %s is damaged: %w", m.Name, err)
	}
	if st := m.Labels[labelStatus]; st != "" {
		r.Status = Status(st)
	}
	if reason := m.Annotations[annotationFailure]; reason != "" {
		r.FailReason = reason
	}
	if id := m.Annotations[annotationImageID]; id != "" {
		r.ImageID = id
	}
	return r, nil
}

func (s *Store) releaseNotFound(app string, v int) error {
	return &NotFoundError{What: "release", Name: fmt.Sprintf("v%d", v), App: app, Namespace: s.Namespace, Hint: fmt.Sprintf("see 'tug release list %s'", app)}
}

// GetRelease loads release v of an app with its config values: its record
// and its Secret, read at once (two GETs in parallel). It fails when the
// values cannot be read: whoever asks for them builds on them.
func (s *Store) GetRelease(ctx context.Context, app string, v int) (*Release, ConfigMap, error) {
	name := ReleaseSecretName(app, v)
	var cm *corev1.ConfigMap
	var cmErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		cm, cmErr = s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	}()
	sec, secErr := s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	<-done
	switch {
	case cmErr == nil:
		if apierrors.IsNotFound(secErr) {
			// read before a create made it, the record after: once more
			sec, secErr = s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(secErr) {
			return nil, nil, fmt.Errorf("release v%d of app %q has lost its config: Secret %s is not in namespace %q; deploy or roll back to another release", v, app, name, s.Namespace)
		}
		if secErr != nil {
			return nil, nil, kube.TranslateError(secErr)
		}
		r, err := decodeRelease(&cm.ObjectMeta)
		return r, configOf(sec), err
	case !apierrors.IsNotFound(cmErr):
		return nil, nil, kube.TranslateError(cmErr)
	case secErr == nil && hasRecord(&sec.ObjectMeta):
		r, err := decodeRelease(&sec.ObjectMeta)
		return r, configOf(sec), err
	case secErr == nil || apierrors.IsNotFound(secErr):
		return nil, nil, s.releaseNotFound(app, v)
	}
	return nil, nil, kube.TranslateError(secErr)
}

// GetReleaseRecord loads release v of an app without its config: one GET
// of its record, and a second of its Secret only for a release of the old
// form. A viewer, who reads no Secret, reads every release made since the
// split; one of the old form is refused to it.
func (s *Store) GetReleaseRecord(ctx context.Context, app string, v int) (*Release, error) {
	m, _, err := s.recordMeta(ctx, app, v)
	if err != nil {
		return nil, err
	}
	return decodeRelease(m)
}

// recordMeta is the metadata of what holds release v's record: its
// ConfigMap, or (legacy) an old-form Secret.
func (s *Store) recordMeta(ctx context.Context, app string, v int) (m *metav1.ObjectMeta, legacy bool, err error) {
	name := ReleaseSecretName(app, v)
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return &cm.ObjectMeta, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, false, kube.TranslateError(err)
	}
	sec, err := s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && !hasRecord(&sec.ObjectMeta) {
		return nil, false, s.releaseNotFound(app, v)
	}
	if err != nil {
		return nil, false, kube.TranslateError(err)
	}
	return &sec.ObjectMeta, true, nil
}

// releaseList is what the two LISTs of an app's releases found.
type releaseList struct {
	rels []*Release // newest first
	// secrets are each version's config Secret (or old-form Secret);
	// none when the caller may not list Secrets (noSecrets).
	secrets   map[int]*corev1.Secret
	orphans   []int // config Secrets with no record
	noSecrets bool
}

// listReleases lists an app's record ConfigMaps and its release Secrets
// (old-form and config) at once: two LISTs in parallel, so a list takes
// one round trip as when a release was one Secret. A caller RBAC refuses
// Secrets (a viewer) gets the records of the ConfigMaps alone.
func (s *Store) listReleases(ctx context.Context, app string) (*releaseList, error) {
	var cms *corev1.ConfigMapList
	var cmErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		cms, cmErr = s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ReleaseRecordSelector(app)})
	}()
	sel := fmt.Sprintf("%s=%s,%s in (%s,%s),%s=%s", kube.LabelManagedBy, kube.ManagedBy, kube.LabelKind, kindRelease, kindReleaseConfig, kube.LabelApp, app)
	secs, secErr := s.Client.CoreV1().Secrets(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	<-done
	if cmErr != nil {
		return nil, kube.TranslateError(cmErr)
	}
	out := &releaseList{secrets: map[int]*corev1.Secret{}}
	switch {
	case kube.IsRBACDenial(secErr):
		out.noSecrets, secs = true, &corev1.SecretList{}
	case secErr != nil:
		return nil, kube.TranslateError(secErr)
	}
	seen := map[int]bool{}
	for i := range cms.Items {
		r, err := decodeRelease(&cms.Items[i].ObjectMeta)
		if err != nil {
			return nil, err
		}
		out.rels, seen[r.Version] = append(out.rels, r), true
	}
	if err := out.addSecrets(secs.Items, seen); err != nil {
		return nil, err
	}
	sort.Slice(out.rels, func(i, j int) bool { return out.rels[i].Version > out.rels[j].Version })
	return out, nil
}

// addSecrets adds the release Secrets: an old-form one is a release when
// no record ConfigMap has its version (seen); config with no record is an
// orphan.
func (l *releaseList) addSecrets(items []corev1.Secret, seen map[int]bool) error {
	for i := range items {
		sec := &items[i]
		v, err := strconv.Atoi(sec.Labels[kube.LabelRelease])
		if err != nil {
			continue // not tug's numbering: no release of it
		}
		l.secrets[v] = sec
		switch {
		case seen[v]:
		case hasRecord(&sec.ObjectMeta):
			r, err := decodeRelease(&sec.ObjectMeta)
			if err != nil {
				return err
			}
			l.rels, seen[v] = append(l.rels, r), true
		default:
			l.orphans = append(l.orphans, v)
		}
	}
	return nil
}

// ListReleases loads an app's releases, newest first, without config
// values (see listReleases: one round trip; a viewer gets the records
// made since the split). It remembers the orphans it saw for
// PruneReleasesIn.
func (s *Store) ListReleases(ctx context.Context, app string) ([]*Release, error) {
	l, err := s.listReleases(ctx, app)
	if err != nil {
		return nil, err
	}
	if !l.noSecrets {
		if s.orphans == nil {
			s.orphans = map[string][]int{}
		}
		s.orphans[app] = l.orphans
	}
	return l.rels, nil
}

// ListReleasesAsViewer is ListReleases that also says whether the caller
// may not read Secrets: releases stored before records and values were
// split are one Secret each, and such a caller does not see them.
func (s *Store) ListReleasesAsViewer(ctx context.Context, app string) (rels []*Release, secretsRefused bool, err error) {
	l, err := s.listReleases(ctx, app)
	if err != nil {
		return nil, false, err
	}
	return l.rels, l.noSecrets, nil
}

// FindRelease returns the newest release for which match is true, with its
// config, from the same round trip as ListReleases, or nil when none
// matches.
func (s *Store) FindRelease(ctx context.Context, app string, match func(*Release) bool) (*Release, ConfigMap, error) {
	l, err := s.listReleases(ctx, app)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range l.rels {
		if !match(r) {
			continue
		}
		sec := l.secrets[r.Version]
		if sec == nil {
			// its config unread (refused, or lost): say why as GetRelease does
			_, config, err := s.GetRelease(ctx, app, r.Version)
			return r, config, err
		}
		return r, configOf(sec), nil
	}
	return nil, nil, nil
}

func configOf(sec *corev1.Secret) ConfigMap {
	config := make(ConfigMap, len(sec.Data))
	for k, v := range sec.Data {
		config[k] = string(v)
	}
	return config
}

// SetReleaseStatus records where release v stands (and why, when it failed).
func (s *Store) SetReleaseStatus(ctx context.Context, app string, v int, st Status, reason string) error {
	return s.patchRecord(ctx, app, v, map[string]any{
		"labels":      map[string]any{labelStatus: string(st)},
		"annotations": map[string]any{annotationFailure: nilIfEmpty(reason)},
	})
}

// SetReleaseImageID records the image ID release v's units ran (see
// Release.ImageID).
func (s *Store) SetReleaseImageID(ctx context.Context, app string, v int, id string) error {
	return s.patchRecord(ctx, app, v, map[string]any{"annotations": map[string]any{annotationImageID: id}})
}

// patchRecord merge-patches the metadata of what holds release v's record:
// its ConfigMap (one request), or an old-form Secret when there is none.
func (s *Store) patchRecord(ctx context.Context, app string, v int, meta map[string]any) error {
	data, _ := json.Marshal(map[string]any{"metadata": meta})
	name := ReleaseSecretName(app, v)
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager}
	_, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Patch(ctx, name, types.MergePatchType, data, opts)
	if !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	// no record ConfigMap: the old form, if its Secret holds the record (a
	// config Secret with none is no release, and gets no status)
	if _, legacy, err := s.recordMeta(ctx, app, v); err != nil || !legacy {
		if err == nil || IsNotFound(err) {
			return &NotFoundError{What: "release", Name: fmt.Sprintf("v%d", v), App: app, Namespace: s.Namespace}
		}
		return err
	}
	_, err = s.Client.CoreV1().Secrets(s.Namespace).Patch(ctx, name, types.MergePatchType, data, opts)
	if apierrors.IsNotFound(err) {
		return &NotFoundError{What: "release", Name: fmt.Sprintf("v%d", v), App: app, Namespace: s.Namespace}
	}
	return kube.TranslateError(err)
}

// UpdateReleaseRollout changes release v's Rollout or Jobs in place, the
// parts of a release record that may change after it is made (see
// Release.Rollout; a job change restarts no unit): change gets the release
// as stored and edits its Rollout, Jobs and RolloutChanges, or refuses.
// Only those fields of the record are written, on the condition that the
// object holding it (its ConfigMap, or an old-form Secret) is as read; a
// conflict reads it again and retries.
func (s *Store) UpdateReleaseRollout(ctx context.Context, app string, v int, change func(*Release) error) (*Release, error) {
	var updated *Release
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, legacy, err := s.recordMeta(ctx, app, v)
		if err != nil {
			return err
		}
		r, err := decodeRelease(m)
		if err != nil {
			return err
		}
		if err := change(r); err != nil {
			return err
		}
		patch, err := rolloutPatch(m, r)
		if err != nil {
			return err
		}
		opts := metav1.PatchOptions{FieldManager: kube.FieldManager}
		if legacy {
			_, err = s.Client.CoreV1().Secrets(s.Namespace).Patch(ctx, m.Name, types.MergePatchType, patch, opts)
		} else {
			_, err = s.Client.CoreV1().ConfigMaps(s.Namespace).Patch(ctx, m.Name, types.MergePatchType, patch, opts)
		}
		if err != nil {
			return err
		}
		updated = r
		return nil
	})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return updated, nil
}

// rolloutPatch is the patch that writes r's Rollout, RolloutChanges and
// Jobs into the record m holds, on the condition that m is as read. The
// record's other fields stay byte for byte as they are, even those this
// tug does not know.
func rolloutPatch(m *metav1.ObjectMeta, r *Release) ([]byte, error) {
	var record map[string]json.RawMessage
	if err := json.Unmarshal([]byte(m.Annotations[annotationRelease]), &record); err != nil {
		return nil, fmt.Errorf("release record %s is damaged: %w", m.Name, err)
	}
	set := func(key string, v any, empty bool) {
		if empty {
			delete(record, key)
			return
		}
		record[key], _ = json.Marshal(v)
	}
	set("rollout", r.Rollout, r.Rollout.IsZero())
	set("rolloutChanges", r.RolloutChanges, len(r.RolloutChanges) == 0)
	set("jobs", r.Jobs, len(r.Jobs) == 0)
	data, err := json.Marshal(record)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": m.ResourceVersion,
		"annotations":     map[string]any{annotationRelease: string(data)},
	}})
}

// deleteRelease deletes release v: its record, then its Secret (config, or
// the old form's whole release).
func (s *Store) deleteRelease(ctx context.Context, app string, v int) error {
	name := ReleaseSecretName(app, v)
	err := s.Client.CoreV1().ConfigMaps(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	err = s.Client.CoreV1().Secrets(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
