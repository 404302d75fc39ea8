package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
)

// phaseFixture is an app "shop" at v1 (web, image shop:1) whose release
// command is ./migrate, with config COLOR=red. Every run pod the fake
// cluster is asked for has already exited with code.
func phaseFixture(t *testing.T, code int32) *printerFixture {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 1, LastRelease: 1, Image: "shop:1", CreatedAt: p.ago("created", time.Hour),
		Processes: map[string]app.Process{"web": {Replicas: 2}}})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: app.KindDeploy, Status: app.StatusDeployed,
		Processes: map[string]string{"web": "./serve"}, ReleaseCommand: "./migrate", CreatedAt: p.ago("v1", 30*time.Minute)},
		app.ConfigMap{"COLOR": "red"})
	p.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Labels["tug.dev/kind"] == "run" {
			pod.Status.Phase = corev1.PodFailed
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}}
		}
		return false, nil, nil // the tracker stores it, status and all
	})
	return p
}

// A config change whose release phase fails: exit 17, a result saying so on
// stdout with -o json, no line in a piped log that reads as success.
func TestEnvSetReleasePhaseFails(t *testing.T) {
	success := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d (config set|deployed|rolled back|release phase of v\d+ succeeded)\b|is running`)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"env set", []string{"env", "set", "shop", "COLOR=blue"}},
		{"env unset", []string{"env", "unset", "shop", "COLOR"}},
		{"rollback", nil}, // set up below: a v2 to roll back from
	} {
		t.Run(c.name, func(t *testing.T) {
			p := phaseFixture(t, 4)
			args := c.args
			next := 2
			if args == nil {
				a, _ := p.store.GetApp(t.Context(), "shop")
				if _, err := p.store.UpdateApp(t.Context(), a.Name, func(x *app.App) error { x.Release, x.LastRelease = 2, 2; return nil }); err != nil {
					t.Fatal(err)
				}
				p.mustCreateRelease(t, &app.Release{App: "shop", Version: 2, Image: "shop:2", Kind: app.KindDeploy, Status: app.StatusDeployed,
					Processes: map[string]string{"web": "./serve"}, CreatedAt: p.ago("v2", 20*time.Minute)}, app.ConfigMap{"COLOR": "red"})
				args, next = []string{"release", "rollback", "shop", "v1"}, 3
			}
			r := p.run(t, false, append(args, "-o", "json")...)
			if r.code != 17 {
				t.Fatalf("exit %d, want 17; stderr:\n%s", r.code, r.stderr)
			}
			var res struct {
				Release int    `json:"release"`
				Status  string `json:"status"`
				Failure struct {
					Class             string `json:"class"`
					Message           string `json:"message"`
					ContainerExitCode *int   `json:"containerExitCode"`
				} `json:"failure"`
				ReleasePhase struct {
					Command  string `json:"command"`
					Status   string `json:"status"`
					ExitCode *int   `json:"exitCode"`
				} `json:"releasePhase"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("stdout is not one JSON result: %v\n%s", err, r.stdout)
			}
			if res.Release != next || res.Status != "failed" || res.Failure.Class != "release-phase" ||
				res.Failure.Message != "release phase exited with code 4" || res.Failure.ContainerExitCode == nil || *res.Failure.ContainerExitCode != 4 ||
				res.ReleasePhase.Status != "failed" || res.ReleasePhase.Command != "./migrate" || res.ReleasePhase.ExitCode == nil || *res.ReleasePhase.ExitCode != 4 {
				t.Errorf("result:\n%s", r.stdout)
			}
			if m := success.FindString(r.stderr); m != "" {
				t.Errorf("a failed release phase printed %q, which reads as success; stderr:\n%s", m, r.stderr)
			}
			for _, want := range []string{"release phase exited with code 4", "nothing was rolled out", "error: "} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			rel, _, err := p.store.GetRelease(t.Context(), "shop", next)
			if err != nil || rel.Status != app.StatusFailed || rel.FailReason != "release phase exited with code 4" {
				t.Errorf("v%d = %+v, %v", next, rel, err)
			}
			if deps, _ := p.cs.AppsV1().Deployments("dev").List(t.Context(), metaListAll()); len(deps.Items) != 0 {
				t.Errorf("%d Deployments applied after the failed phase", len(deps.Items))
			}
		})
	}
}

// Piped, without -o: stdout stays empty, and the log says failed.
func TestEnvSetReleasePhaseFailsPiped(t *testing.T) {
	p := phaseFixture(t, 4)
	r := p.run(t, false, "env", "set", "shop", "COLOR=blue")
	if r.code != 17 || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
	}
	for _, line := range []string{"running the release phase of v2", "release v2 failed"} {
		if !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d ` + regexp.QuoteMeta(line) + `$`).MatchString(r.stderr) {
			t.Errorf("want the line %q; stderr:\n%s", line, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "succeeded") || strings.Contains(r.stderr, "config set") {
		t.Errorf("stderr reads as success:\n%s", r.stderr)
	}
}

// --dry-run says the release phase would run, or that it is skipped.
func TestDeployDryRunSaysReleasePhase(t *testing.T) {
	p := phaseFixture(t, 0)
	dir := t.TempDir()
	procfile := dir + "/Procfile"
	if err := writeFile(procfile, "web: ./serve\nrelease: TOKEN=abc ./migrate --all\n"); err != nil {
		t.Fatal(err)
	}
	r := p.run(t, false, "app", "deploy", "shop", "--image", "shop:2", "--procfile", procfile, "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := `  release phase: "TOKEN=(hidden) ./migrate --all" would run once in a one-off unit of v2 before anything rolls out`
	if !strings.Contains(r.stdout, want+"\n") || strings.Contains(r.stdout, "abc") {
		t.Errorf("stdout:\n%s\nwant the line\n%s", r.stdout, want)
	}
	r = p.run(t, false, "app", "deploy", "shop", "--image", "shop:2", "--procfile", procfile, "--dry-run", "--skip-release-phase", "-o", "json")
	var res struct {
		Plan         []string `json:"plan"`
		ReleasePhase struct{ Status string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
	}
	if res.ReleasePhase.Status != "skipped" || len(res.Plan) == 0 || !strings.HasSuffix(res.Plan[0], "skipped (--skip-release-phase)") {
		t.Errorf("dry run --skip-release-phase: %s", r.stdout)
	}
}

func metaListAll() metav1.ListOptions { return metav1.ListOptions{} }

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
