package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pullSecrets are the imagePullSecrets of a pod spec, by name.
func pullSecrets(spec corev1.PodSpec) []string {
	var out []string
	for _, s := range spec.ImagePullSecrets {
		out = append(out, s.Name)
	}
	return out
}

// assertPulledWith fails unless every unit of the app (and its Deployments)
// names secret as its only pull secret ("" for none).
func (h *H) assertPulledWith(appName, secret string) {
	h.t.Helper()
	ctx := context.Background()
	want := []string(nil)
	if secret != "" {
		want = []string{secret}
	}
	deps, err := h.Client.AppsV1().Deployments(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName})
	if err != nil || len(deps.Items) == 0 {
		h.t.Fatalf("deployments of %s: %v (%d)", appName, err, len(deps.Items))
	}
	for _, d := range deps.Items {
		if got := pullSecrets(d.Spec.Template.Spec); strings.Join(got, ",") != strings.Join(want, ",") {
			h.t.Fatalf("deployment %s pulls with %v, want %v", d.Name, got, want)
		}
	}
	pods, err := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName + ",tug.dev/process"})
	if err != nil || len(pods.Items) == 0 {
		h.t.Fatalf("units of %s: %v (%d)", appName, err, len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue // an old unit on its way out
		}
		if got := pullSecrets(p.Spec); strings.Join(got, ",") != strings.Join(want, ",") {
			h.t.Fatalf("unit %s pulls with %v, want %v", p.Name, got, want)
		}
	}
}

type registryInfo struct {
	Secret   string `json:"secret"`
	Server   string `json:"server"`
	Username string `json:"username"`
	Units    []struct {
		Name    string `json:"name"`
		Process string `json:"process"`
	} `json:"units"`
}

