package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// The local cluster's backing-service images (test/images/services,
// test/images/dbapp) and its volume provisioner, without tug: what tug's
// service plans stand on (docs/services.md).

// serviceImages are the refs `cluster.sh service-images` prints, by name.
func serviceImages(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoRoot(), "test", "cluster", "cluster.sh"), "service-images").CombinedOutput()
	if err != nil {
		if os.Getenv("TUG_E2E_REQUIRED") == "1" {
			t.Fatalf("cluster.sh service-images: %v\n%s", err, out)
		}
		t.Skipf("no service images (%v): %s", err, out)
	}
	refs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, ref, ok := strings.Cut(l, " "); ok && strings.Contains(ref, "@sha256:") {
			refs[name] = ref
		}
	}
	for _, n := range []string{"postgres", "redis", "dbapp"} {
		if refs[n] == "" {
			t.Fatalf("cluster.sh service-images names no %s image:\n%s", n, out)
		}
	}
	return refs
}

// nonRoot is the pod security of the service images: uid 999, no
// privilege escalation, no capabilities.
func nonRoot(spec *corev1.PodSpec) {
	uid := int64(999)
	spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, RunAsNonRoot: new(true)}
	for i := range spec.Containers {
		spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: new(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}

// statefulSet is one unit of image with a claim "data" mounted at mount.
func statefulSet(name, image, mount string, env []corev1.EnvVar, args []string, probe []string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	one := int32(1)
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: name, Image: image, Args: args, Env: env, ImagePullPolicy: corev1.PullIfNotPresent,
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: probe}}, PeriodSeconds: 1, TimeoutSeconds: 5},
			VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: mount}},
		}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-data"}}}},
	}
	nonRoot(&spec)
	spec.TerminationGracePeriodSeconds = new(int64(600))
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &one, ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// claim makes a claim of the cluster's default StorageClass and waits
// until it is bound: the local provisioner serves it with no help.
func (h *H) claim(name string) *corev1.PersistentVolume {
	h.t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("creating claim %s: %v", name, err)
	}
	var volume string
	h.Eventually(30*time.Second, "claim "+name+" bound by the local provisioner", func() (bool, error) {
		c, err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		volume = c.Spec.VolumeName
		return c.Status.Phase == corev1.ClaimBound, fmt.Errorf("phase %s", c.Status.Phase)
	})
	pv, err := h.Client.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if pv.Spec.StorageClassName != "tug-local" || pv.Spec.HostPath == nil {
		h.t.Fatalf("claim %s bound %s of class %q, hostPath %v; want the local provisioner's", name, pv.Name, pv.Spec.StorageClassName, pv.Spec.HostPath)
	}
	return pv
}

// execIn runs command in pod's first container and returns its output.
func (h *H) execIn(pod string, command ...string) (string, error) {
	req := h.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(h.NS).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(h.Config, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	if err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, errOut.String())
	}
	return out.String(), nil
}

func (h *H) createStatefulSet(s *appsv1.StatefulSet) {
	h.t.Helper()
	if _, err := h.Client.AppsV1().StatefulSets(h.NS).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("creating statefulset %s: %v", s.Name, err)
	}
}

func (h *H) createPod(p *corev1.Pod) {
	h.t.Helper()
	if _, err := h.Client.CoreV1().Pods(h.NS).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("creating pod %s: %v", p.Name, err)
	}
}

