package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/service"
	"tug.dev/tug/pkg/session"
)

// unitExec is a service's unit: each command prints what script says and
// keeps its argv and stdin.
type unitExec struct {
	script func(argv []string) (string, error)
	mu     sync.Mutex
	argv   [][]string
	stdin  []string
}

func (e *unitExec) Exec(_ context.Context, _ session.Target, argv []string, s session.Streams) error {
	var in []byte
	if s.Stdin != nil {
		in, _ = io.ReadAll(s.Stdin)
	}
	out, err := e.script(argv)
	if s.Stdout != nil {
		_, _ = io.WriteString(s.Stdout, out)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.argv = append(e.argv, argv)
	e.stdin = append(e.stdin, string(in))
	return err
}

func (e *unitExec) Attach(context.Context, session.Target, session.Streams) error { return nil }

func (e *unitExec) ran(word string) (stdin string, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, a := range e.argv {
		if strings.Contains(strings.Join(a, " "), word) {
			return e.stdin[i], true
		}
	}
	return "", false
}

// serviceFixture is namespace dev with service db (postgres 15, 1Gi)
// running and ready, its binding written, and the deps the service
// commands reach it with.
type serviceFixture struct {
	client *fake.Clientset
	exec   *unitExec
	ios    *cli.IOStreams
	out    interface{ String() string }
	errOut interface{ String() string }
	deps   func(context.Context) (service.Deps, error)
}

func newServiceFixture(t *testing.T) *serviceFixture {
	t.Helper()
	rec, err := json.Marshal(service.Record{Name: "db", Plan: "postgres", Version: "15", Size: "1Gi", Image: "reg/pg:15", Spec: service.Builtin()[0]})
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: service.ObjectName("db"), Namespace: "dev", Labels: service.Labels("db")}, Data: map[string]string{"service": string(rec)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: service.BindingSecretName("db"), Namespace: "dev", Labels: service.Labels("db")}, Type: "servicebinding.io/postgresql",
			Data: map[string][]byte{"host": []byte("10.0.0.5"), "port": []byte("5432"), "username": []byte("app"), "password": []byte("s3cret"), "uri": []byte("postgresql://app:s3cret@10.0.0.5:5432/app")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-0", Namespace: "dev", Labels: service.Labels("db")},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "tug-service-db-data", Namespace: "dev", Labels: service.Labels("db")},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	)
	// pods made from a GenerateName (a backups reader) get a name and run
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Name == "" {
			p.Name = p.GenerateName + "abcde"
		}
		p.Status.Phase = corev1.PodRunning
		return false, nil, nil
	})
	ex := &unitExec{script: func([]string) (string, error) { return "", nil }}
	ios, _, out, errOut := cli.TestIOStreams()
	d := service.Deps{Client: c, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Namespace: "dev",
		Progress: cli.NewProgress(ios), Exec: ex, Holder: lock.Holder{User: "alice"}}
	return &serviceFixture{client: c, exec: ex, ios: ios, out: out, errOut: errOut,
		deps: func(context.Context) (service.Deps, error) { return d, nil }}
}

func (f *serviceFixture) recordExists(t *testing.T) bool {
	t.Helper()
	_, err := f.client.CoreV1().ConfigMaps("dev").Get(context.Background(), service.ObjectName("db"), metav1.GetOptions{})
	return err == nil
}

