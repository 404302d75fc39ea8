package e2e

// The command-tree test of issue 38: every command's declared access level
// (docs/rbac/levels.md, generated from the declarations and kept fresh by
// TestGeneratedDocsUpToDate) against the local cluster's real RBAC. Each
// command runs as a user one level below its own, and must be refused
// with the level named, then as a user of its level, and must not be
// refused. Users are impersonated (--as) from the admin kubeconfig and
// granted their level with 'tug access add'.

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// treeStep is one command of the walk: its words after "tug", the
// arguments that make it work on the fixture (app web), and what it reads
// on stdin.
type treeStep struct {
	args  string
	stdin string
}

// treeSteps run in this order (a volume is bound before it is unbound, an
// app stopped before it is started). Every command of the namespace levels
// needs an entry: a command added without one fails the walk, saying so.
var treeSteps = []treeStep{
	{args: "app list"}, {args: "app info web"}, {args: "app address web"}, {args: "unit list web"}, {args: "unit top web --once"},
	{args: "logs web"}, {args: "app events web"}, {args: "access list"},
	{args: "app allow list web"}, {args: "app autoscale list web"}, {args: "domain list web"}, {args: "cert list web"},
	{args: "volume list"}, {args: "env get web"}, {args: "env set web FOO=bar"}, {args: "env unset web FOO"},
	{args: "release list web"}, {args: "release info web v1"}, {args: "registry info web"},
	{args: "app limit list web"}, {args: "app limit set web -p web --memory 96Mi"}, {args: "app limit unset web -p web --memory"},
	{args: "app healthcheck list web"}, {args: "app healthcheck set web -p web --liveness exec:true"}, {args: "app healthcheck unset web -p web"},
	{args: "app settings show web"}, {args: "app settings set web --history 6"}, {args: "app settings unset web --history"},
	{args: "app autoscale set web -p web --min 1 --max 2 --cpu 80%"}, {args: "app autoscale unset web -p web"},
	{args: "app scale web web=1"}, {args: "unit add web 1 -p web"}, {args: "unit remove web 1 -p web"}, {args: "unit kill web {unit}"},
	{args: "app restart web"}, {args: "app stop web"}, {args: "app start web"},
	{args: "app deploy web --image " + sampleV2 + " --process web=sample"}, {args: "release rollback web"},
	{args: "app deploy web --image " + sampleV1 + " --process web=sample --canary 25%"}, {args: "release promote web"},
	{args: "app deploy web --image " + sampleV2 + " --process web=sample --canary 25%"}, {args: "release abort web"},
	{args: "app export web"},
	{args: "run web -- true"}, {args: "app exec web -- true"}, {args: "shell web {unit}"},
	{args: "domain add web tree.example.test"}, {args: "cert add web tree.example.test --cert {cert} --key {key}"},
	{args: "cert remove web tree.example.test --yes"}, {args: "domain remove web tree.example.test --yes"},
	{args: "app allow add web 10.0.0.0/8"}, {args: "app allow remove web 10.0.0.0/8"},
	{args: "app maintenance web off"}, {args: "app routable web on"},
	{args: "app tag set web tree=yes --no-wait"}, {args: "app tag unset web tree"},
	{args: "registry set web --server registry.example.test --username u --password-stdin", stdin: "secret\n"},
	{args: "registry unset web --yes"},
	{args: "job add web nightly --schedule @daily -- true"}, {args: "job list web"}, {args: "job info web nightly"},
	{args: "job suspend web nightly"}, {args: "job resume web nightly"}, {args: "job run web nightly"}, {args: "job logs web nightly"},
	{args: "job remove web nightly --yes"},
	{args: "volume create tree-data --size 1Mi"}, {args: "volume bind web tree-data --mount-path /data --no-wait"},
	{args: "volume unbind web tree-data --no-wait"}, {args: "volume remove tree-data --yes"},
	// A backing service (the local postgres image): made, read, bound to
	// web, rotated, dumped and restored, connected to, unbound; an
	// external one (update applies only to those); both removed.
	{args: "service create tree-db --plan postgres"}, {args: "service info tree-db"},
	{args: "service credentials tree-db --reveal"}, {args: "service bind web tree-db"},
	// A viewer lists a service bound to an app (whose release it may not read).
	{args: "service list"}, {args: "service rotate tree-db"},
	{args: "service backup tree-db -f {dump}"}, {args: "service restore tree-db -f {dump} --yes"},
	{args: "service backup tree-db --schedule @daily --keep 1"}, {args: "service backups tree-db"},
	{args: "service connect tree-db -- true"},
	// A review app of web while tree-db is bound: its own copy of tree-db,
	// forked from a dump (the schedule has written none yet), then removed.
	{args: "review up web --name pr-2 --image " + sampleV2 + " --fork-service tree-db"},
	{args: "review down web --name pr-2 --yes"},
	{args: "service unbind web tree-db"},
	{args: "service create tree-ext --uri postgres://u:p@db.example.test:5432/shop"},
	{args: "service update tree-ext --uri postgres://u:q@db.example.test:5432/shop"},
	{args: "service remove tree-ext --yes"}, {args: "service remove tree-db --yes"},
	// Review apps, pipelines and promotes (issue 39): web-pr-1 runs v2
	// until it is promoted into web, through the pipeline and by hand.
	{args: "review up web --name pr-1 --image {registry}/tug/sample:v2"}, {args: "review list web"},
	{args: "pipeline set tree {ns}/web-pr-1 {ns}/web"}, {args: "pipeline status tree"},
	{args: "pipeline promote tree {ns}/web-pr-1 --yes"}, {args: "app promote web-pr-1 web --yes"},
	{args: "review down web --name pr-1 --yes"},
	// Last of web's: no node is in this pool, so its units stay pending.
	{args: "app pool set web tree-pool --no-wait"},
	{args: "access add tree-someone --role viewer"}, {args: "access token tree-ci --role viewer --ttl 10m"},
	{args: "access remove tree-someone --yes"},
	{args: "app create tree-new"}, {args: "app remove tree-new --yes"},
}