// PostgreSQL from the local image on a claim the provisioner binds: ready
// by pg_isready, dbapp writes and counts rows through its Service, the
// rows survive the unit being deleted and made again (the data is on the
// volume, and postgres shut down cleanly), and deleting the claim removes
// the volume and its directory.
func TestServiceImagePostgresKeepsRowsOnItsVolume(t *testing.T) {
	h := New(t)
	refs := serviceImages(t)
	ctx := context.Background()
	pw := secretWord(t)
	pv := h.claim("pg-data")
	h.createStatefulSet(statefulSet("pg", refs["postgres"], "/var/lib/postgresql/data", []corev1.EnvVar{
		{Name: "POSTGRES_USER", Value: "app"}, {Name: "POSTGRES_PASSWORD", Value: pw}, {Name: "POSTGRES_DB", Value: "shop"},
	}, nil, []string{"pg_isready", "-h", "127.0.0.1", "-p", "5432"}))
	svc, err := h.Client.CoreV1().Services(h.NS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "pg"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "pg"}, Ports: []corev1.ServicePort{{Port: 5432}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := h.WaitPods("app=pg", 120*time.Second, "postgres ready by pg_isready", AllReady(1))[0]

	// the unit: postgres itself is PID 1, as uid 999, with the JIT off
	out, err := h.execIn(first.Name, "sh", "-c", `cat /proc/1/comm; id -u; psql -U app -d shop -tAc 'show jit'`)
	if err != nil || strings.Join(strings.Fields(out), " ") != "postgres 999 off" {
		t.Fatalf("in the postgres unit: %q %v", out, err)
	}
	// a password is required over the network
	if out, err := h.execIn(first.Name, "sh", "-c", "PGPASSWORD=wrong psql -h 127.0.0.1 -U app -d shop -c 'select 1' 2>&1 || true"); err != nil || !strings.Contains(out, "password authentication failed") {
		t.Fatalf("a wrong password over TCP: %q %v", out, err)
	}

	// the shape of a binding's uri (no sslmode: the server has no TLS, and
	// the driver's default, prefer, falls back to plain)
	url := fmt.Sprintf("postgresql://app:%s@%s:5432/shop", pw, svc.Spec.ClusterIP)
	base := h.startDBApp(refs["dbapp"], url)
	get := func(note string) string {
		t.Helper()
		body, err := tryGet(base + "?note=" + note)
		if err != nil {
			t.Fatalf("GET /?note=%s: %v: %s", note, err, body)
		}
		return strings.TrimSpace(body)
	}
	// kube-proxy programs the Service a moment after the unit is ready: the
	// first row waits for it (a try that failed after its INSERT, a client
	// timeout, may have written one too: the second request counts on)
	var first1 string
	h.Eventually(time.Minute, "dbapp reaches postgres through its Service", func() (bool, error) {
		body, err := tryGet(base + "?note=one")
		first1 = strings.TrimSpace(body)
		return err == nil, nil
	})
	var rows int
	if _, err := fmt.Sscanf(first1, "db ok rows=%d newest=one release=7", &rows); err != nil || rows < 1 {
		t.Fatalf("first request: %q", first1)
	}
	if got, want := get("two"), fmt.Sprintf("db ok rows=%d newest=two release=7", rows+1); got != want {
		t.Fatalf("second request: %q, want %q", got, want)
	}
	// the rows are on the claim's volume: PGDATA is a folder of it
	if _, err := os.Stat(filepath.Join(pv.Spec.HostPath.Path, "pgdata", "PG_VERSION")); err != nil {
		t.Fatalf("PGDATA is not on the volume %s: %v", pv.Name, err)
	}

	// A session holds a backend while the unit is deleted: postgres's
	// SIGTERM (smart shutdown) would wait for it for the whole grace period
	// (10 min here); the image's stop signal, SIGINT, ends it at once.
	go func() { _, _ = h.execIn(first.Name, "psql", "-U", "app", "-d", "shop", "-c", "select pg_sleep(600)") }()
	h.Eventually(30*time.Second, "a session holding a backend", func() (bool, error) {
		out, err := h.execIn(first.Name, "psql", "-U", "app", "-d", "shop", "-tAc", "select count(*) from pg_stat_activity where query like 'select pg_sleep%'")
		return strings.TrimSpace(out) == "1", err
	})
	if err := h.Client.CoreV1().Pods(h.NS).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := h.WaitPods("app=pg", 90*time.Second, "postgres stopped by its stop signal, made again and ready", func(pods []corev1.Pod) bool {
		return AllReady(1)(pods) && pods[0].UID != first.UID
	})[0]
	// the Service follows the new unit once kube-proxy has its endpoint. A
	// failed try may still have written its row (a 503 after the INSERT, a
	// client timeout), so the rows are checked in the table: the two
	// earlier ones, then only this request's.
	var got string
	h.Eventually(30*time.Second, "dbapp reaches the new postgres unit through its Service", func() (bool, error) {
		body, err := tryGet(base + "?note=three")
		got = strings.TrimSpace(body)
		return err == nil, err
	})
	table, err := h.execIn(again.Name, "psql", "-U", "app", "-d", "shop", "-tAc", "select string_agg(note, ',' order by id) from tug_rows")
	notes := strings.Split(strings.TrimSpace(table), ",")
	kept := err == nil && len(notes) >= 3 && notes[0] == "one" && notes[1] == "two"
	for i := 2; kept && i < len(notes); i++ {
		kept = notes[i] == "three"
	}
	if !kept {
		t.Fatalf("after the unit was made again, the rows are %q (%v), want one,two then three", table, err)
	}
	if want := fmt.Sprintf("db ok rows=%d newest=three release=7", len(notes)); got != want {
		t.Fatalf("after the unit was made again: %q, want %q", got, want)
	}
	// the stop signal shut it down cleanly: no crash recovery at start
	logs, err := h.Client.CoreV1().Pods(h.NS).GetLogs(again.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "database system was shut down at") {
		t.Fatalf("the new unit's log should say the old one shut down cleanly: %v\n%s", err, logs)
	}

	h.assertClaimTakesItsVolume("pg", "pg-data", pv)
}

// startDBApp runs dbapp with DATABASE_URL url and returns its address.
func (h *H) startDBApp(image, url string) string {
	h.t.Helper()
	h.createPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dbapp", Labels: map[string]string{"app": "dbapp"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "dbapp", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Env:            []corev1.EnvVar{{Name: "DATABASE_URL", Value: url}, {Name: "TUG_RELEASE", Value: "7"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstrPort(8080)}}, PeriodSeconds: 1},
			}},
		},
	})
	app := h.WaitPods("app=dbapp", 60*time.Second, "dbapp ready", AllReady(1))[0]
	return "http://" + net.JoinHostPort(app.Status.PodIP, "8080") + "/"
}

