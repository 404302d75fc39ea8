package service

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// BackupsClaimName is the volume scheduled backups write to.
func BackupsClaimName(service string) string { return ObjectName(service) + "-backups" }

// BackupCronJobName is the CronJob of a service's scheduled backups.
func BackupCronJobName(service string) string { return ObjectName(service) + "-backup" }

// Schedule is a scheduled backup: a cron schedule and how many dumps to keep.
type Schedule struct {
	Cron string
	Keep int
}

// Validate checks a schedule; its error is an input error.
func (s Schedule) Validate() error {
	if err := app.ValidateSchedule(s.Cron); err != nil {
		return inputerr.Wrap(err)
	}
	if s.Keep < 1 || s.Keep > 1000 {
		return inputerr.Errorf("--keep %d: keep 1 to 1000 dumps", s.Keep)
	}
	return nil
}

// SetSchedule makes (or changes) the service's scheduled backups: a
// CronJob whose pod, of the service's image, runs the plan's
// ScheduledDump with the binding's keys as its environment, into a
// volume of the service (as large as the service's).
func SetSchedule(ctx context.Context, d Deps, name string, s Schedule) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if _, err := readRecord(ctx, d.Client, d.Namespace, name); err != nil {
		return err // a missing service is said before any lock is taken
	}
	// under the service's lock: a schedule set beside a remove would leave
	// a CronJob of a service that is gone
	ctx, unlock, err := d.Hold(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return err
	}
	if rec.External || len(rec.Spec.ScheduledDump) == 0 {
		return fmt.Errorf("plan %q of service %q offers no scheduled backups", rec.Plan, name)
	}
	if err := d.ensureBackupsClaim(ctx, rec); err != nil {
		return err
	}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: BackupCronJobName(name), Namespace: d.Namespace, Labels: rec.labels()},
		Spec: batchv1.CronJobSpec{Schedule: s.Cron, ConcurrencyPolicy: batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: new(int32(1)), FailedJobsHistoryLimit: new(int32(2)),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{BackoffLimit: new(int32(2)),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelService + "-backup": name}},
					Spec: d.backupPodSpec(rec, rec.Spec.ScheduledDump, s.Keep)}}}}}
	cjs := d.Client.BatchV1().CronJobs(d.Namespace)
	cur, err := cjs.Get(ctx, cj.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cjs.Create(ctx, cj, metav1.CreateOptions{FieldManager: kube.FieldManager})
	case err == nil && cur.Labels[LabelService] != name:
		return fmt.Errorf("cronjob %q exists and is not tug's service %q", cj.Name, name)
	case err == nil:
		cur.Spec = cj.Spec
		_, err = cjs.Update(ctx, cur, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	}
	return kube.TranslateError(err)
}

// backupPodSpec is a pod of the service's image with the backups volume
// and the binding's keys as its environment, running argv.
func (d Deps) backupPodSpec(rec *Record, argv []string, keep int) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		EnableServiceLinks: new(bool),
		SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(999)), RunAsGroup: new(int64(999)), FSGroup: new(int64(999))},
		Containers: []corev1.Container{{
			Name: "backup", Image: rec.Image, Command: argv,
			Env:          []corev1.EnvVar{{Name: "KEEP", Value: strconv.Itoa(keep)}},
			EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: BindingSecretName(rec.Name)}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "backups", MountPath: "/backups"}},
			Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
		}},
		Volumes: []corev1.Volume{{Name: "backups", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: BackupsClaimName(rec.Name)}}}},
	}
}

func (d Deps) ensureBackupsClaim(ctx context.Context, rec *Record) error {
	size, err := resource.ParseQuantity(rec.Size)
	if err != nil {
		size = resource.MustParse("1Gi")
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: BackupsClaimName(rec.Name), Namespace: d.Namespace, Labels: rec.labels()},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
	_, err = d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).Create(ctx, pvc, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return kube.TranslateError(err)
}

// BackupFile is one dump in the backups volume.
type BackupFile struct {
	Name string    `json:"name"`
	Size int64     `json:"size"`
	Time time.Time `json:"time"`
}

