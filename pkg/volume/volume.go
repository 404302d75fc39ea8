// Package volume keeps persistent volumes that apps mount: each is a
// PersistentVolumeClaim of the namespace, labelled tug.dev/kind=volume,
// named render.VolumeClaimName(name). Volumes outlive apps (removing an app
// leaves its data); binding one to an app is app configuration, carried by a
// new release (see BindChange).
package volume

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

const (
	// LabelVolume names the tug volume a PersistentVolumeClaim is.
	LabelVolume = "tug.dev/volume"
	kindVolume  = "volume"
)

// Volume is one volume as `tug volume list` shows it; its JSON shape is
// documented in docs/output.md.
type Volume struct {
	Name string `json:"name"`
	// Size is what was asked for; Capacity what the bound PersistentVolume
	// provides ("" until bound).
	Size     string `json:"size"`
	Capacity string `json:"capacity,omitempty"`
	// AccessMode is RWO, RWX, ROX or RWOP.
	AccessMode   string `json:"accessMode"`
	StorageClass string `json:"storageClass,omitempty"`
	// Status is the claim's phase: Pending (no storage yet), Bound, Lost,
	// or Terminating while it is removed.
	Status string `json:"status"`
	// Apps are the apps whose deployed release mounts the volume.
	Apps      []string  `json:"apps"`
	CreatedAt time.Time `json:"createdAt"`
	// Warning, from create only, says why the volume may stay Pending: no
	// StorageClass to provision it (storageWarning).
	Warning string `json:"warning,omitempty"`
}

// CreateOptions describe a new volume.
type CreateOptions struct {
	Name         string
	Size         string
	StorageClass string // "": the cluster's default
	AccessMode   string // "": RWO
}

// Validate checks everything that needs no cluster; its error is an input
// error.
func (o CreateOptions) Validate() error {
	return inputerr.Wrap(o.validate())
}

func (o CreateOptions) validate() error {
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	if _, err := ParseSize(o.Size); err != nil {
		return err
	}
	if o.AccessMode != "" {
		if _, err := ParseAccessMode(o.AccessMode); err != nil {
			return err
		}
	}
	return ValidateStorageClass(o.StorageClass)
}

// Create makes a volume's PersistentVolumeClaim. Whether it gets storage at
// once depends on the StorageClass (a provisioner, or a PersistentVolume made
// by an admin); until then it is Pending, and units that mount it wait.
func Create(ctx context.Context, client kubernetes.Interface, namespace string, o CreateOptions) (*Volume, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	size, _ := ParseSize(o.Size)
	mode := corev1.ReadWriteOnce
	if o.AccessMode != "" {
		mode, _ = ParseAccessMode(o.AccessMode)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      render.VolumeClaimName(o.Name),
			Namespace: namespace,
			Labels:    map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelKind: kindVolume, LabelVolume: o.Name},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if o.StorageClass != "" {
		pvc.Spec.StorageClassName = &o.StorageClass
	}
	warning, err := storageWarning(ctx, client, o.StorageClass)
	if err != nil {
		return nil, err
	}
	created, err := client.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pvc, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("volume %q already exists in namespace %q; see 'tug volume list'", o.Name, namespace)
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	v := fromClaim(created, nil)
	v.Warning = warning
	return v, nil
}

// storageWarning looks, before the claim is made, at what will give it
// storage: with no StorageClass to provision it (none named and no default,
// or the named one missing), the volume stays Pending until an admin makes
// a PersistentVolume for it, which is said at once rather than when a bind
// times out. StorageClasses are cluster-wide: a
// user who may not read them is told nothing.
func storageWarning(ctx context.Context, client kubernetes.Interface, class string) (string, error) {
	if class != "" {
		_, err := client.StorageV1().StorageClasses().Get(ctx, class, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("the cluster has no StorageClass %q to provision it: it stays Pending until it binds a PersistentVolume an admin made with that class (see 'kubectl get storageclass')", class), nil
		}
		return "", nil
	}
	list, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", nil
	}
	for _, sc := range list.Items {
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			return "", nil
		}
	}
	if len(list.Items) == 0 {
		return "the cluster has no StorageClass: the volume stays Pending, and units that mount it cannot start, until an admin makes a PersistentVolume for it", nil
	}
	return "the cluster has no default StorageClass: the volume stays Pending until an admin makes a PersistentVolume for it; name a class with --storage-class (see 'kubectl get storageclass')", nil
}