// assertClaimTakesItsVolume deletes StatefulSet set, then its claim, and
// checks that the provisioner removed the claim's volume and directory.
func (h *H) assertClaimTakesItsVolume(set, claim string, pv *corev1.PersistentVolume) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.Client.AppsV1().StatefulSets(h.NS).Delete(ctx, set, metav1.DeleteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.WaitPods("app="+set, 60*time.Second, set+" gone", func(pods []corev1.Pod) bool { return len(pods) == 0 })
	if err := h.Client.CoreV1().PersistentVolumeClaims(h.NS).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.Eventually(60*time.Second, "volume "+pv.Name+" removed with its claim", func() (bool, error) {
		_, err := h.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if _, err := os.Stat(pv.Spec.HostPath.Path); !os.IsNotExist(err) {
		h.t.Fatalf("the volume's directory %s is still there: %v", pv.Spec.HostPath.Path, err)
	}
}

// Redis from the local image answers PING only with its password.
func TestServiceImageRedisNeedsItsPassword(t *testing.T) {
	h := New(t)
	refs := serviceImages(t)
	pw := secretWord(t)
	h.claim("cache-data")
	h.createStatefulSet(statefulSet("cache", refs["redis"], "/data", []corev1.EnvVar{{Name: "REDISCLI_AUTH", Value: pw}},
		[]string{"--requirepass", pw}, []string{"redis-cli", "ping"}))
	pod := h.WaitPods("app=cache", 120*time.Second, "redis ready", AllReady(1))[0]
	addr := net.JoinHostPort(pod.Status.PodIP, "6379")
	if got := redisSay(t, addr, "PING"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatalf("PING without the password: %q", got)
	}
	if got := redisSay(t, addr, "AUTH "+pw, "PING"); got != "+PONG" {
		t.Fatalf("PING with the password: %q", got)
	}
	if got := redisSay(t, addr, "AUTH wrong"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("AUTH with a wrong password: %q", got)
	}
	out, err := h.execIn(pod.Name, "sh", "-c", "cat /proc/1/comm; id -u")
	if err != nil || strings.Join(strings.Fields(out), " ") != "redis-server 999" {
		t.Fatalf("in the redis unit: %q %v", out, err)
	}
}

// redisSay sends commands (inline protocol) on one connection and returns
// the reply to the last.
func redisSay(t *testing.T, addr string, commands ...string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	var reply string
	for _, c := range commands {
		if _, err := fmt.Fprintf(conn, "%s\r\n", c); err != nil {
			t.Fatal(err)
		}
		if reply, err = r.ReadString('\n'); err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
	}
	return strings.TrimSpace(reply)
}

// Without POSTGRES_PASSWORD an empty PGDATA is not initialised: the unit
// exits 1 saying why, as the official image does.
func TestServiceImagePostgresRefusesWithoutPassword(t *testing.T) {
	h := New(t)
	refs := serviceImages(t)
	spec := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "pg", Image: refs["postgres"], ImagePullPolicy: corev1.PullIfNotPresent}},
	}
	nonRoot(&spec)
	h.createPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pg", Labels: map[string]string{"app": "pg"}}, Spec: spec})
	pod := h.WaitPods("app=pg", 60*time.Second, "postgres without a password exits", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && len(pods[0].Status.ContainerStatuses) == 1 && pods[0].Status.ContainerStatuses[0].State.Terminated != nil
	})[0]
	if code := pod.Status.ContainerStatuses[0].State.Terminated.ExitCode; code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	logs, err := h.Client.CoreV1().Pods(h.NS).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(logs), "POSTGRES_PASSWORD is not set") {
		t.Fatalf("its log should say the password is missing: %v\n%s", err, logs)
	}
}

