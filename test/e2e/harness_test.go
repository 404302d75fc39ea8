package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The harness runs tug as a user would against the local cluster
// (test/cluster/cluster.sh). Without a cluster the tests skip with a message;
// with TUG_E2E_REQUIRED=1 (make test, CI) a missing cluster fails the run.
// Only TUG_E2E_KUBECONFIG or TUG_E2E_REQUIRED=1 lets them run at all.
//
// The harness is in the harness_*_test.go files, by theme: this one holds
// the setup, H, running tug, Eventually and kubeconfigs for other identities;
// harness_clusters_test.go holds the multi-cluster harness (kubeconfig
// contexts, the move tests' poolClusters). Helpers one test file uses stay
// beside it.

var env struct {
	kubeconfig string
	config     *rest.Config
	client     kubernetes.Interface
	tug        string // path of the tug binary built for this run
	skip       string // why the tests skip, when there is no cluster
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	required := os.Getenv("TUG_E2E_REQUIRED") == "1"
	if err := connect(); err != nil {
		if required {
			fmt.Fprintf(os.Stderr, "e2e: no cluster: %v\n", err)
			return 1
		}
		env.skip = fmt.Sprintf("no local cluster (%v); start one with 'make cluster-up' or run 'make test'", err)
		fmt.Fprintln(os.Stderr, "e2e: skipping:", env.skip)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tug-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildTug(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building tug:", err)
		return 1
	}
	return m.Run()
}

func connect() error {
	path := os.Getenv("TUG_E2E_KUBECONFIG")
	if path == "" && os.Getenv("TUG_E2E_REQUIRED") != "1" {
		// A plain 'go test ./...' (make unit) must not run the suite on
		// a cluster that happens to be up: it changes nodes and pools.
		return fmt.Errorf("TUG_E2E_KUBECONFIG is not set")
	}
	if path == "" {
		path = "/var/lib/tug-cluster/admin.kubeconfig"
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("cluster at %s does not answer: %w", cfg.Host, err)
	}
	env.kubeconfig, env.config, env.client = path, cfg, client
	return nil
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func buildTug(dir string) error {
	env.tug = filepath.Join(dir, "tug")
	// -tags e2e: the test-only flags (drainflags_e2e.go in cmd/tug)
	cmd := exec.Command("go", "build", "-tags", "e2e", "-o", env.tug, "./cmd/tug")
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// H is one test's view of the cluster: its own namespace, a kubeconfig whose
// context points at that namespace, and a client.
type H struct {
	t          *testing.T
	NS         string
	Kubeconfig string
	Client     kubernetes.Interface
	Config     *rest.Config
}

// New gives the test a fresh namespace, removed when the test ends.
func New(t *testing.T) *H {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	t.Parallel()
	return newH(t)
}

// Another gives the test a second namespace, removed when the test ends.
func (h *H) Another() *H { return newH(h.t) }

func newH(t *testing.T) *H {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := strings.Trim("e2e-"+name, "-") + "-" + hex.EncodeToString(b)
	h := &H{t: t, NS: ns, Client: env.client, Config: env.config}
	ctx := context.Background()
	_, err := env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"tug.dev/e2e": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			h.dumpNamespace()
		}
		err := env.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing namespace %s: %v", ns, err)
		}
	})
	h.Kubeconfig = h.writeKubeconfig()
	return h
}

// writeKubeconfig copies the admin kubeconfig with the test's namespace as
// the current context's, so tug finds the namespace the way a user's would.
func (h *H) writeKubeconfig() string {
	raw, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		h.t.Fatal(err)
	}
	raw.Contexts[raw.CurrentContext].Namespace = h.NS
	path := filepath.Join(h.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		h.t.Fatal(err)
	}
	return path
}

func (h *H) dumpNamespace() {
	pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		h.t.Logf("pod %s: phase=%s node=%s", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.ContainerStatuses {
			h.t.Logf("  container %s: ready=%v restarts=%d state=%+v", c.Name, c.Ready, c.RestartCount, c.State)
		}
	}
}

// Result is what a tug run printed and how it ended.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Run is how a test runs tug.
type Run struct {
	Args  []string
	Stdin string
	Env   []string // extra KEY=VALUE
	Dir   string
}

// Tug runs tug with args, no terminal, and returns its output and exit code.
func (h *H) Tug(args ...string) Result {
	h.t.Helper()
	return h.TugRun(Run{Args: args})
}