func TestRunServiceListAndInfo(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	f.exec.script = func([]string) (string, error) {
		return "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/sda1 1048576 2048 1046528 1% /var/lib/postgresql/data\n", nil
	}
	if err := runServiceList(ctx, &serviceListOptions{IO: f.ios, Deps: f.deps, CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(f.out.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != "db postgres 15 ready 1Gi -" {
		t.Errorf("list:\n%s", f.out)
	}
	if err := runServiceInfo(ctx, &serviceInfoOptions{IO: f.ios, Deps: f.deps, Name: "db", Output: cli.OutputOptions{Format: cli.OutputTable}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Service:  db\n", "Plan:     postgres 15\n", "Status:   ready\n", "Image:    reg/pg:15\n",
		"Volume:   tug-service-db-data, 1Gi asked, 1Gi, 2Mi used\n", "Address:  10.0.0.5:5432\n", "Apps:     none bound\n"} {
		if !strings.Contains(f.out.String(), want) {
			t.Errorf("info lacks %q:\n%s", want, f.out)
		}
	}
	if strings.Contains(f.out.String(), "s3cret") {
		t.Error("info shows a credential")
	}
	if err := runServiceInfo(ctx, &serviceInfoOptions{IO: f.ios, Deps: f.deps, Name: "nope", Output: cli.OutputOptions{Format: cli.OutputTable}}); !inputerr.Is(err) {
		t.Errorf("info of a missing service: %v", err)
	}
}

func TestRunServiceListJSONAndEmpty(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	if err := runServiceList(ctx, &serviceListOptions{IO: f.ios, Deps: f.deps, Output: cli.OutputOptions{Format: cli.OutputJSON}}); err != nil {
		t.Fatal(err)
	}
	var list []service.Info
	if err := json.Unmarshal([]byte(f.out.String()), &list); err != nil || len(list) != 1 || list[0].Name != "db" || list[0].Status != "ready" {
		t.Fatalf("json %v: %s", err, f.out)
	}
	empty := newServiceFixture(t)
	if err := empty.client.CoreV1().ConfigMaps("dev").Delete(ctx, service.ObjectName("db"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := runServiceList(ctx, &serviceListOptions{IO: empty.ios, Deps: empty.deps, CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}); err != nil {
		t.Fatal(err)
	}
	if empty.out.String() != "" || !strings.Contains(empty.errOut.String(), "no services in namespace \"dev\"; create one with 'tug service create") {
		t.Errorf("an empty list: stdout %q stderr %q", empty.out, empty.errOut)
	}
}

// Credential values are shown only with --reveal.
func TestRunServiceCredentials(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	if err := runServiceCredentials(ctx, &serviceCredentialsOptions{IO: f.ios, Deps: f.deps, Name: "db", Output: cli.OutputOptions{Format: cli.OutputTable}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.out.String(), "s3cret") || !strings.Contains(f.out.String(), "(hidden: --reveal)") || !strings.Contains(f.errOut.String(), "from Secret "+service.BindingSecretName("db")) {
		t.Errorf("without --reveal: stdout %q stderr %q", f.out, f.errOut)
	}
	f = newServiceFixture(t)
	if err := runServiceCredentials(ctx, &serviceCredentialsOptions{IO: f.ios, Deps: f.deps, Name: "db", Reveal: true, Output: cli.OutputOptions{Format: cli.OutputTable}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.out.String(), "s3cret") {
		t.Errorf("with --reveal: %q", f.out)
	}
}

// A dump to a file appears only whole: a failed dump leaves no file, and
// nothing of its own beside it.
func TestRunServiceBackupToAFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "db.dump")
	f := newServiceFixture(t)
	f.exec.script = func([]string) (string, error) { return "PGDMP0123", nil }
	if err := runServiceBackup(ctx, &serviceBackupOptions{IO: f.ios, Deps: f.deps, Name: "db", File: file}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "PGDMP0123" {
		t.Errorf("the dump file: %q %v", b, err)
	}
	if !strings.Contains(f.errOut.String(), "service db dumped (9 bytes)") || f.out.String() != "" {
		t.Errorf("stdout %q stderr %q", f.out, f.errOut)
	}

	failed := filepath.Join(dir, "failed.dump")
	f = newServiceFixture(t)
	f.exec.script = func([]string) (string, error) { return "PGDMP01", errors.New("connection lost") }
	if err := runServiceBackup(ctx, &serviceBackupOptions{IO: f.ios, Deps: f.deps, Name: "db", File: failed}); err == nil || !strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("a dump that fails: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "db.dump" {
		t.Errorf("after a failed dump the folder holds %v", entries)
	}

	f = newServiceFixture(t)
	if err := runServiceBackup(ctx, &serviceBackupOptions{IO: f.ios, Deps: f.deps, Name: "nope", File: failed}); !inputerr.Is(err) {
		t.Errorf("a missing service: %v", err)
	}
	if _, ok := f.exec.ran("pg_dump"); ok {
		t.Error("a dump of a missing service ran")
	}
}

func TestRunServiceBackupToStdoutAndSchedule(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	f.exec.script = func([]string) (string, error) { return "PGDMP", nil }
	if err := runServiceBackup(ctx, &serviceBackupOptions{IO: f.ios, Deps: f.deps, Name: "db"}); err != nil || f.out.String() != "PGDMP" {
		t.Fatalf("a dump to stdout: %q %v", f.out, err)
	}
	f = newServiceFixture(t)
	if err := runServiceBackup(ctx, &serviceBackupOptions{IO: f.ios, Deps: f.deps, Name: "db", Schedule: service.Schedule{Cron: "0 3 * * *", Keep: 3}}); err != nil {
		t.Fatal(err)
	}
	cj, err := f.client.BatchV1().CronJobs("dev").Get(ctx, service.BackupCronJobName("db"), metav1.GetOptions{})
	if err != nil || cj.Spec.Schedule != "0 3 * * *" {
		t.Fatalf("the CronJob: %v", err)
	}
	if !strings.Contains(f.errOut.String(), "a dump on '0 3 * * *', the newest 3 kept; see 'tug service backups db'") {
		t.Errorf("stderr %q", f.errOut)
	}
}

func TestRunServiceBackups(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	o := &serviceBackupsOptions{IO: f.ios, Deps: f.deps, Name: "db", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runServiceBackups(ctx, o); err == nil || !strings.Contains(err.Error(), "has no scheduled backups") {
		t.Fatalf("backups of a service without a schedule: %v", err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: service.BackupsClaimName("db"), Namespace: "dev", Labels: service.Labels("db")}}
	if _, err := f.client.CoreV1().PersistentVolumeClaims("dev").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := runServiceBackups(ctx, o); err != nil {
		t.Fatal(err)
	}
	if f.out.String() != "" || !strings.Contains(f.errOut.String(), `no dumps yet in the backups of service "db"`) {
		t.Errorf("no dumps: stdout %q stderr %q", f.out, f.errOut)
	}
	f.exec.script = func([]string) (string, error) { return "20260102T030000Z.dump 250 1767322800\n", nil }
	if err := runServiceBackups(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.out.String(), "20260102T030000Z.dump") || !strings.Contains(f.out.String(), "2026-01-02T03:00:00Z") {
		t.Errorf("dumps:\n%s", f.out)
	}
}

func TestRunServiceRestore(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "db.dump")
	if err := os.WriteFile(file, []byte("PGDMP from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newServiceFixture(t)
	noPrompt := func() cli.Prompter { return nil }
	if err := runServiceRestore(ctx, &serviceRestoreOptions{IO: f.ios, Deps: f.deps, Prompter: noPrompt, Name: "db", File: file, Yes: true}); err != nil {
		t.Fatal(err)
	}
	if in, ok := f.exec.ran("pg_restore"); !ok || in != "PGDMP from disk" {
		t.Errorf("pg_restore read %q (ran %v)", in, ok)
	}
	if !strings.Contains(f.errOut.String(), "service db restored from "+file) {
		t.Errorf("stderr %q", f.errOut)
	}

	// refused before anything runs: each is bad input (exit 2)
	for name, o := range map[string]*serviceRestoreOptions{
		"stdin without --yes":      {File: "-"},
		"a file that is not there": {File: filepath.Join(t.TempDir(), "none.dump"), Yes: true},
		"a missing service":        {File: file, Yes: true, Name: "nope"},
		"no confirmation, no tty":  {File: file},
		"--from a name not a dump": {From: "../x", Yes: true},
		"--from without --yes":     {From: "a.dump"},
		"--from a missing service": {From: "a.dump", Yes: true, Name: "nope"},
	} {
		f := newServiceFixture(t)
		o.IO, o.Deps, o.Prompter = f.ios, f.deps, noPrompt
		if o.Name == "" {
			o.Name = "db"
		}
		err := runServiceRestore(ctx, o)
		if code := exitCode(ctx, io.Discard, nil, err); code != cli.ExitUsage {
			t.Errorf("%s: %v (exit %d), want exit 2", name, err, code)
		}
		if _, ok := f.exec.ran("pg_restore"); ok {
			t.Errorf("%s: the restore ran", name)
		}
	}
}

func TestRunServiceRestoreFrom(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: service.BackupsClaimName("db"), Namespace: "dev", Labels: service.Labels("db")}}
	if _, err := f.client.CoreV1().PersistentVolumeClaims("dev").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.exec.script = func(argv []string) (string, error) {
		if argv[0] == "cat" {
			return "PGDMP stored", nil
		}
		return "", nil
	}
	o := &serviceRestoreOptions{IO: f.ios, Deps: f.deps, Prompter: func() cli.Prompter { return nil }, Name: "db", From: "20260102T030000Z.dump", Yes: true}
	if err := runServiceRestore(ctx, o); err != nil {
		t.Fatal(err)
	}
	if in, ok := f.exec.ran("pg_restore"); !ok || in != "PGDMP stored" {
		t.Errorf("pg_restore read %q", in)
	}
	if !strings.Contains(f.errOut.String(), "service db restored from its backup 20260102T030000Z.dump") {
		t.Errorf("stderr %q", f.errOut)
	}
}

func TestRunServiceRemove(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	o := &serviceRemoveOptions{IO: f.ios, Deps: f.deps, Prompter: func() cli.Prompter { return nil }, Name: "db", Output: cli.OutputOptions{Format: cli.OutputTable}}
	err := runServiceRemove(ctx, o)
	if code := exitCode(ctx, io.Discard, nil, err); code != cli.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("remove unconfirmed off a terminal: %v (exit %d)", err, code)
	}
	if !f.recordExists(t) {
		t.Fatal("an unconfirmed remove removed the service")
	}
	o.Name = "nope"
	o.Yes = true
	if err := runServiceRemove(ctx, o); !inputerr.Is(err) {
		t.Errorf("remove of a missing service: %v", err)
	}
	o.Name = "db"
	if err := runServiceRemove(ctx, o); err != nil {
		t.Fatal(err)
	}
	if f.recordExists(t) {
		t.Error("the record is left")
	}
	if !strings.Contains(f.errOut.String(), `service "db" removed; kept: `) {
		t.Errorf("stderr %q", f.errOut)
	}
}

func TestRunServicePlansAndClusterPlans(t *testing.T) {
	ctx := context.Background()
	f := newServiceFixture(t)
	o := &servicePlansOptions{IO: f.ios, Deps: f.deps, Output: cli.OutputOptions{Format: cli.OutputTable}}
	plan := filepath.Join(t.TempDir(), "mysql.yaml")
	builtin, err := json.Marshal(service.Builtin()[0])
	if err != nil {
		t.Fatal(err)
	}
	mine := strings.Replace(string(builtin), `"name":"postgres"`, `"name":"mysql"`, 1)
	if err := os.WriteFile(plan, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := runClusterPlansSet(ctx, &clusterPlansSetOptions{IO: f.ios, Deps: f.deps, File: plan}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.out.String(), `plan "mysql" published`) {
		t.Errorf("set: %q", f.out)
	}
	// a published plan that does not parse is skipped with a warning
	cm, err := f.client.CoreV1().ConfigMaps(clustersettings.Namespace).Get(ctx, service.PlansName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["broken"] = "name: ["
	if _, err := f.client.CoreV1().ConfigMaps(clustersettings.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := runServicePlans(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.errOut.String(), `warning: published plan "broken" is skipped`) {
		t.Errorf("stderr %q", f.errOut)
	}
	for _, want := range []string{"mysql", "cluster", "postgres", "builtin"} {
		if !strings.Contains(f.out.String(), want) {
			t.Errorf("plans lack %q:\n%s", want, f.out)
		}
	}
	if err := runClusterPlansRemove(ctx, &clusterPlansRemoveOptions{IO: f.ios, Deps: f.deps, Name: "mysql"}); err != nil || !strings.Contains(f.out.String(), `plan "mysql" unpublished`) {
		t.Errorf("remove: %v", err)
	}
	// bad input: exit 2, the plans unchanged
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: Not A Plan"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"set a plan that does not parse": func() error {
			return runClusterPlansSet(ctx, &clusterPlansSetOptions{IO: f.ios, Deps: f.deps, File: bad})
		},
		"set a file not there": func() error {
			return runClusterPlansSet(ctx, &clusterPlansSetOptions{IO: f.ios, Deps: f.deps, File: bad + ".x"})
		},
		"remove a plan not published": func() error {
			return runClusterPlansRemove(ctx, &clusterPlansRemoveOptions{IO: f.ios, Deps: f.deps, Name: "mysql"})
		},
	} {
		if err := run(); !inputerr.Is(err) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
	cm, _ = f.client.CoreV1().ConfigMaps(clustersettings.Namespace).Get(ctx, service.PlansName, metav1.GetOptions{})
	if len(cm.Data) != 1 || cm.Data["broken"] == "" {
		t.Errorf("the plans after refused changes: %v", cm.Data)
	}
}
