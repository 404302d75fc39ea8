package service

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/inputerr"
)

func setPod(t *testing.T, d Deps, status corev1.PodStatus) {
	t.Helper()
	p, err := d.Client.CoreV1().Pods(testNS).Get(context.Background(), "tug-service-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = status
	if _, err := d.Client.CoreV1().Pods(testNS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestGetSaysReadyAddressAndUse(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	if err := d.writeBinding(ctx, mustRecord(t, c)); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-data", Namespace: testNS, Labels: Labels("db")},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}}
	if _, err := c.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ex := &scriptExec{script: func(argv []string) (string, error) {
		return "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/sda1 2000 512 1488 26% /var/lib/postgresql/data\n", nil
	}}
	d.Exec = ex
	i, err := Get(ctx, d, "db")
	if err != nil {
		t.Fatal(err)
	}
	if i.Status != "ready" || i.Host != "10.0.0.5" || i.Port != 5432 || i.Capacity != "2Gi" || i.Volume != "tug-service-db-data" || i.Used != "512Ki" {
		t.Errorf("info %+v", i)
	}
	if i.CredentialsSecret != CredentialsSecretName("db") || i.BindingSecret != BindingSecretName("db") || i.Binding.Type != "postgresql" {
		t.Errorf("info %+v", i)
	}
	if !strings.Contains(strings.Join(i.Binding.Keys, ","), "password") || !strings.Contains(strings.Join(i.Binding.Keys, ","), "provider") {
		t.Errorf("binding keys %v", i.Binding.Keys)
	}
	if ran := ex.commands(); len(ran) != 1 || ran[0].argv[0] != "df" {
		t.Errorf("ran %+v", ran)
	}

	// df that fails or says nothing usable: no use, no error
	for _, out := range []string{"", "garbage", "fs 1 x 2 3% /"} {
		d.Exec = &scriptExec{script: func([]string) (string, error) { return out, nil }}
		if i, err := Get(ctx, d, "db"); err != nil || i.Used != "" {
			t.Errorf("df printing %q: used %q err %v", out, i.Used, err)
		}
	}
	if _, err := Get(ctx, d, "nope"); !inputerr.Is(err) {
		t.Errorf("a missing service: %v", err)
	}
}

// The status says what the units do; a volume that is not bound is the
// reason of a service not ready.
func TestStatusFollowsTheUnits(t *testing.T) {
	crash := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "postgres",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, RestartCount: 4}}}
	tests := []struct {
		name      string
		status    *corev1.PodStatus // nil: no unit
		claim     corev1.PersistentVolumeClaimPhase
		want, why string
	}{
		{name: "no unit", want: "stopped"},
		{name: "starting", status: &corev1.PodStatus{Phase: corev1.PodPending}, want: "starting"},
		{name: "crashing", status: &crash, want: "failed", why: "keeps crashing"},
		{name: "volume pending", status: &corev1.PodStatus{Phase: corev1.PodPending}, claim: corev1.ClaimPending, want: "starting", why: "volume tug-service-db-data is Pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, d, _ := postgresService(t, "app", "p1", nil)
			ctx := context.Background()
			if tt.status == nil {
				if err := c.CoreV1().Pods(testNS).Delete(ctx, "tug-service-db-0", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				setPod(t, d, *tt.status)
			}
			if tt.claim != "" {
				pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-data", Namespace: testNS, Labels: Labels("db")}, Status: corev1.PersistentVolumeClaimStatus{Phase: tt.claim}}
				if _, err := c.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			list, err := List(ctx, d)
			if err != nil || len(list) != 1 {
				t.Fatalf("list %v %v", list, err)
			}
			if list[0].Status != tt.want || !strings.Contains(list[0].Reason, tt.why) {
				t.Errorf("status %q reason %q, want %q %q", list[0].Status, list[0].Reason, tt.want, tt.why)
			}
		})
	}
}

func TestListAndNamesAreSortedAndSayExternal(t *testing.T) {
	c, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	if _, err := CreateExternal(ctx, d, "cache", "redis://:pw@redis.example:6379/0"); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(ctx, c, testNS, &Record{Name: "analytics", Plan: "postgres", Spec: Builtin()[0]}); err != nil {
		t.Fatal(err)
	}
	names, err := Names(ctx, d)
	if err != nil || strings.Join(names, ",") != "analytics,cache,db" {
		t.Errorf("names %v %v", names, err)
	}
	list, err := List(ctx, d)
	if err != nil || len(list) != 3 {
		t.Fatalf("list %v %v", list, err)
	}
	if list[1].Name != "cache" || list[1].Status != "external" || !list[1].External || list[1].Host != "redis.example" {
		t.Errorf("external %+v", list[1])
	}
	if list[0].Status != "stopped" || list[2].Status != "ready" {
		t.Errorf("statuses %q %q", list[0].Status, list[2].Status)
	}
}

func TestConnectTarget(t *testing.T) {
	_, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	tgt, argv, err := ConnectTarget(ctx, d, "db", nil)
	if err != nil || tgt.Pod != "tug-service-db-0" || tgt.Namespace != testNS || !strings.Contains(strings.Join(argv, " "), "psql") {
		t.Errorf("the plan's client: %+v %v %v", tgt, argv, err)
	}
	if _, argv, err := ConnectTarget(ctx, d, "db", []string{"bash"}); err != nil || strings.Join(argv, " ") != "bash" {
		t.Errorf("the user's command: %v %v", argv, err)
	}
	setPod(t, d, corev1.PodStatus{Phase: corev1.PodPending})
	if _, _, err := ConnectTarget(ctx, d, "db", nil); err == nil || !strings.Contains(err.Error(), "has no ready unit") {
		t.Errorf("no ready unit: %v", err)
	}
	if _, err := CreateExternal(ctx, d, "ext", "postgres://u:p@db.example/x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ConnectTarget(ctx, d, "ext", []string{"psql"}); err == nil || !strings.Contains(err.Error(), "is external") {
		t.Errorf("an external service: %v", err)
	}
	if _, _, err := ConnectTarget(ctx, d, "nope", nil); !inputerr.Is(err) {
		t.Errorf("a missing service: %v", err)
	}
	if err := Exists(ctx, d, "nope"); !inputerr.Is(err) {
		t.Errorf("exists of a missing service: %v", err)
	}
	if err := Exists(ctx, d, "db"); err != nil {
		t.Errorf("exists: %v", err)
	}
}

func TestBackupAndRestoreRunThePlansCommandsInTheUnit(t *testing.T) {
	_, d, _ := postgresService(t, "app", "p1", nil)
	ctx := context.Background()
	ex := &scriptExec{script: func(argv []string) (string, error) {
		if strings.Contains(strings.Join(argv, " "), "pg_dump") {
			return "PGDMP", nil
		}
		return "", nil
	}}
	d.Exec = ex
	var out bytes.Buffer
	if err := Backup(ctx, d, "db", &out); err != nil || out.String() != "PGDMP" {
		t.Fatalf("backup wrote %q: %v", out.String(), err)
	}
	if err := Restore(ctx, d, "db", strings.NewReader("PGDMP")); err != nil {
		t.Fatal(err)
	}
	ran := ex.commands()
	if len(ran) != 2 || !strings.Contains(strings.Join(ran[1].argv, " "), "pg_restore") || ran[1].stdin != "PGDMP" || ran[1].pod != "tug-service-db-0" {
		t.Errorf("ran %+v", ran)
	}
}

func TestBackupAndRestoreFailures(t *testing.T) {
	ctx := context.Background()
	_, d, _ := postgresService(t, "app", "p1", nil)
	d.Exec = &scriptExec{script: func([]string) (string, error) { return "", errors.New("command terminated with exit code 1") }}
	if err := Backup(ctx, d, "db", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `dumping service "db"`) {
		t.Errorf("a dump that fails: %v", err)
	}
	if err := Restore(ctx, d, "db", strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), `restoring service "db"`) {
		t.Errorf("a restore that fails: %v", err)
	}
	d.Exec = &scriptExec{script: func([]string) (string, error) { return "", nil }}
	broken := iotest.TimeoutReader(strings.NewReader("PGDMP and more"))
	if err := Restore(ctx, d, "db", broken); err == nil || !strings.Contains(err.Error(), "reading the dump failed part way") {
		t.Errorf("a dump that breaks off: %v", err)
	}
	for _, run := range []func() error{
		func() error { return Backup(ctx, d, "nope", &bytes.Buffer{}) },
		func() error { return Restore(ctx, d, "nope", strings.NewReader("")) },
	} {
		if err := run(); !inputerr.Is(err) {
			t.Errorf("a missing service: %v", err)
		}
	}
	if _, err := CreateExternal(ctx, d, "ext", "postgres://u:p@db.example/x"); err != nil {
		t.Fatal(err)
	}
	if err := Backup(ctx, d, "ext", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "does not say how to dump") {
		t.Errorf("an external service: %v", err)
	}
}
