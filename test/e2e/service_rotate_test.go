package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceRotateWhileClientsSendRequests: while 4 clients send requests
// through the router to an app (2 units) that writes to its database on
// every request, 'service rotate' gives the database new credentials and
// rolls the app onto them, twice in a row: no request fails, up to and
// past the moment the database refuses the last old login (each rotate
// returns before it, with that time; the second waits for the first's
// stopping units before it gives their login a new password); afterwards
// the old passwords are refused and the new one works.
func TestServiceRotateWhileClientsSendRequests(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	const name = "rotshop"
	url := "http://" + r.appHost(name, h.NS) + "/"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	h.mustTug("app", "scale", name, "web=2")
	h.mustTug("service", "bind", name, "db")
	h.routerBody(r, url, "db ok rows=", "")
	// the units from before the bind (no DATABASE_URL) serve through their
	// stop delay: the load starts once they are gone
	h.Eventually(time.Minute, "the units from before the bind stop", func() (bool, error) {
		pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + name})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return len(pods.Items) == 2, nil
	})
	old, middle := h.credentials("db"), map[string]string(nil)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	total, failed := 0, map[string]int{}
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				code, body, _, err := r.get(nil, url)
				mu.Lock()
				total++
				if err != nil {
					failed[errorKind(err)]++
				} else if code != 200 {
					failed[fmt.Sprintf("%d %s", code, body)]++
				}
				mu.Unlock()
			}
		})
	}
	// a second rotate right after the first gives a new password to the
	// login the first one's stopping units still use: it must wait for them
	var rotated [2]struct {
		Username  string    `json:"username"`
		Apps      []string  `json:"apps"`
		RevokedAt time.Time `json:"revokedAt"`
	}
	var res Result
	for i := range rotated {
		if res = h.Tug("service", "rotate", "db", "-o", "json"); res.Code != 0 {
			break
		}
		if err := json.Unmarshal([]byte(res.Stdout), &rotated[i]); err != nil {
			t.Errorf("rotate -o json: %v\n%s", err, res.Stdout)
		}
		if !strings.Contains(res.Stderr, "refused from") || !slices.Equal(rotated[i].Apps, []string{name}) {
			t.Errorf("rotate %d does not say when the old login is refused, or which apps it rolled (%v):\n%s", i+1, rotated[i].Apps, res.Stderr)
		}
		if i == 0 {
			middle = h.credentials("db")
		}
	}
	// the clients go on until the database refuses the old login (the
	// old units stop by then): a unit still on it must not fail a request
	h.Eventually(2*time.Minute, "the old login's deadline passes", func() (bool, error) {
		return res.Code != 0 || time.Now().After(rotated[1].RevokedAt.Add(2*time.Second)), nil
	})
	stop.Store(true)
	wg.Wait()
	if res.Code != 0 {
		t.Fatalf("service rotate: %s", res)
	}
	t.Logf("2 rotates: %d requests by 4 clients until the last old login was refused at %s, failed: %v\n%s", total, rotated[1].RevokedAt, failed, res.Stderr)
	if len(failed) > 0 || total < 20 {
		t.Errorf("%d requests, failed %v: want none failed (and the clients sending all along)", total, failed)
	}
	if err := h.psqlLogin("db", middle["username"], middle["password"]); err == nil {
		t.Error("the login of the first rotate still logs in after the second one's deadline")
	}
	now := h.credentials("db")
	if now["username"] != old["username"] || now["password"] == old["password"] || middle["username"] == old["username"] {
		t.Fatalf("two rotates did not take turns: %s -> %s -> %s, or kept the password", old["username"], middle["username"], now["username"])
	}
	if err := h.psqlLogin("db", old["username"], old["password"]); err == nil {
		t.Error("the first password still logs in after the rotates")
	}
	if err := h.psqlLogin("db", now["username"], now["password"]); err != nil {
		t.Errorf("the new password does not log in: %v", err)
	}
	h.routerBody(r, url, "db ok rows=", "")
}

func (h *H) credentials(service string) map[string]string {
	h.t.Helper()
	var c struct {
		Values map[string]string `json:"values"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("service", "credentials", service, "--reveal", "-o", "json").Stdout), &c); err != nil {
		h.t.Fatal(err)
	}
	return c.Values
}

// psqlLogin logs in to the service over TCP (password auth) from inside
// its unit.
func (h *H) psqlLogin(service, user, password string) error {
	h.t.Helper()
	cmd := exec.Command(kubectlPath(h.t), "--kubeconfig", env.kubeconfig, "-n", h.NS, "exec", "-i", "tug-service-"+service+"-0", "--",
		"sh", "-c", `read -r p; PGPASSWORD="$p" psql -h 127.0.0.1 -U "$1" -d app -c 'select 1'`, "sh", user)
	cmd.Stdin = strings.NewReader(password + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// TestServiceRotateWaitRunsForRunsFromBefore: a one-off run started before
// the rotate reads the old login. 'rotate --wait-runs' that the run
// outlasts stops without revoking (the old password still logs in) and
// names the run; the next rotate with --wait-runs waits, and once the run
// ends it finishes the rotation: the old password is refused.
func TestServiceRotateWaitRunsForRunsFromBefore(t *testing.T) {
	h := New(t)
	imgs := serviceImages(t)
	h.usePostgresImage(imgs["postgres"])
	h.serviceVolume("db")
	const name = "rotruns"
	h.mustTug("service", "create", "db", "--plan", "postgres")
	h.mustTug("app", "create", name)
	h.mustTug("app", "deploy", name, "--image", imgs["dbapp"])
	h.mustTug("service", "bind", name, "db")
	old := h.credentials("db")
	pod := strings.TrimSpace(h.mustTug("run", name, "--detach", "--", "sh", "-c", "sleep 600").Stdout)
	h.Eventually(time.Minute, "the run "+pod+" runs", func() (bool, error) {
		p, err := h.Client.CoreV1().Pods(h.NS).Get(context.Background(), pod, metav1.GetOptions{})
		return err == nil && p.Status.Phase == "Running", nil
	})

	res := h.Tug("service", "rotate", "db", "--wait-runs", "3s")
	if res.Code == 0 || !strings.Contains(res.Stderr, pod) || !strings.Contains(res.Stderr, "stays valid") {
		t.Fatalf("rotate --wait-runs that the run outlasts: want a failure naming %s and the old login kept:\n%s", pod, res)
	}
	if err := h.psqlLogin("db", old["username"], old["password"]); err != nil {
		t.Errorf("the old login was revoked though a run from before still uses it: %v", err)
	}

	cmd := exec.Command(env.tug, "service", "rotate", "db", "--wait-runs", "2m", "--wait-units")
	cmd.Env = h.tugEnv(nil)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	h.Eventually(2*time.Minute, "the rotate waits for the run", func() (bool, error) {
		return strings.Contains(stderr.String(), "waiting up to 2m0s for "+pod), nil
	})
	h.mustTug("unit", "kill", name, pod)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the rotate that waited for the run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "finishing it") {
		t.Errorf("the second rotate does not say it finishes the stopped one:\n%s", stderr.String())
	}
	if err := h.psqlLogin("db", old["username"], old["password"]); err == nil {
		t.Error("the old password still logs in after the rotate finished")
	}
	now := h.credentials("db")
	if err := h.psqlLogin("db", now["username"], now["password"]); err != nil {
		t.Errorf("the new password: %v", err)
	}
}