func TestRegistryPullSecretReachesUnitsAndRuns(t *testing.T) {
	h := New(t)
	pw := secretWord(t)
	var outputs []Result // everything tug printed, checked for the password at the end
	tug := func(stdin string, args ...string) Result {
		t.Helper()
		r := h.TugRun(Run{Args: args, Stdin: stdin})
		outputs = append(outputs, r)
		if r.Code != 0 {
			t.Fatalf("tug %s: %s", strings.Join(args, " "), r)
		}
		return r
	}

	// before the first deploy: stored and recorded; the deploy uses it
	tug("", "app", "create", "shop")
	tug(pw+"\n", "registry", "set", "shop", "--server", "registry.example.com:5000", "--username", "ci-bot", "--password-stdin")
	tug("", "app", "deploy", "shop", "--image", sampleV1, "--process", "web=sample", "--process", "worker=sample worker")
	h.waitUnits("shop", "web", 1, sampleV1)
	h.waitUnits("shop", "worker", 1, sampleV1)
	h.assertPulledWith("shop", "tug-registry-shop")

	// the Secret is a dockerconfigjson the kubelet can use
	s, err := h.Client.CoreV1().Secrets(h.NS).Get(context.Background(), "tug-registry-shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	if s.Type != corev1.SecretTypeDockerConfigJson || json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg) != nil {
		t.Fatalf("secret type %s, data %d bytes", s.Type, len(s.Data[corev1.DockerConfigJsonKey]))
	}
	auth := cfg.Auths["registry.example.com:5000"]
	if auth.Username != "ci-bot" || auth.Password != pw || auth.Auth != base64.StdEncoding.EncodeToString([]byte("ci-bot:"+pw)) {
		t.Fatalf("stored credentials: user %q, password stored: %v, auth ok: %v", auth.Username, auth.Password == pw, auth.Auth != "")
	}

	// a one-off run pod pulls with it too
	r := tug("", "run", "shop", "--detach", "--", "sleep", "300")
	runPod := strings.TrimSpace(r.Stdout)
	pod, err := h.Client.CoreV1().Pods(h.NS).Get(context.Background(), runPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pullSecrets(pod.Spec); len(got) != 1 || got[0] != "tug-registry-shop" {
		t.Fatalf("run pod %s pulls with %v", runPod, got)
	}

	// info names server, user, secret and the pods; never the password
	var info registryInfo
	r = tug("", "registry", "info", "shop", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil {
		t.Fatalf("registry info -o json: %v\n%s", err, r.Stdout)
	}
	procs := map[string]bool{}
	for _, u := range info.Units {
		procs[u.Process] = true
	}
	if info.Server != "registry.example.com:5000" || info.Username != "ci-bot" || info.Secret != "tug-registry-shop" || !procs["web"] || !procs["worker"] || !procs[""] {
		t.Fatalf("registry info: %+v", info)
	}
	if err := h.Client.CoreV1().Pods(h.NS).Delete(context.Background(), runPod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// and a run to completion works with it
	tug("", "run", "shop", "--", "sh", "-c", "exit 0")
	r = tug("", "registry", "info", "shop")
	if !strings.Contains(r.Stdout, "registry.example.com:5000") || !strings.Contains(r.Stdout, "ci-bot") {
		t.Fatalf("registry info: %s", r)
	}

	// a new password on a deployed app: same Secret, updated
	pw2 := secretWord(t)
	tug(pw2, "registry", "set", "shop", "--server", "registry.example.com:5000", "--username", "ci-bot", "--password-stdin")
	s, _ = h.Client.CoreV1().Secrets(h.NS).Get(context.Background(), "tug-registry-shop", metav1.GetOptions{})
	if !strings.Contains(string(s.Data[corev1.DockerConfigJsonKey]), pw2) {
		t.Fatal("the new password was not stored")
	}

	// unset rolls the units out without it and deletes the Secret
	tug("", "registry", "unset", "shop")
	h.assertPulledWith("shop", "")
	if _, err := h.Client.CoreV1().Secrets(h.NS).Get(context.Background(), "tug-registry-shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unset left the secret: %v", err)
	}
	r = tug("", "registry", "info", "shop", "-o", "json")
	if err := json.Unmarshal([]byte(r.Stdout), &info); err != nil || info.Secret != "" {
		t.Fatalf("info after unset: %v %s", err, r.Stdout)
	}

	// set on a deployed app rolls every unit out with it
	tug(pw+"\n", "registry", "set", "shop", "--server", "ghcr.io", "--username", "octo", "--password-stdin", "-o", "json")
	h.assertPulledWith("shop", "tug-registry-shop")

	// the password is in no output and in no object but its Secret
	for _, args := range [][]string{
		{"app", "info", "shop"}, {"app", "info", "shop", "-o", "yaml"}, {"app", "export", "shop"},
		{"release", "list", "shop", "-o", "json"}, {"registry", "info", "shop", "-o", "yaml"}, {"unit", "list", "shop", "-o", "json"},
	} {
		tug("", args...)
	}
	for _, r := range outputs {
		for _, p := range []string{pw, pw2} {
			if strings.Contains(r.Stdout+r.Stderr, p) {
				t.Fatalf("the password shows in tug's output:\n%s", r)
			}
		}
	}
	h.assertNoValueInSpecs(pw)
	cms, _ := h.Client.CoreV1().ConfigMaps(h.NS).List(context.Background(), metav1.ListOptions{})
	if b, _ := json.Marshal(cms); strings.Contains(string(b), pw) {
		t.Fatal("the password is in a ConfigMap")
	}
}

// Bad registry input: a clear error, exit 2 (1 for a missing app), and
// nothing stored.
func TestRegistryBadInputChangesNothing(t *testing.T) {
	h := New(t)
	pw := secretWord(t)
	h.mustTug("app", "create", "shop")
	cases := []struct {
		stdin string
		args  []string
		code  int
	}{
		{"", []string{"registry", "set", "shop", "--server", "r.example.com", "--username", "u", "--password", pw}, 2},
		{"", []string{"registry", "set", "shop", "--server", "r.example.com", "--username", "u", "--password-stdin"}, 2},
		{pw, []string{"registry", "set", "shop", "--server", "r.example.com", "--username", "u"}, 2},
		{pw, []string{"registry", "set", "shop", "--server", "not a host", "--username", "u", "--password-stdin"}, 2},
		{pw, []string{"registry", "set", "shop", "--server", "r.example.com", "--username", "a:b", "--password-stdin"}, 2},
		{pw, []string{"registry", "set", "shop", pw, "--server", "r.example.com", "--username", "u", "--password-stdin"}, 2},
		{pw, []string{"registry", "set", "ghost", "--server", "r.example.com", "--username", "u", "--password-stdin"}, 1},
		{"", []string{"registry", "unset", "shop"}, 1},
		{"", []string{"registry", "info", "ghost"}, 1},
	}
	for _, c := range cases {
		r := h.TugRun(Run{Args: c.args, Stdin: c.stdin})
		if r.Code != c.code || !strings.HasPrefix(r.Stderr, "error: ") && !strings.Contains(r.Stderr, "\nerror: ") {
			t.Errorf("tug %q: want exit %d with an error line, got %s", c.args, c.code, r)
		}
		if strings.Contains(r.Stdout+r.Stderr, pw) {
			t.Errorf("tug %q: the password shows in the output:\n%s", c.args, r)
		}
	}
	secrets, _ := h.Client.CoreV1().Secrets(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/kind=registry"})
	if len(secrets.Items) != 0 {
		t.Fatalf("bad input stored %d registry secrets", len(secrets.Items))
	}
	r := h.mustTug("app", "info", "shop", "-o", "json")
	if strings.Contains(r.Stdout, "registrySecret") {
		t.Fatalf("bad input recorded a registry secret:\n%s", r.Stdout)
	}
}