func (h *H) TugRun(r Run) Result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.tug, r.Args...)
	cmd.Env = h.tugEnv(r.Env)
	cmd.Dir = r.Dir
	cmd.Stdin = strings.NewReader(r.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.Code = exitErr.ExitCode()
	case err != nil:
		h.t.Fatalf("running tug %v: %v", r.Args, err)
	}
	return res
}

func (h *H) tugEnv(extra []string) []string {
	e := []string{
		"KUBECONFIG=" + h.Kubeconfig,
		"HOME=" + h.t.TempDir(),
		"PATH=" + os.Getenv("PATH"),
		"NO_COLOR=1",
	}
	// a build agent under test, for every build (an image in the local registry)
	if a := os.Getenv("TUG_BUILD_AGENT_IMAGE"); a != "" {
		e = append(e, "TUG_BUILD_AGENT_IMAGE="+a)
	}
	return append(e, extra...)
}

// TTY starts tug under a real pseudo-terminal of the given size. The caller
// reads and writes the terminal and waits on the command.
func (h *H) TTY(rows, cols uint16, args ...string) (*exec.Cmd, *os.File) {
	h.t.Helper()
	cmd := exec.Command(env.tug, args...)
	cmd.Env = append(h.tugEnv(nil), "TERM=xterm")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		h.t.Fatalf("starting tug under a pty: %v", err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = f.Close()
	})
	return cmd, f
}

// Eventually waits until cond holds, failing the test at the deadline with
// the last error. For state that has no watch (a process's output, a route);
// cluster objects are better waited on with WaitPods and friends.
func (h *H) Eventually(timeout time.Duration, what string, cond func() (bool, error)) {
	h.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		h.t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
	}
}

// mustTug runs tug and fails the test unless it exits 0.
func (h *H) mustTug(args ...string) Result {
	h.t.Helper()
	r := h.Tug(args...)
	if r.Code != 0 {
		h.t.Fatalf("tug %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// kubectlPath is the kubectl built with the local cluster (same version).
func kubectlPath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoRoot(), "test/cluster/build-localk8s.sh"), "--cached").Output()
	if err != nil {
		t.Fatalf("the local cluster's binary is not built: %v", err)
	}
	link := filepath.Join(t.TempDir(), "kubectl")
	if err := syscallSymlink(strings.TrimSpace(string(out)), link); err != nil {
		t.Fatal(err)
	}
	return link
}

func syscallSymlink(target, link string) error { return syscall.Symlink(target, link) }

// adminRoleKubeconfig binds a service account of h's namespace to exactly the
// generated Role of tug's highest namespace level (admin: every app
// command, app create and remove included; docs/access.md) and returns a
// kubeconfig for it: a user with nothing but a namespace Role.
func adminRoleKubeconfig(t *testing.T, h *H) string {
	t.Helper()
	apply := exec.Command(kubectlPath(t), "--kubeconfig", env.kubeconfig, "apply", "-n", h.NS, "-f", filepath.Join(repoRoot(), "docs/rbac/tug-admin-role.yaml"))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("applying the admin Role: %v\n%s", err, out)
	}
	return serviceAccountKubeconfig(t, h, "dev", "tug-admin")
}

// roleKubeconfig makes a Role of rules in h's namespace and returns a
// kubeconfig for a service account bound to it.
func roleKubeconfig(t *testing.T, h *H, rules []rbacv1.PolicyRule) string {
	t.Helper()
	if _, err := h.Client.RbacV1().Roles(h.NS).Create(context.Background(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "limited"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return serviceAccountKubeconfig(t, h, "limited", "limited")
}

// serviceAccountKubeconfig binds a new service account name of h's
// namespace to the Role role and returns a kubeconfig for it, with the
// test's namespace.
func serviceAccountKubeconfig(t *testing.T, h *H, name, role string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := h.Client.CoreV1().ServiceAccounts(h.NS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client.RbacV1().RoleBindings(h.NS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: h.NS}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := h.Client.CoreV1().ServiceAccounts(h.NS).CreateToken(ctx, name, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(h.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	user := raw.Contexts[raw.CurrentContext].AuthInfo
	raw.AuthInfos[user].ClientCertificate, raw.AuthInfos[user].ClientKey = "", ""
	raw.AuthInfos[user].Token = tok.Status.Token
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		t.Fatal(err)
	}
	return path
}
