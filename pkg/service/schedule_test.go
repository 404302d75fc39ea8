package service

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/session"
)

// scriptExec runs each command by a script: what it prints and whether
// it fails; it keeps where each ran, its argv and its stdin.
type scriptExec struct {
	script func(argv []string) (string, error)
	mu     sync.Mutex
	ran    []ranCommand
}

type ranCommand struct {
	pod, stdin string
	argv       []string
}

func (e *scriptExec) Exec(_ context.Context, t session.Target, argv []string, s session.Streams) error {
	var in []byte
	if s.Stdin != nil {
		in, _ = io.ReadAll(s.Stdin)
	}
	out, err := e.script(argv)
	if s.Stdout != nil {
		_, _ = io.WriteString(s.Stdout, out)
	}
	e.mu.Lock()
	e.ran = append(e.ran, ranCommand{pod: t.Pod, argv: argv, stdin: string(in)})
	e.mu.Unlock()
	return err
}

func (e *scriptExec) Attach(context.Context, session.Target, session.Streams) error { return nil }

func (e *scriptExec) commands() []ranCommand {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ranCommand(nil), e.ran...)
}

// backupPodsRun names the pods made from a GenerateName and has them
// running at once, as the kubelet would soon after.
func backupPodsRun(c *fake.Clientset) {
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Name == "" {
			p.Name = p.GenerateName + "abcde"
		}
		p.Status.Phase = corev1.PodRunning
		return false, nil, nil
	})
}

func backupsClaim(t *testing.T, c *fake.Clientset) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: BackupsClaimName("db"), Namespace: testNS, Labels: Labels("db")}}
	if _, err := c.CoreV1().PersistentVolumeClaims(testNS).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestSetScheduleMakesTheCronJobAndItsVolume(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	if err := SetSchedule(ctx, d, "db", Schedule{Cron: "0 3 * * *", Keep: 7}); err != nil {
		t.Fatal(err)
	}
	cj, err := c.BatchV1().CronJobs(testNS).Get(ctx, BackupCronJobName("db"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Spec.Schedule != "0 3 * * *" || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Labels[LabelService] != "db" {
		t.Errorf("cronjob %+v", cj.Spec)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	ctr := pod.Containers[0]
	if ctr.Env[0].Value != "7" || ctr.EnvFrom[0].SecretRef.Name != BindingSecretName("db") || !strings.Contains(strings.Join(ctr.Command, " "), "pg_dump") {
		t.Errorf("backup container %+v", ctr)
	}
	if pod.Volumes[0].PersistentVolumeClaim.ClaimName != BackupsClaimName("db") || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("backup pod %+v", pod)
	}
	pvc, err := c.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, BackupsClaimName("db"), metav1.GetOptions{})
	if err != nil || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Fatalf("backups volume %v %v", pvc, err)
	}

	// set again: the CronJob changes, the volume stays
	if err := SetSchedule(ctx, d, "db", Schedule{Cron: "@daily", Keep: 2}); err != nil {
		t.Fatal(err)
	}
	cj, _ = c.BatchV1().CronJobs(testNS).Get(ctx, BackupCronJobName("db"), metav1.GetOptions{})
	if cj.Spec.Schedule != "@daily" || cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env[0].Value != "2" {
		t.Errorf("the schedule set again: %+v", cj.Spec)
	}
}

// A schedule that cannot be, or of a service that cannot have one, is
// refused and makes nothing.
func TestSetScheduleRefuses(t *testing.T) {
	tests := []struct {
		name    string
		service string
		s       Schedule
		setup   func(*testing.T, *fake.Clientset)
		input   bool
		want    string
	}{
		{name: "bad cron", service: "db", s: Schedule{Cron: "every day", Keep: 1}, input: true},
		{name: "keep none", service: "db", s: Schedule{Cron: "@daily", Keep: 0}, input: true, want: "keep 1 to 1000"},
		{name: "keep too many", service: "db", s: Schedule{Cron: "@daily", Keep: 1001}, input: true, want: "keep 1 to 1000"},
		{name: "no such service", service: "nope", s: Schedule{Cron: "@daily", Keep: 1}, input: true},
		{name: "external", service: "ext", s: Schedule{Cron: "@daily", Keep: 1}, want: "offers no scheduled backups",
			setup: func(t *testing.T, c *fake.Clientset) {
				if err := writeRecord(context.Background(), c, testNS, &Record{Name: "ext", Plan: "external", External: true, Spec: &Plan{}}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a CronJob not tug's", service: "db", s: Schedule{Cron: "@daily", Keep: 1}, want: "is not tug's service",
			setup: func(t *testing.T, c *fake.Clientset) {
				cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: BackupCronJobName("db"), Namespace: testNS}, Spec: batchv1.CronJobSpec{Schedule: "@hourly"}}
				if _, err := c.BatchV1().CronJobs(testNS).Create(context.Background(), cj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, d, _ := postgresService(t, "app", "p1", nil)
			if tt.setup != nil {
				tt.setup(t, c)
			}
			err := SetSchedule(context.Background(), d, tt.service, tt.s)
			if err == nil || inputerr.Is(err) != tt.input || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error (input: %v) saying %q", err, tt.input, tt.want)
			}
			cjs, _ := c.BatchV1().CronJobs(testNS).List(context.Background(), metav1.ListOptions{})
			for _, cj := range cjs.Items {
				if cj.Spec.Schedule != "@hourly" {
					t.Errorf("a refused schedule wrote CronJob %s", cj.Name)
				}
			}
		})
	}
}

