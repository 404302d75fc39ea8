package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAppDeployEnvRollback(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "shop", "--description", "e2e shop")
	h.mustTug("app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample", "--process", "worker=sample worker")
	h.waitUnits("shop", "web", 1, sampleV1)
	h.waitUnits("shop", "worker", 1, sampleV1)

	// app info and units agree with the cluster
	var info struct {
		Release   int    `json:"release"`
		Image     string `json:"image"`
		Processes []struct {
			Name           string
			Desired, Ready int32
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", "shop", "-o", "json").Stdout), &info); err != nil {
		t.Fatal(err)
	}
	if info.Release != 1 || info.Image != sampleV1 || len(info.Processes) != 2 || info.Processes[0].Name != "web" || info.Processes[0].Ready != 1 {
		t.Fatalf("app info after first deploy: %+v", info)
	}

	// env set: a new release, the units see the value, no spec holds it
	secret := "s3cr3t-value-42"
	h.mustTug("env", "set", "shop", "GREETING="+secret)
	web := h.waitUnits("shop", "web", 1, sampleV1)
	if got := podEnv(t, web[0], "GREETING"); got != secret {
		t.Fatalf("GREETING in the unit = %q, want %q", got, secret)
	}
	if got := podEnv(t, web[0], "PORT"); got != "8080" {
		t.Fatalf("PORT in the web unit = %q, want 8080", got)
	}
	h.assertNoValueInSpecs(secret)
	for _, args := range [][]string{{"app", "info", "shop", "-o", "yaml"}, {"app", "export", "shop"}, {"env", "get", "shop"}, {"release", "list", "shop", "-o", "json"}} {
		if out := h.mustTug(args...); strings.Contains(out.Stdout+out.Stderr, secret) {
			t.Fatalf("tug %v prints the config value", args)
		}
	}
	if v := strings.TrimSpace(h.mustTug("env", "get", "shop", "GREETING", "--show-values").Stdout); v != secret {
		t.Fatalf("env get --show-values = %q", v)
	}

	// deploy v2 with a changed value, then roll back to release 2: v1 and the old value
	h.mustTug("app", "deploy", "shop", "--image", sampleV2, "--process", "web=sample", "--process", "worker=sample worker")
	h.mustTug("env", "set", "shop", "GREETING=changed")
	web = h.waitUnits("shop", "web", 1, sampleV2)
	if got := podEnv(t, web[0], "GREETING"); got != "changed" {
		t.Fatalf("GREETING after change = %q", got)
	}
	h.mustTug("release", "rollback", "shop", "v2")
	web = h.waitUnits("shop", "web", 1, sampleV1)
	h.waitUnits("shop", "worker", 1, sampleV1)
	if got := podEnv(t, web[0], "GREETING"); got != secret {
		t.Fatalf("GREETING after rollback = %q, want the value of release 2", got)
	}

	rows := h.releases("shop")
	want := []string{"v5 rollback deployed " + sampleV1, "v4 env superseded " + sampleV2, "v3 deploy superseded " + sampleV2, "v2 env superseded " + sampleV1, "v1 deploy superseded " + sampleV1}
	if len(rows) != len(want) {
		t.Fatalf("release list: %+v", rows)
	}
	for i, r := range rows {
		if got := fmt.Sprintf("v%d %s %s %s", r.Version, r.Kind, r.Status, r.Image); got != want[i] {
			t.Errorf("release %d: %q, want %q", i, got, want[i])
		}
	}
}

// The local cluster never looks outside the machine for an image: a
// public registry's name (docker.io, ghcr.io) is answered by the local
// registry, so an image it holds is served under that name and one it
// lacks fails at once as not found, with no DNS lookup of the real host.
func TestPublicImageNamesStayOnTheMachine(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "pub")
	r := h.Tug("app", "deploy", "pub", "--image", "docker.io/tug/sample:v1")
	if r.Code != 0 {
		t.Fatalf("docker.io/tug/sample:v1 is the local registry's tug/sample:v1: %s", r)
	}
	h.waitUnits("pub", "web", 1, "docker.io/tug/sample:v1")
	for _, image := range []string{"docker.io/library/tug-nowhere:1", "ghcr.io/tug-e2e/nowhere:1"} {
		r = h.Tug("app", "deploy", "pub", "--image", image)
		if r.Code != 10 || !strings.Contains(r.Stderr, image+": not found") {
			t.Errorf("%s: want exit 10 saying the local registry has no such image, got %s", image, r)
		}
		for _, outside := range []string{"registry-1.docker.io", "lookup", "dial tcp"} {
			if strings.Contains(r.Stderr, outside) {
				t.Errorf("%s: the node tried to reach another host (%q):\n%s", image, outside, r.Stderr)
			}
		}
	}
}

