package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceBoundFromTugYAML: a tug.yaml's services section binds a
// service with the deploy, app export --manifest writes it back, and a file
// that leaves it out unbinds it.
func TestServiceBoundFromTugYAML(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	const name = "yamlshop"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"bound.yaml":   "services:\n  db: {}\n",
		"unbound.yaml": "services: {}\n",
		"missing.yaml": "services:\n  nosuch: {}\n",
	})
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"], "--manifest", filepath.Join(dir, "bound.yaml"))
	h.routerBody(r, url, "db ok rows=", "")
	if exported := h.mustTug("app", "export", name, "--manifest").Stdout; !strings.Contains(exported, "services:\n  db:\n    as: DATABASE") {
		t.Errorf("export --manifest does not bind db:\n%s", exported)
	}
	before := h.releaseCount(name)
	if res := h.Tug("app", "deploy", name, "--image", imgs["dbapp"], "--manifest", filepath.Join(dir, "missing.yaml")); res.Code != 2 || h.releaseCount(name) != before {
		t.Errorf("a tug.yaml binding a missing service: want exit 2, no release:\n%s", res)
	}
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"], "--manifest", filepath.Join(dir, "unbound.yaml"))
	if env := h.webEnvNames(name); contains(env, "DATABASE_URL") {
		t.Errorf("a tug.yaml without db still binds it: %v", env)
	}
}

// TestServiceBindFromTugYAMLAsServiceBindDoes: a tug.yaml that binds a
// service takes the service's lock and checks the app's config as 'tug
// service bind' does. A binding whose variable the config sets is refused
// with bind's exit code and nothing changes; while another tug holds the
// service's lock the deploy fails as bind does, naming the holder, and with
// --wait-lock it waits and binds once the lock is free.
func TestServiceBindFromTugYAMLAsServiceBindDoes(t *testing.T) {
	h := New(t)
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	const name = "yamllock"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"tug.yaml": "services:\n  db: {}\n"})
	file := filepath.Join(dir, "tug.yaml")
	deployArgs := []string{"app", "deploy", name, "--image", imgs["dbapp"], "--manifest", file}

	h.mustTug("env", "set", name, "DATABASE_URL=postgres://elsewhere/db")
	before := h.releaseCount(name)
	bind := h.Tug("service", "bind", name, "db")
	res := h.Tug(deployArgs...)
	if bind.Code == 0 || res.Code != bind.Code || !strings.Contains(res.Stderr, "DATABASE_URL") {
		t.Errorf("a tug.yaml binding the config clashes with: want service bind's refusal (exit %d) naming DATABASE_URL:\n%s", bind.Code, res)
	}
	if n := h.releaseCount(name); n != before || contains(h.webEnvNames(name), "SERVICE_BINDING_ROOT") {
		t.Errorf("the refused bind changed the app: %d releases (were %d), variables %v", n, before, h.webEnvNames(name))
	}
	h.mustTug("env", "unset", name, "DATABASE_URL")

	release := h.holdServiceLock("db")
	before = h.releaseCount(name)
	bind = h.Tug("service", "bind", name, "db")
	res = h.Tug(deployArgs...)
	if bind.Code == 0 || res.Code != bind.Code || !strings.Contains(res.Stderr, "being changed by") {
		t.Errorf("a tug.yaml bind while the service's lock is held: want service bind's failure (exit %d) naming the holder:\n%s", bind.Code, res)
	}
	if n := h.releaseCount(name); n != before {
		t.Errorf("the bind that found the lock held made a release: %d (were %d)", n, before)
	}
	cmd := exec.Command(env.tug, append(deployArgs, "--wait-lock", "2m")...)
	cmd.Env = h.tugEnv(nil)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	h.Eventually(time.Minute, "the deploy waits for the service's lock", func() (bool, error) {
		return strings.Contains(stderr.String(), "waiting for") && strings.Contains(stderr.String(), "service db"), nil
	})
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the deploy that waited for the lock: %v\n%s", err, stderr.String())
	}
	if !contains(h.webEnvNames(name), "DATABASE_URL") {
		t.Errorf("after the wait the deploy did not bind db: %v", h.webEnvNames(name))
	}
}

// holdServiceLock makes the service's lock held by another tug (a Lease
// renewed just now, for minutes), and returns what releases it.
func (h *H) holdServiceLock(service string) func() {
	h.t.Helper()
	ctx := context.Background()
	holder, secs, now := "someone@elsewhere (tug e2e)", int32(300), metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "tug-lock-service." + service},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}}
	if _, err := h.Client.CoordinationV1().Leases(h.NS).Create(ctx, l, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	return func() { h.dropLease("service." + service) }
}

// lockedBuffer is a bytes.Buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
