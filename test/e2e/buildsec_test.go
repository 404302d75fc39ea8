package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// podWatch records every version of every build pod in the namespace
// while a command runs: what anyone who can get pods could read.
type podWatch struct {
	mu     sync.Mutex
	seen   []corev1.Pod
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *H) watchBuildPods() *podWatch {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "tug.dev/kind=build"})
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	pw := &podWatch{cancel: cancel, done: make(chan struct{}), seen: list.Items}
	go func() {
		defer close(pw.done)
		rv := list.ResourceVersion
		// a watch the server closes is resumed from the last version seen
		for ctx.Err() == nil {
			w, err := h.Client.CoreV1().Pods(h.NS).Watch(ctx, metav1.ListOptions{LabelSelector: "tug.dev/kind=build", ResourceVersion: rv})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type == watch.Error {
					break
				}
				rv = p.ResourceVersion
				pw.mu.Lock()
				pw.seen = append(pw.seen, *p.DeepCopy())
				pw.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return pw
}

// stop ends the watch and returns what it saw.
func (pw *podWatch) stop() []corev1.Pod {
	pw.cancel()
	<-pw.done
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.seen
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// halves writes s in the scan script as two quoted halves, so the script
// (which RUN steps and buildkitd see) never holds s whole.
func halves(s string) string {
	return fmt.Sprintf("'%s' '%s'", s[:len(s)/2], s[len(s)/2:])
}

// scanScript is a RUN step that looks for the secrets everywhere it can
// reach: every process's command line and environment, the root of every
// process it may enter (/proc/PID/root: another mount namespace, such as
// buildkitd's), its own filesystem, every socket there (does buildkitd
// answer on it?), and buildkitd's TCP port, bare and with any
// certificate and key it finds. Each find is a "TUG-LEAK" line; the last
// line counts what it searched. Its patterns live on a tmpfs of its own
// mount namespace (/scan), which no other root shows.
const scanScript = `#!/bin/sh
P=/scan/pats A=/scan/argpat C=/scan/canary
printf '%%s%%s\n' %[1]s > $P
printf '%%s%%s\n' %[2]s >> $P
printf '%%s%%s\n' %[3]s > $A
# the canary proves the search finds what is there: it sits in a file, in
# a command line and in an environment the step makes itself
printf '%%s%%s\n' %[4]s > $C
canary=$(cat $C)
mkdir -p /canary && echo "$canary" > /canary/file
sh -c 'sleep 60; :' "$canary" &
c1=$!
env "TUG_CANARY=$canary" sleep 60 &
c2=$!
sleep 1
self=$(readlink /proc/self/ns/mnt)
procs=0 roots=0 files=0 sockets=0
for d in /proc/[0-9]*; do
  [ -r $d/cmdline ] || continue
  procs=$((procs+1))
  echo "TUG-SCAN pid ${d#/proc/}: $(tr '\0' ' ' < $d/cmdline | cut -c1-100)"
  for f in cmdline environ; do
    tr '\0' '\n' < $d/$f 2>/dev/null | grep -q -F -f $P && echo "TUG-LEAK the password in the $f of pid ${d#/proc/}: $(tr '\0' ' ' < $d/cmdline | cut -c1-80)"
    tr '\0' '\n' < $d/$f 2>/dev/null | grep -q -F -f $A && echo "TUG-LEAK the build argument in the $f of pid ${d#/proc/}: $(tr '\0' ' ' < $d/cmdline | cut -c1-80)"
    tr '\0' '\n' < $d/$f 2>/dev/null | grep -q -F -f $C && echo "TUG-CANARY in the $f of pid ${d#/proc/}"
  done
done
scan_tree() {
  find "$1/" \( -path "$1/proc" -o -path "$1/sys" -o -path "$1/dev" -o -path "$1/scan" \) -prune -o \( -type f -o -type s \) -print 2>/dev/null > /scan/list
  while read -r f; do
    if [ -S "$f" ]; then
      sockets=$((sockets+1))
      timeout 5 buildctl --addr "unix://$f" debug workers >/dev/null 2>&1 && echo "TUG-LEAK buildkitd answers on the socket $f"
      continue
    fi
    files=$((files+1))
    tr '\0' '\n' < "$f" 2>/dev/null | grep -q -F -f $P && echo "TUG-LEAK the password in the file $f"
    tr '\0' '\n' < "$f" 2>/dev/null | grep -q -F -f $C && echo "TUG-CANARY in the file $f"
    case "$f" in
    */key.pem) dir=${f%%/key.pem}
      timeout 5 buildctl --addr tcp://127.0.0.1:9374 --tlsservername buildkitd --tlscacert "$dir/ca.pem" --tlscert "$dir/cert.pem" --tlskey "$f" debug workers >/dev/null 2>&1 &&
        echo "TUG-LEAK buildkitd takes the certificate in $dir" ;;
    esac
  done < /scan/list
}
seen=" "
for d in /proc/[0-9]*; do
  if ! ns=$(readlink $d/ns/mnt 2>&1); then
    echo "TUG-SCAN pid ${d#/proc/}: its namespaces are closed ($ns)"
    ls $d/root/ >/dev/null 2>&1 && echo "TUG-LEAK pid ${d#/proc/}: its root is readable though"
    continue
  fi
  [ "$ns" = "$self" ] && continue
  case "$seen" in *" $ns "*) continue ;; esac
  if ! err=$(ls $d/root/ 2>&1 >/dev/null); then
    echo "TUG-SCAN pid ${d#/proc/}: its root is closed ($err)"
    continue
  fi
  seen="$seen$ns "
  roots=$((roots+1))
  echo "TUG-SCAN the root of pid ${d#/proc/} ($(tr '\0' ' ' < $d/cmdline | cut -c1-60)) is readable"
  scan_tree $d/root
done
scan_tree ""
if out=$(timeout 10 buildctl --addr tcp://127.0.0.1:9374 --timeout 5 debug workers 2>&1); then
  echo "TUG-LEAK buildkitd answers on its port without a certificate"
else
  echo "TUG-SCAN buildkitd's port without a certificate: $(echo "$out" | tail -1 | cut -c1-160)"
fi
echo "TUG-SCAN-DONE procs=$procs roots=$roots files=$files sockets=$sockets"
kill $c1 $c2 2>/dev/null
`

// TestDockerfileRunStepsCannotReachTheSecrets (issue 22 items 3 and 10):
// a RUN step searching hard finds neither the push credentials (the
// app's registry Secret, which the build pod mounts as a Docker config)
// nor a build argument's value on any command line or in any
// environment, and no version of the build pod shows the build argument.
// It found both with one container running agent, buildctl and buildkitd.
func TestDockerfileRunStepsCannotReachTheSecrets(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	password := "pw-" + randomHex(t, 12)
	auth := base64.StdEncoding.EncodeToString([]byte("ci-bot:" + password))
	arg := "arg-" + randomHex(t, 12)
	canary := "canary-" + randomHex(t, 12)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		// TUG_HIDDEN is not declared: the step has no business seeing it
		"Dockerfile": fmt.Sprintf(`FROM %[1]s/tug/buildkit:v1 AS scan
COPY scan.sh /scan.sh
RUN --mount=type=tmpfs,target=/scan sh /scan.sh && mkdir /www && echo scanned > /www/index.html

FROM %[1]s/tug/busybox:v1
COPY --from=scan /www /www
CMD httpd -f -p ${PORT:-8080} -h /www
`, reg),
		"scan.sh": fmt.Sprintf(scanScript, halves(password), halves(auth), halves(arg), halves(canary)),
	})
	h.mustTug("app", "create", "scan")
	if r := h.TugRun(Run{Args: []string{"registry", "set", "scan", "--server", reg, "--username", "ci-bot", "--password-stdin"}, Stdin: password}); r.Code != 0 {
		t.Fatalf("registry set: %s", r)
	}
	pods := h.watchBuildPods()
	r := h.TugRun(Run{Args: []string{"app", "deploy", "scan", "--timeout", "3m", "--repository", reg + "/e2e/" + h.NS + "/scan",
		"--build-arg", "TUG_HIDDEN=" + arg}, Dir: src, Env: dockerfileEnv(reg)})
	seen := pods.stop()
	if r.Code != 0 {
		t.Fatalf("the scanning build: %s", r)
	}
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.Contains(l, "TUG-LEAK") || strings.Contains(l, "TUG-SCAN") {
			t.Log(strings.TrimSpace(l))
		}
		if strings.Contains(l, "TUG-LEAK") {
			t.Errorf("a RUN step reached a secret: %s", strings.TrimSpace(l))
		}
	}
	// the scan ran, and finds what is there: the canary it planted in a
	// file, a command line and an environment
	if !strings.Contains(r.Stderr, "TUG-SCAN-DONE") {
		t.Fatalf("the scan did not finish:\n%s", r.Stderr)
	}
	for _, where := range []string{"TUG-CANARY in the file /canary/file", "TUG-CANARY in the cmdline", "TUG-CANARY in the environ"} {
		if !strings.Contains(r.Stderr, where) {
			t.Errorf("the scan missed its own canary (%s...): it would miss the secrets too", where)
		}
	}
	// item 10: the build argument is in no version of the pod
	if len(seen) == 0 {
		t.Fatal("no build pod was seen")
	}
	// item 8: the API server took the disk caps (what the kubelet enforces)
	spec := seen[len(seen)-1].Spec
	for _, c := range spec.Containers {
		if c.Resources.Limits.StorageEphemeral().IsZero() {
			t.Errorf("container %s of the build pod has no ephemeral-storage limit", c.Name)
		}
	}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit == nil {
			t.Errorf("emptyDir %s of the build pod has no sizeLimit", v.Name)
		}
	}
	for _, p := range seen {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), arg) {
			t.Errorf("build pod %s (resourceVersion %s) holds the --build-arg value", p.Name, p.ResourceVersion)
			break
		}
	}
	assertNoBuildPods(t, h)
}