// List shows the namespace's volumes and the apps that mount them: one LIST
// of claims and one of app records.
func List(ctx context.Context, store *app.Store) ([]Volume, error) {
	claims, err := store.Client.CoreV1().PersistentVolumeClaims(store.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.KindSelector(kindVolume, "")})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	users, err := boundApps(ctx, store)
	if err != nil {
		return nil, err
	}
	out := make([]Volume, 0, len(claims.Items))
	for i := range claims.Items {
		c := &claims.Items[i]
		out = append(out, *fromClaim(c, users[c.Labels[LabelVolume]]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Get shows one volume, or a NotFoundError.
func Get(ctx context.Context, store *app.Store, name string) (*Volume, error) {
	c, err := getClaim(ctx, store.Client, store.Namespace, name)
	if err != nil {
		return nil, err
	}
	users, err := boundApps(ctx, store)
	if err != nil {
		return nil, err
	}
	return fromClaim(c, users[name]), nil
}

// InUseError refuses to remove a volume that apps still mount.
type InUseError struct {
	Volume string
	Apps   []string
}

func (e *InUseError) Error() string {
	if len(e.Apps) == 1 {
		return fmt.Sprintf("volume %q is bound to app %q; unbind it first with 'tug volume unbind %s %s'", e.Volume, e.Apps[0], e.Apps[0], e.Volume)
	}
	return fmt.Sprintf("volume %q is bound to apps %s; unbind it from each first with 'tug volume unbind APP %s'", e.Volume, strings.Join(e.Apps, ", "), e.Volume)
}

// Remove deletes a volume and its data. It refuses, with an InUseError, while
// an app's deployed release mounts it.
func Remove(ctx context.Context, store *app.Store, name string) error {
	v, err := Get(ctx, store, name)
	if err != nil {
		return err
	}
	if len(v.Apps) > 0 {
		return &InUseError{Volume: name, Apps: v.Apps}
	}
	err = store.Client.CoreV1().PersistentVolumeClaims(store.Namespace).Delete(ctx, render.VolumeClaimName(name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}

// ValidateBind checks `tug volume bind` input without a cluster: the app,
// the volume, where it mounts and the process. Its error is an input error.
func ValidateBind(appName string, b app.VolumeBinding) error {
	if err := app.ValidateName(appName); err != nil {
		return err
	}
	if err := ValidateName(b.Volume); err != nil {
		return err
	}
	if err := ValidateMountPath(b.MountPath); err != nil {
		return err
	}
	if b.Process != "" {
		return app.ValidateProcessName(b.Process)
	}
	return nil
}

// BindChange mounts a volume into an app's units (b.Process's, or every
// process's) as a new release. The volume must exist, and be bound to the
// app at most once.
func BindChange(ctx context.Context, client kubernetes.Interface, namespace string, b app.VolumeBinding) deploy.Change {
	b.MountPath = cleanMountPath(b.MountPath)
	msg := fmt.Sprintf("volume %s at %s", b.Volume, b.MountPath)
	if b.Process != "" {
		msg += " (" + b.Process + ")"
	}
	if b.ReadOnly {
		msg += ", read-only"
	}
	return deploy.SettingsChange(app.KindVolume, msg, func(a *app.App, r *app.Release) error {
		if b.Process != "" {
			if _, err := a.Process(b.Process); err != nil {
				return err
			}
		}
		c, err := getClaim(ctx, client, namespace, b.Volume)
		if err != nil {
			return err
		}
		if c.DeletionTimestamp != nil {
			return fmt.Errorf("volume %q is being removed; create another with 'tug volume create'", b.Volume)
		}
		if slices.Contains(c.Spec.AccessModes, corev1.ReadOnlyMany) && len(c.Spec.AccessModes) == 1 && !b.ReadOnly {
			return fmt.Errorf("volume %q is read-only (ROX); bind it with --read-only", b.Volume)
		}
		return addBinding(a.Name, r, b)
	})
}

// UnbindChange unmounts a volume from an app's units as a new release. The
// data stays in the volume.
func UnbindChange(volume string) deploy.Change {
	return deploy.SettingsChange(app.KindVolume, "volume "+volume+" unbound", func(a *app.App, r *app.Release) error {
		return removeBinding(a.Name, r, volume)
	})
}

// addBinding adds b to the release's bindings, refusing a second binding of
// the same volume and two volumes at one path in the same units.
func addBinding(appName string, r *app.Release, b app.VolumeBinding) error {
	for _, cur := range r.Volumes {
		if cur.Volume == b.Volume {
			return fmt.Errorf("volume %q is already bound to app %q at %s; unbind it first with 'tug volume unbind %s %s'", b.Volume, appName, cur.MountPath, appName, b.Volume)
		}
		overlap := cur.Process == "" || b.Process == "" || cur.Process == b.Process
		if overlap && cleanMountPath(cur.MountPath) == b.MountPath {
			return fmt.Errorf("volume %q is already mounted at %s in app %q; choose another --mount-path", cur.Volume, b.MountPath, appName)
		}
	}
	r.Volumes = append(slices.Clone(r.Volumes), b)
	return nil
}

// removeBinding drops volume's binding from the release.
func removeBinding(appName string, r *app.Release, volume string) error {
	i := slices.IndexFunc(r.Volumes, func(b app.VolumeBinding) bool { return b.Volume == volume })
	if i < 0 {
		return fmt.Errorf("volume %q is not bound to app %q; see 'tug volume list'", volume, appName)
	}
	r.Volumes = slices.Delete(slices.Clone(r.Volumes), i, i+1)
	return nil
}

func getClaim(ctx context.Context, client kubernetes.Interface, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	c, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, render.VolumeClaimName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && c.Labels[kube.LabelKind] != kindVolume) {
		return nil, &app.NotFoundError{What: "volume", Name: name, Namespace: namespace, Hint: "see 'tug volume list', or create it with 'tug volume create " + name + " --size SIZE'"}
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return c, nil
}

// boundApps maps each volume to the apps whose deployed release mounts it,
// from the app records (see app.App.Volumes).
func boundApps(ctx context.Context, store *app.Store) (map[string][]string, error) {
	apps, err := store.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, a := range apps { // sorted by name
		for _, v := range a.Volumes {
			out[v] = append(out[v], a.Name)
		}
	}
	return out, nil
}

func fromClaim(c *corev1.PersistentVolumeClaim, apps []string) *Volume {
	v := &Volume{
		Name:      c.Labels[LabelVolume],
		Status:    string(c.Status.Phase),
		Apps:      apps,
		CreatedAt: c.CreationTimestamp.UTC(),
	}
	if v.Name == "" {
		v.Name = strings.TrimPrefix(c.Name, render.VolumeClaimName(""))
	}
	if v.Apps == nil {
		v.Apps = []string{}
	}
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		v.Size = q.String()
	}
	if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = q.String()
	}
	modes := make([]string, 0, len(c.Spec.AccessModes))
	for _, m := range c.Spec.AccessModes {
		modes = append(modes, ShortAccessMode(m))
	}
	v.AccessMode = strings.Join(modes, ",")
	if c.Spec.StorageClassName != nil {
		v.StorageClass = *c.Spec.StorageClassName
	}
	if v.Status == "" {
		v.Status = string(corev1.ClaimPending)
	}
	if c.DeletionTimestamp != nil {
		v.Status = "Terminating"
	}
	return v
}