func TestDeployBadImageRollsBack(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "web1")
	h.mustTug("app", "deploy", "web1", "--image", sampleV1)
	h.waitUnits("web1", "web", 1, sampleV1)

	start := time.Now()
	r := h.Tug("app", "deploy", "web1", "--image", "localhost/tug/does-not-exist:1")
	if r.Code != 10 {
		t.Fatalf("deploy of a missing image: want exit 10 (image pull), got %s", r)
	}
	t.Logf("image pull failure reported after %s", time.Since(start).Round(100*time.Millisecond))
	if !strings.Contains(r.Stderr, "localhost/tug/does-not-exist:1") || !strings.Contains(r.Stderr, "rolled back to v1") {
		t.Fatalf("the failure should name the image and the rollback:\n%s", r.Stderr)
	}
	h.waitUnits("web1", "web", 1, sampleV1)
	rows := h.releases("web1")
	if rows[0].Version != 2 || rows[0].Status != "failed" || rows[1].Status != "deployed" {
		t.Fatalf("releases after a failed deploy: %+v", rows)
	}
	// the app still serves v1 through its Service
	svc, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), "web1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "service answers v1", func() (bool, error) {
		body, err := tryGet(fmt.Sprintf("http://%s/version", svc.Spec.ClusterIP))
		return strings.TrimSpace(body) == "v1", err
	})
}