func TestBackupsListsTheDumpsNewestFirst(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	backupsClaim(t, c)
	backupPodsRun(c)
	ex := &scriptExec{script: func([]string) (string, error) {
		return "20260101T030000Z.dump 100 1767236400\ntruncated\n20260102T030000Z.dump 250 1767322800\n", nil
	}}
	d.Exec = ex
	files, err := Backups(context.Background(), d, "db")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Name != "20260102T030000Z.dump" || files[0].Size != 250 || !files[0].Time.Equal(time.Unix(1767322800, 0)) || files[1].Size != 100 {
		t.Errorf("files %+v", files)
	}
	ran := ex.commands()
	if len(ran) != 1 || ran[0].pod != BackupsClaimName("db")+"-abcde" {
		t.Errorf("ran %+v", ran)
	}
	if pods, _ := c.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelService + "-backup=db"}); len(pods.Items) != 0 {
		t.Errorf("the backup pod is left: %d", len(pods.Items))
	}
}

func TestBackupsOfAServiceWithoutSchedule(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	_, err := Backups(context.Background(), d, "db")
	if err == nil || !strings.Contains(err.Error(), "tug service backup db --schedule") {
		t.Fatalf("backups without a schedule: %v", err)
	}
	if pods, _ := c.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 1 {
		t.Errorf("pods %d, want only the unit", len(pods.Items))
	}
}

// A stored dump is read out of the backups volume by one pod and fed to
// the restore command in the service's unit.
func TestRestoreFromFeedsTheStoredDumpToTheUnit(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	backupsClaim(t, c)
	backupPodsRun(c)
	ex := &scriptExec{script: func(argv []string) (string, error) {
		if argv[0] == "cat" {
			return "DUMP BYTES", nil
		}
		return "", nil
	}}
	d.Exec = ex
	if err := RestoreFrom(context.Background(), d, "db", "20260102T030000Z.dump"); err != nil {
		t.Fatal(err)
	}
	var cat, restore *ranCommand
	for _, r := range ex.commands() {
		switch {
		case r.argv[0] == "cat":
			cat = &r
		case strings.Contains(strings.Join(r.argv, " "), "pg_restore"):
			restore = &r
		}
	}
	if cat == nil || cat.argv[1] != "/backups/20260102T030000Z.dump" || !strings.HasPrefix(cat.pod, BackupsClaimName("db")) {
		t.Errorf("cat %+v", cat)
	}
	if restore == nil || restore.pod != "tug-service-db-0" || restore.stdin != "DUMP BYTES" {
		t.Errorf("restore %+v", restore)
	}
}

func TestRestoreFromSaysWhenTheDumpCannotBeRead(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	backupsClaim(t, c)
	backupPodsRun(c)
	d.Exec = &scriptExec{script: func(argv []string) (string, error) {
		if argv[0] == "cat" {
			return "", errors.New("exit code 1")
		}
		return "", nil
	}}
	err := RestoreFrom(context.Background(), d, "db", "gone.dump")
	if err == nil || !strings.Contains(err.Error(), "reading gone.dump from the backups volume") {
		t.Fatalf("restore of a dump cat cannot read: %v", err)
	}
}

func TestRestoreFromRefusesNamesThatAreNotADump(t *testing.T) {
	for _, file := range []string{"", "../etc/passwd", ".hidden", "a b.dump", "x';rm -rf /'", "$(id)"} {
		c, d, _ := postgresService(t, "app", "p1", nil)
		backupsClaim(t, c)
		ex := &scriptExec{script: func([]string) (string, error) { return "", nil }}
		d.Exec = ex
		err := RestoreFrom(context.Background(), d, "db", file)
		if !inputerr.Is(err) || !strings.Contains(err.Error(), "tug service backups db") {
			t.Errorf("--from %q: %v", file, err)
		}
		if len(ex.commands()) != 0 {
			t.Errorf("--from %q ran %v", file, ex.commands())
		}
		if pods, _ := c.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 1 {
			t.Errorf("--from %q made a pod", file)
		}
	}
}