// An initialisation stopped midway (here by an initdb.d script that exits
// the first time) leaves no half-made database: the restarted unit makes
// it again, so what the init scripts make is there.
func TestServiceImagePostgresInitStoppedMidwayStartsOver(t *testing.T) {
	h := New(t)
	refs := serviceImages(t)
	ctx := context.Background()
	_, err := h.Client.CoreV1().ConfigMaps(h.NS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pg-init"},
		Data: map[string]string{
			"10-stop-once.sh": "if [ ! -e /var/lib/postgresql/data/stopped-once ]; then\n" +
				"  touch /var/lib/postgresql/data/stopped-once; echo 'stopping midway'; exit 3\nfi\n",
			"20-table.sql": "CREATE TABLE made_at_init (x int); INSERT INTO made_at_init VALUES (42);\n",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := h.claim("pginit-data")
	set := statefulSet("pginit", refs["postgres"], "/var/lib/postgresql/data", []corev1.EnvVar{
		{Name: "POSTGRES_PASSWORD", Value: secretWord(t)}, {Name: "POSTGRES_DB", Value: "shop"},
	}, nil, []string{"pg_isready", "-h", "127.0.0.1", "-p", "5432"})
	spec := &set.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "init", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "pg-init"}}}})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "init", MountPath: "/docker-entrypoint-initdb.d", ReadOnly: true})
	h.createStatefulSet(set)
	pod := h.WaitPods("app=pginit", 180*time.Second, "postgres ready after an initialisation stopped midway", AllReady(1))[0]
	if n := pod.Status.ContainerStatuses[0].RestartCount; n < 1 {
		t.Fatalf("restart count %d: the first initialisation should have stopped midway", n)
	}
	out, err := h.execIn(pod.Name, "psql", "-U", "postgres", "-d", "shop", "-tAc", "select x from made_at_init")
	if err != nil || strings.TrimSpace(out) != "42" {
		t.Fatalf("the init scripts' table, after the stopped initialisation: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(pv.Spec.HostPath.Path, "pgdata.init")); !os.IsNotExist(err) {
		t.Fatalf("the unfinished initialisation's folder is still on the volume: %v", err)
	}
}

// PGDATA may be the volume's root, as with the official image, when the
// unit owns it: the new database's files move in, PG_VERSION last. A root
// the unit cannot own gets an error that says what to do.
func TestServiceImagePostgresPGDATAAtTheVolumeRoot(t *testing.T) {
	h := New(t)
	refs := serviceImages(t)
	env := []corev1.EnvVar{{Name: "POSTGRES_PASSWORD", Value: secretWord(t)}, {Name: "PGDATA", Value: "/var/lib/postgresql/data"}}
	probe := []string{"pg_isready", "-h", "127.0.0.1", "-p", "5432"}

	// the provisioner's directory belongs to root: postgres cannot own it
	h.claim("rootpg-data")
	set := statefulSet("rootpg", refs["postgres"], "/var/lib/postgresql/data", env, nil, probe)
	h.createStatefulSet(set)
	pod := h.WaitPods("app=rootpg", 90*time.Second, "postgres refusing a volume root it cannot own", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && len(pods[0].Status.ContainerStatuses) == 1 && pods[0].Status.ContainerStatuses[0].LastTerminationState.Terminated != nil
	})[0]
	logs, err := h.Client.CoreV1().Pods(h.NS).GetLogs(pod.Name, &corev1.PodLogOptions{Previous: true}).DoRaw(context.Background())
	if err != nil || !strings.Contains(string(logs), "set PGDATA to a folder below the volume's root") {
		t.Fatalf("its log should say what to do: %v\n%s", err, logs)
	}

	// a volume root owned by uid 999 (as a storage driver may make it)
	pv := h.claim("ownpg-data")
	if err := os.Chown(pv.Spec.HostPath.Path, 999, 999); err != nil {
		t.Fatal(err)
	}
	h.createStatefulSet(statefulSet("ownpg", refs["postgres"], "/var/lib/postgresql/data", env, nil, probe))
	pod = h.WaitPods("app=ownpg", 120*time.Second, "postgres ready with PGDATA at the volume's root", AllReady(1))[0]
	out, err := h.execIn(pod.Name, "psql", "-U", "postgres", "-tAc", "select current_setting('data_directory')")
	if err != nil || strings.TrimSpace(out) != "/var/lib/postgresql/data" {
		t.Fatalf("data_directory %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(pv.Spec.HostPath.Path, "PG_VERSION")); err != nil {
		t.Fatalf("the database is not at the volume's root: %v", err)
	}
}