// nothingMade asserts that a refused deploy made no build pod (none was
// ever seen), recorded no release and left the app's record as it was.
func (h *H) nothingMade(seen []corev1.Pod, appName, recordVersion string) {
	h.t.Helper()
	if len(seen) != 0 {
		h.t.Errorf("a refused deploy made build pod %s", seen[0].Name)
	}
	secrets, err := h.Client.CoreV1().Secrets(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=" + appName})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, "tug-release-") {
			h.t.Errorf("a refused deploy recorded release %s", s.Name)
		}
	}
	if v := h.recordVersion(appName); v != recordVersion {
		h.t.Errorf("a refused deploy changed the app's record (resourceVersion %s -> %s)", recordVersion, v)
	}
}

func (h *H) recordVersion(appName string) string {
	h.t.Helper()
	cm, err := h.Client.CoreV1().ConfigMaps(h.NS).Get(context.Background(), "tug-app-"+appName, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return cm.ResourceVersion
}

// TestDeployFromSourceOverTheUnpackedLimitMakesNothing (issue 22 item 8):
// a source over 512 MiB unpacked (a sparse file: nothing on disk, and
// it compresses to almost nothing, so the compressed limit does not see
// it) exits 2 before any request that makes something.
func TestDeployFromSourceOverTheUnpackedLimitMakesNothing(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"index.html": "hi\n"})
	f, err := os.Create(filepath.Join(src, "zeros.img"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(512<<20 + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h.mustTug("app", "create", "big")
	before := h.recordVersion("big")
	pods := h.watchBuildPods()
	r := h.TugRun(Run{Args: []string{"app", "deploy", "big", "--timeout", "2m", "--builder", reg + "/tug/builder-static:v1",
		"--repository", reg + "/e2e/" + h.NS + "/big"}, Dir: src})
	seen := pods.stop()
	if r.Code != 2 || !strings.Contains(r.Stderr, "over the 512 MiB limit unpacked") {
		t.Errorf("want exit 2 naming the unpacked limit, got %s", r)
	}
	h.nothingMade(seen, "big", before)
}

// TestDeployWithABadRepositoryMakesNothing (issue 22 item 9): a tag, a
// digest or capitals in --repository exit 2 from the plan: no build pod,
// no failed release (before: the agent refused it in the pod, exit 16).
func TestDeployWithABadRepositoryMakesNothing(t *testing.T) {
	h := New(t)
	reg := registryForBuilds(t, true)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"index.html": "hi\n"})
	h.mustTug("app", "create", "repo")
	before := h.recordVersion("repo")
	for _, c := range []struct{ repo, want string }{
		{reg + "/e2e/" + h.NS + "/repo:v2", "has a tag (:v2)"},
		{reg + "/e2e/" + h.NS + "/repo@sha256:" + strings.Repeat("0", 64), "has a digest"},
		{reg + "/e2e/" + h.NS + "/Repo", "has capitals"},
	} {
		pods := h.watchBuildPods()
		r := h.TugRun(Run{Args: []string{"app", "deploy", "repo", "--timeout", "2m", "--builder", reg + "/tug/builder-static:v1",
			"--repository", c.repo}, Dir: src})
		seen := pods.stop()
		if r.Code != 2 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("--repository %s: want exit 2 with %q, got %s", c.repo, c.want, r)
		}
		h.nothingMade(seen, "repo", before)
	}
	// and the Dockerfile path takes the same check
	writeFiles(t, src, map[string]string{"Dockerfile": "FROM " + reg + "/tug/busybox:v1\n"})
	pods := h.watchBuildPods()
	r := h.TugRun(Run{Args: []string{"app", "deploy", "repo", "--timeout", "2m", "--repository", reg + "/e2e/" + h.NS + "/Repo:1"}, Dir: src, Env: dockerfileEnv(reg)})
	seen := pods.stop()
	if r.Code != 2 || !strings.Contains(r.Stderr, "--repository") {
		t.Errorf("a Dockerfile build with a bad --repository: want exit 2, got %s", r)
	}
	h.nothingMade(seen, "repo", before)
}