// levelsTable reads docs/rbac/levels.md: command path -> level.
func levelsTable(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(), "docs/rbac/levels.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `tug ([^`]+)` \\| ([a-z-]+) \\|$")
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = m[2]
		}
	}
	if len(out) < 80 {
		t.Fatalf("docs/rbac/levels.md lists %d commands", len(out))
	}
	return out
}

// stepCommand is the command path a step runs: the longest prefix of its
// words that the table knows.
func stepCommand(args []string, table map[string]string) string {
	for n := len(args); n > 0; n-- {
		if _, ok := table[strings.Join(args[:n], " ")]; ok {
			return strings.Join(args[:n], " ")
		}
	}
	return ""
}

var namespaceLevels = []string{"viewer", "developer", "operator", "admin"}

func TestAccessCommandTreeLevels(t *testing.T) {
	h := New(t)
	table := levelsTable(t)
	h.deployShop("web", 1)
	h.usePostgresImage(serviceImages(t)["postgres"])
	h.serviceVolume("tree-db")
	h.claimVolume("tug-service-tree-db-backups")
	h.serviceVolume("web-pr-2-tree-db")
	// Users are impersonated by their kubeconfig ("as:"), not with --as:
	// 'service bind --as PREFIX' shadows the flag.
	kubeconfigs := map[string]string{"tree-nobody": h.impersonatingKubeconfig("tree-nobody")}
	for _, l := range namespaceLevels {
		h.mustTug("access", "add", "tree-"+l, "--role", l)
		kubeconfigs["tree-"+l] = h.impersonatingKubeconfig("tree-" + l)
	}
	certFile, keyFile := selfSigned(t, []string{"tree.example.test"}, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	files := map[string]string{"{cert}": certFile, "{key}": keyFile, "{dump}": filepath.Join(t.TempDir(), "tree-db.dump")}

	walked := map[string]bool{}
	for _, step := range treeSteps {
		args := strings.Fields(step.args)
		path := stepCommand(args, table)
		level := table[path]
		if path == "" || !contains(namespaceLevels, level) {
			t.Errorf("step %q: no command of a namespace level (%q, %q)", step.args, path, level)
			continue
		}
		walked[path] = true
		args = h.fillTreeArgs(args, files)
		below := "tree-nobody"
		if i := indexOf(namespaceLevels, level); i > 0 {
			below = "tree-" + namespaceLevels[i-1]
		}
		r := h.TugRun(Run{Args: args, Stdin: step.stdin, Env: []string{"KUBECONFIG=" + kubeconfigs[below]}})
		if r.Code != 1 || !strings.Contains(r.Stderr, "needs the "+level+" level") {
			t.Errorf("tug %s as %s (one level below %s): want a refusal naming %s; %s", step.args, below, level, level, r)
		}
		r = h.TugRun(Run{Args: args, Stdin: step.stdin, Env: []string{"KUBECONFIG=" + kubeconfigs["tree-"+level]}})
		if strings.Contains(r.Stderr, "needs the ") || strings.Contains(r.Stderr, "forbidden") || strings.Contains(r.Stderr, "refused:") {
			t.Errorf("tug %s as %s: refused at its own level; %s", step.args, level, r)
		} else if r.Code != 0 {
			t.Errorf("tug %s as %s: exit %d at its own level: %s", step.args, level, r.Code, firstLine(r.Stderr))
		}
	}
	for path, level := range table {
		if contains(namespaceLevels, level) && !walked[path] {
			t.Errorf("tug %s (%s) is not walked: add a step with working arguments to treeSteps", path, level)
		}
	}
}

// impersonatingKubeconfig is the test's kubeconfig with every user
// impersonating user (kubectl's "as:"), written to a temporary file.
func (h *H) impersonatingKubeconfig(user string) string {
	h.t.Helper()
	cfg, err := clientcmd.LoadFromFile(h.Kubeconfig)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	path := filepath.Join(h.t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// fillTreeArgs puts the fixture's unit and files (certificate, key,
// dump: placeholders to paths) in a step's words.
func (h *H) fillTreeArgs(args []string, files map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if f, ok := files[a]; ok {
			a = f
		}
		if rest, ok := strings.CutPrefix(a, "{ns}/"); ok {
			a = h.NS + "/" + rest
		}
		if rest, ok := strings.CutPrefix(a, "{registry}/"); ok {
			// promote needs an image a registry digest pins
			a = registryForBuilds(h.t, true) + "/" + rest
		}
		switch a {
		case "{unit}":
			pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/app=web,tug.dev/process=web"})
			if err != nil {
				h.t.Fatal(err)
			}
			a = ""
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Status.Phase == "Running" {
					a = p.Name
				}
			}
			if a == "" {
				h.t.Fatalf("no running unit of web")
			}
		}
		out[i] = a
	}
	return out
}

func contains(xs []string, x string) bool { return indexOf(xs, x) >= 0 }

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