// Backups lists the dumps of the scheduled backups, newest first, from a
// short-lived pod that mounts the backups volume.
func Backups(ctx context.Context, d Deps, name string) ([]BackupFile, error) {
	rec, err := d.scheduled(ctx, name)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	list := []string{"sh", "-c", "cd /backups && for f in *.dump; do [ -f \"$f\" ] && echo \"$f $(wc -c < \"$f\") $(date -u -r \"$f\" +%s)\"; done; true"}
	err = d.withBackupPod(ctx, rec, func(t session.Target) error {
		return d.Exec.Exec(ctx, t, list, session.Streams{Stdout: &out, Stderr: io.Discard})
	})
	if err != nil {
		return nil, err
	}
	files := []BackupFile{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		size, _ := strconv.ParseInt(f[1], 10, 64)
		sec, _ := strconv.ParseInt(f[2], 10, 64)
		files = append(files, BackupFile{Name: f[0], Size: size, Time: time.Unix(sec, 0).UTC()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name > files[j].Name })
	return files, nil
}

// RestoreFrom restores a dump of the backups volume: streamed out of a
// pod that mounts the volume and into the plan's restore command in the
// service's unit, as 'restore -f' does with a local file.
func RestoreFrom(ctx context.Context, d Deps, name, file string) error {
	if file == "" || strings.ContainsAny(file, "/ \t\n'\"$`\\") || strings.HasPrefix(file, ".") {
		return inputerr.Errorf("invalid --from %q: name a dump listed by 'tug service backups %s'", file, name)
	}
	return restoreFile(ctx, d, name, file, name)
}

// restoreFile restores dump file of service src's backups volume into
// service dst (src itself, or a review app's copy of it).
func restoreFile(ctx context.Context, d Deps, src, file, dst string) error {
	rec, err := d.scheduled(ctx, src)
	if err != nil {
		return err
	}
	return d.withBackupPod(ctx, rec, func(t session.Target) error {
		pr, pw := io.Pipe()
		var errOut bytes.Buffer
		read := make(chan struct{})
		go func() {
			defer close(read)
			err := d.Exec.Exec(ctx, t, []string{"cat", "/backups/" + file}, session.Streams{Stdout: pw, Stderr: &errOut})
			if err != nil {
				err = fmt.Errorf("reading %s from the backups volume: %v: %s", file, err, text.Excerpt(errOut.String()))
			}
			pw.CloseWithError(err)
		}()
		// cat's failure reaches Restore through the pipe (its reading
		// fails); a restore that stopped reading must not leave cat
		// blocked on its writes into the pipe
		err := Restore(ctx, d, dst, pr)
		pr.CloseWithError(io.ErrClosedPipe)
		select {
		case <-read:
		case <-ctx.Done():
		}
		return err
	})
}

// withBackupPod runs fn against a pod of the service's image that mounts
// its backups volume, and deletes the pod after, whatever happens.
func (d Deps) withBackupPod(ctx context.Context, rec *Record, fn func(session.Target) error) error {
	spec := d.backupPodSpec(rec, []string{"sleep", "600"}, 0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: BackupsClaimName(rec.Name) + "-", Namespace: d.Namespace,
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelService + "-backup": rec.Name}}, Spec: spec}
	pods := d.Client.CoreV1().Pods(d.Namespace)
	made, err := pods.Create(ctx, pod, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if err != nil {
		return kube.TranslateError(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = pods.Delete(cctx, made.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	}()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = kube.Until(wctx, kube.Pods(d.Client, d.Namespace, metav1.ListOptions{FieldSelector: "metadata.name=" + made.Name}), func(ps map[string]*corev1.Pod) (bool, error) {
		for _, p := range ps {
			if p.Status.Phase == corev1.PodRunning {
				return true, nil
			}
			if f := diagnose(p); f != nil {
				return false, f
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the pod that reads the backups of service %q: %w", rec.Name, err)
	}
	return fn(session.Target{Namespace: d.Namespace, Pod: made.Name, Container: "backup"})
}
func (d Deps) scheduled(ctx context.Context, name string) (*Record, error) {
	rec, err := readRecord(ctx, d.Client, d.Namespace, name)
	if err != nil {
		return nil, err
	}
	if _, err := d.Client.CoreV1().PersistentVolumeClaims(d.Namespace).Get(ctx, BackupsClaimName(name), metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("service %q has no scheduled backups; schedule them with 'tug service backup %s --schedule CRON'", name, name)
	}
	return rec, nil
}