func TestDeployCrashExplainsAndRollsBack(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "crashy")
	h.mustTug("app", "deploy", "crashy", "--image", sampleV1)
	r := h.Tug("app", "deploy", "crashy", "--image", "localhost/tug/sample:crash", "-o", "json")
	if r.Code != 11 {
		t.Fatalf("deploy of a crashing image: want exit 11, got %s", r)
	}
	if !strings.Contains(r.Stderr, "exit code 3") || !strings.Contains(r.Stderr, "configured to crash at start") {
		t.Fatalf("the failure should give the exit code and the last log lines:\n%s", r.Stderr)
	}
	var res struct {
		Status       string `json:"status"`
		RolledBackTo int    `json:"rolledBackTo"`
		Failure      struct {
			Class             string   `json:"class"`
			ContainerExitCode int      `json:"containerExitCode"`
			Logs              []string `json:"logs"`
		} `json:"failure"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil {
		t.Fatalf("-o json on failure: %v\n%s", err, r.Stdout)
	}
	if res.Status != "failed" || res.RolledBackTo != 1 || res.Failure.Class != "crash" || res.Failure.ContainerExitCode != 3 || len(res.Failure.Logs) == 0 {
		t.Fatalf("result: %+v", res)
	}
	h.waitUnits("crashy", "web", 1, sampleV1)
}

func TestDeployUnreadyFails(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "slow")
	r := h.Tug("app", "deploy", "slow", "--image", "localhost/tug/sample:unready")
	if r.Code != 14 {
		t.Fatalf("deploy of an image that never gets ready: want exit 14, got %s", r)
	}
	if !strings.Contains(r.Stderr, "readiness") {
		t.Fatalf("want the readiness failure explained:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, " log line") || !strings.Contains(r.Stderr, "started mode=unready") {
		t.Errorf("want the unready unit's last log lines, as a crash has:\n%s", r.Stderr)
	}
	// first deploy: nothing to roll back to, so its units are removed
	h.WaitPods("tug.dev/app=slow", 60*time.Second, "failed first release's units removed", func(p []corev1.Pod) bool { return len(p) == 0 })
}

func TestConcurrentDeploysOneWins(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "race")
	h.mustTug("app", "deploy", "race", "--image", sampleV1)
	var wg sync.WaitGroup
	results := make([]Result, 2)
	for i, img := range []string{sampleV2, sampleV1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.TugRun(Run{Args: []string{"app", "deploy", "race", "--image", img, "--process", fmt.Sprintf("web=sample serve #%d", i)}})
		}()
	}
	wg.Wait()
	ok, locked := 0, 0
	for _, r := range results {
		switch {
		case r.Code == 0:
			ok++
		case strings.Contains(r.Stderr, "is being changed by"):
			locked++
		default:
			t.Fatalf("a concurrent deploy failed for another reason: %s", r)
		}
	}
	if ok < 1 || ok+locked != 2 {
		t.Fatalf("want one deploy to win and the other refused (or both in turn); got ok=%d locked=%d", ok, locked)
	}
	rows := h.releases("race")
	deployed := 0
	seen := map[int]bool{}
	for _, r := range rows {
		if seen[r.Version] {
			t.Fatalf("release number v%d twice: %+v", r.Version, rows)
		}
		seen[r.Version] = true
		if r.Status == "deployed" {
			deployed++
		}
	}
	if deployed != 1 || len(rows) != 1+ok {
		t.Fatalf("history after concurrent deploys: %+v", rows)
	}
}

func TestKilledDeployDoesNotBlockTheNext(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "killed")
	h.mustTug("app", "deploy", "killed", "--image", sampleV1)
	// a deploy that waits (the image never gets ready), killed mid-way
	cmd := exec.Command(env.tug, "app", "deploy", "killed", "--image", "localhost/tug/sample:unready")
	cmd.Env = h.tugEnv(nil)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the deploy holds the lock", func() (bool, error) {
		_, err := h.Client.CoordinationV1().Leases(h.NS).Get(context.Background(), "tug-lock-killed", metav1.GetOptions{})
		return err == nil, nil
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	r := h.Tug("app", "deploy", "killed", "--image", sampleV2)
	if r.Code == 0 {
		t.Fatalf("a deploy right after the kill should find the lock held")
	}
	if !strings.Contains(r.Stderr, "is being changed by") {
		t.Fatalf("want the lock holder named: %s", r)
	}
	// the lease expires without anyone removing it; then the next deploy proceeds
	h.Eventually(60*time.Second, "a deploy proceeds once the killed tug's lease expires", func() (bool, error) {
		r = h.Tug("app", "deploy", "killed", "--image", sampleV2)
		if r.Code != 0 && !strings.Contains(r.Stderr, "is being changed by") {
			return false, fmt.Errorf("deploy failed otherwise: %s", r)
		}
		return r.Code == 0, nil
	})
	h.waitUnits("killed", "web", 1, sampleV2)
}

func TestDeployDryRunChangesNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "dry")
	h.mustTug("app", "deploy", "dry", "--image", sampleV1)
	before := h.releases("dry")
	dep, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "dry-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := h.mustTug("app", "deploy", "dry", "--image", sampleV2, "--dry-run")
	if !strings.Contains(r.Stdout, "image "+sampleV1+" -> "+sampleV2) {
		t.Fatalf("dry run should describe the change:\n%s", r.Stdout)
	}
	after := h.releases("dry")
	dep2, err := h.Client.AppsV1().Deployments(h.NS).Get(context.Background(), "dry-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || dep2.Generation != dep.Generation || dep2.Spec.Template.Spec.Containers[0].Image != sampleV1 {
		t.Fatalf("dry run changed something: releases %d -> %d, generation %d -> %d", len(before), len(after), dep.Generation, dep2.Generation)
	}
}

func TestExportRunsWithoutTug(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "portable")
	h.mustTug("app", "deploy", "portable", "--image", sampleV1)
	out := h.mustTug("app", "export", "portable").Stdout

	other := h.Another()
	kubectl := kubectlPath(t)
	cmd := exec.Command(kubectl, "--kubeconfig", env.kubeconfig, "apply", "-n", other.NS, "-f", "-")
	cmd.Stdin = strings.NewReader(out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply of the export: %v\n%s\n--- export:\n%s", err, b, out)
	}
	other.WaitPods("tug.dev/app=portable", 60*time.Second, "exported app runs", AllReady(1))
}

// Bad input: a clear error, exit 2, and nothing in the cluster changes.
func TestBadInputChangesNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "good")
	cases := [][]string{
		{"app", "create", "Bad_Name"},
		{"app", "create", "kube-system"},
		{"app", "create", "tug"},
		{"app", "create", strings.Repeat("a", 31)},
		{"app", "deploy", "good"},
		{"app", "deploy", "good", "--image", ""},
		{"app", "deploy", "good", "--image", sampleV1, "--process", "web=a", "--process", "web=b"},
		{"app", "deploy", "good", "--image", sampleV1, "--process", "Web=a"},
		{"app", "deploy", "good", "--image", sampleV1, "--process", "noequals"},
		{"app", "deploy", "good", "--image", sampleV1, "--process", "web=x", "--procfile", "Procfile"},
		{"app", "deploy", "good", "--image", sampleV1, "--dry-run", "--no-wait"},
		{"env", "set", "good", "KEYONLY"},
		{"env", "set", "good", "1BAD=x"},
		{"env", "set", "good"},
		{"env", "unset", "good", "A=b"},
		{"release", "info", "good", "vx"},
		{"app", "deploy", "good", "--image", sampleV1, "--timeout", "-1s"},
	}
	for _, args := range cases {
		r := h.Tug(args...)
		if r.Code != 2 {
			t.Errorf("tug %q: want exit 2, got %s", args, r)
			continue
		}
		if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); !strings.HasPrefix(lines[0], "error: ") {
			t.Errorf("tug %q: want a one-line error first, got %q", args, r.Stderr)
		}
	}
	// an unknown app is a failure (exit 1) that says how to find apps
	r := h.Tug("app", "deploy", "ghost", "--image", sampleV1)
	if r.Code != 1 || !strings.Contains(r.Stderr, `app "ghost" not found`) || !strings.Contains(r.Stderr, "tug app list") {
		t.Errorf("deploy of an unknown app: %s", r)
	}
	ctx := context.Background()
	deps, _ := h.Client.AppsV1().Deployments(h.NS).List(ctx, metav1.ListOptions{})
	secrets, _ := h.Client.CoreV1().Secrets(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=tug"})
	cms, _ := h.Client.CoreV1().ConfigMaps(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=tug"})
	if len(deps.Items) != 0 || len(secrets.Items) != 0 || len(cms.Items) != 1 {
		t.Fatalf("bad input changed the cluster: %d deployments, %d secrets, %d configmaps (want 0, 0, 1)", len(deps.Items), len(secrets.Items), len(cms.Items))
	}
}

func TestAppRemoveDeletesEverything(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "gone")
	h.mustTug("app", "deploy", "gone", "--image", sampleV1)
	h.mustTug("env", "set", "gone", "A=1")
	if r := h.Tug("app", "remove", "gone"); r.Code != 2 || !strings.Contains(r.Stderr, "--yes") {
		t.Fatalf("remove without --yes and without a terminal: want exit 2 naming --yes, got %s", r)
	}
	h.mustTug("app", "remove", "gone", "--yes")
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "tug.dev/app=gone"}
	pods, _ := h.Client.CoreV1().Pods(h.NS).List(ctx, sel)
	deps, _ := h.Client.AppsV1().Deployments(h.NS).List(ctx, sel)
	secrets, _ := h.Client.CoreV1().Secrets(h.NS).List(ctx, sel)
	cms, _ := h.Client.CoreV1().ConfigMaps(h.NS).List(ctx, sel)
	_, svcErr := h.Client.CoreV1().Services(h.NS).Get(ctx, "gone", metav1.GetOptions{})
	if len(pods.Items)+len(deps.Items)+len(secrets.Items)+len(cms.Items) != 0 || !apierrors.IsNotFound(svcErr) {
		t.Fatalf("left after remove: %d pods, %d deployments, %d secrets, %d configmaps, service err %v",
			len(pods.Items), len(deps.Items), len(secrets.Items), len(cms.Items), svcErr)
	}
	if r := h.Tug("app", "info", "gone"); r.Code != 1 {
		t.Fatalf("info of a removed app: %s", r)
	}
}
