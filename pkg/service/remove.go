package service

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// InUseError refuses to remove a service that apps are bound to.
type InUseError struct {
	Service string
	Apps    []string
}

func (e *InUseError) Error() string {
	if len(e.Apps) == 1 {
		return fmt.Sprintf("service %q is bound to app %q; unbind it first with 'tug service unbind %s %s'", e.Service, e.Apps[0], e.Apps[0], e.Service)
	}
	return fmt.Sprintf("service %q is bound to apps %s; unbind it from each first with 'tug service unbind APP %s'", e.Service, strings.Join(e.Apps, ", "), e.Service)
}

// Removed says what a remove deleted and what it kept.
type Removed struct {
	Service string `json:"service"`
	// Kept are the objects left on purpose: the data volume and the
	// credentials that open it, unless --delete-data.
	Kept []string `json:"kept"`
}

// CheckRemovable fails, before anyone is asked, for a missing service or
// one that apps are bound to.
func CheckRemovable(ctx context.Context, d Deps, name string) error {
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return err
	}
	apps, err := boundApps(ctx, d, rec)
	if err != nil {
		return err
	}
	if len(apps) > 0 {
		names := make([]string, len(apps))
		for i, a := range apps {
			names[i] = a.App
		}
		return &InUseError{Service: name, Apps: names}
	}
	return nil
}

// Remove deletes a service's objects. Its volume, and the credentials
// Secret that its data was made with, stay unless deleteData: a create of
// the same name and plan later finds both and runs on the same data. The
// record goes last, so a remove stopped half way is finished by the next.
func Remove(ctx context.Context, d Deps, name string, deleteData bool) (*Removed, error) {
	if _, err := readRecord(ctx, d.Client, d.Namespace, name); err != nil {
		return nil, err
	}
	// under the service's lock, no bind can begin between the check and
	// the delete
	ctx, unlock, err := d.Hold(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := CheckRemovable(ctx, d, name); err != nil {
		return nil, err
	}
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return nil, err
	}
	return d.removeHeld(ctx, rec, deleteData)
}

// removeHeld deletes the objects of the service rec, its lock held (the
// data volume and credentials only with deleteData); the record goes last.
func (d Deps) removeHeld(ctx context.Context, rec *Record, deleteData bool) (*Removed, error) {
	name := rec.Name
	out := &Removed{Service: name, Kept: []string{}}
	if !rec.External {
		objs, err := rec.Spec.Render(rec.params(d.Namespace))
		if err != nil {
			return nil, err
		}
		if !deleteData {
			if err := keepsData(name, objs); err != nil {
				return nil, err
			}
		}
		keep := func(o *unstructured.Unstructured) bool { return !deleteData && o.GetKind() == "PersistentVolumeClaim" }
		if err := d.deleteObjects(ctx, name, objs, keep); err != nil {
			return nil, err
		}
		if !deleteData {
			// what is kept is what is there (a create stopped before its
			// volume was made; a StatefulSet's claims from its templates)
			kept, err := d.keptClaims(ctx, name)
			if err != nil {
				return nil, err
			}
			out.Kept = append(out.Kept, kept...)
		}
	}
	if err := d.removeSchedule(ctx, name, deleteData, out); err != nil {
		return nil, err
	}
	secrets := []string{BindingSecretName(name)}
	if deleteData || rec.External || len(out.Kept) == 0 {
		secrets = append(secrets, CredentialsSecretName(name))
	} else {
		out.Kept = append(out.Kept, "Secret "+CredentialsSecretName(name))
	}
	for _, s := range secrets {
		if err := d.deleteOwned(ctx, "secrets", s, name); err != nil {
			return nil, err
		}
	}
	return out, d.deleteOwned(ctx, "configmaps", ObjectName(name), name)
}

// keepsData refuses a remove without --delete-data that could not keep
// the data: objects tug does not know the volumes of (an operator's
// Cluster owns its claims, so deleting it deletes them), or a StatefulSet
// whose claims are deleted with it. Checked before anything is deleted.
func keepsData(name string, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if _, known := builtinKinds[gvk]; !known {
			return inputerr.Errorf("service %q's plan makes a %s, which may own its data's volumes, so removing it could delete the data: remove with --delete-data, or delete its objects by hand", name, gvk.Kind)
		}
		if gvk.Kind != "StatefulSet" {
			continue
		}
		policy, _, _ := unstructured.NestedString(o.Object, "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")
		if policy == "Delete" {
			return inputerr.Errorf("service %q's StatefulSet deletes its volumes with it (persistentVolumeClaimRetentionPolicy), so removing it deletes the data: remove with --delete-data", name)
		}
	}
	return nil
}

// keptClaims are the service's volume claims still there after a remove
// without --delete-data: the plan's own and those a StatefulSet made
// from its templates (labelled with the service by the template).
func (d Deps) keptClaims(ctx context.Context, name string) ([]string, error) {
	l, err := d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelService + "=" + name})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var out []string
	for _, pvc := range l.Items {
		// the backups claim is said by removeSchedule, as the backups'
		if pvc.DeletionTimestamp == nil && pvc.Name != BackupsClaimName(name) {
			out = append(out, "PersistentVolumeClaim "+pvc.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// deleteOwned deletes a Secret or ConfigMap only while it is the service's.
func (d Deps) deleteOwned(ctx context.Context, kind, objName, service string) error {
	var labels map[string]string
	var err error
	if kind == "secrets" {
		s, e := d.Client.CoreV1().Secrets(d.Namespace).Get(ctx, objName, metav1.GetOptions{})
		err = e
		if e == nil {
			labels = s.Labels
		}
	} else {
		c, e := d.Client.CoreV1().ConfigMaps(d.Namespace).Get(ctx, objName, metav1.GetOptions{})
		err = e
		if e == nil {
			labels = c.Labels
		}
	}
	if apierrors.IsNotFound(err) || (err == nil && labels[LabelService] != service) {
		return nil
	}
	if err != nil {
		return kube.TranslateError(err)
	}
	if kind == "secrets" {
		err = d.Client.CoreV1().Secrets(d.Namespace).Delete(ctx, objName, metav1.DeleteOptions{})
	} else {
		err = d.Client.CoreV1().ConfigMaps(d.Namespace).Delete(ctx, objName, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}

// removeSchedule deletes the scheduled backups' CronJob, and their volume
// with deleteData (else it is kept, and said).
func (d Deps) removeSchedule(ctx context.Context, name string, deleteData bool, out *Removed) error {
	cj, err := d.Client.BatchV1().CronJobs(d.Namespace).Get(ctx, BackupCronJobName(name), metav1.GetOptions{})
	if err == nil && cj.Labels[LabelService] == name {
		bg := metav1.DeletePropagationBackground
		if err := d.Client.BatchV1().CronJobs(d.Namespace).Delete(ctx, cj.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	pvc, err := d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).Get(ctx, BackupsClaimName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && pvc.Labels[LabelService] != name) {
		return nil
	}
	if err != nil {
		return kube.TranslateError(err)
	}
	if !deleteData {
		out.Kept = append(out.Kept, "PersistentVolumeClaim "+pvc.Name+" (backups)")
		return nil
	}
	if err := d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}
