//go:build unix

// Command services benchmarks backing services against doing the same
// with kubectl:
//
//   - `tug service create NAME --plan postgres` to accepting connections,
//     against `kubectl apply` of the same objects (its credentials Secret,
//     claim, Service and StatefulSet, copied from the service tug made in
//     that round) plus `kubectl rollout status` of the StatefulSet, which
//     returns once the unit is Ready (the plan's pg_isready probe);
//   - `tug service rotate NAME` of a service bound to 2 apps of 2 units
//     each, against the same done by hand on a twin namespace (the login's
//     new password by ALTER ROLE as the plan's command does, the two
//     Secrets patched, `kubectl rollout restart` of each Deployment and
//     `kubectl rollout status` of each), while 4 clients send requests to
//     the apps through the local router: the requests that failed are
//     counted for both ways.
//
// Rounds interleave (tug, kubectl, tug, ...); the create's first round is
// a warm-up, not counted.
//
//	go run ./bench/services -tug bin/tug -kubectl PATH -kubeconfig FILE -router 10.200.0.100 -dbapp IMAGE [-rounds 3] [-rotate-rounds 2]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tug.dev/tug/bench/internal/benchkit"
)

var (
	rounds       = flag.Int("rounds", 3, "service creates to time of each way (after one warm-up)")
	rotateRounds = flag.Int("rotate-rounds", 2, "rotations to time of each way")
	router       = flag.String("router", "10.200.0.100", "the local router's address (make -s cluster-router); HTTP on port 80")
	dbapp        = flag.String("dbapp", "", "the sample database app's image (test/cluster/cluster.sh service-images: dbapp)")
	env          *benchkit.Env
)

const (
	nsCreateTug     = "bench-services-create"
	nsCreateKubectl = "bench-services-create-k"
	nsRotateTug     = "bench-services-rotate"
	nsRotateHand    = "bench-services-rotate-k"
	service         = "db"
)

func main() {
	env = benchkit.Setup(true)
	if *dbapp == "" {
		fmt.Fprintln(os.Stderr, "bench: -dbapp IMAGE is required (test/cluster/cluster.sh service-images)")
		os.Exit(2)
	}
	ctx := context.Background()
	start := time.Now()
	drop, err := createBench(ctx)
	benchkit.Check("service create", err)
	// the create's namespaces go while the rotate's are set up (not timed)
	dropped := make(chan struct{})
	go func() { drop(); close(dropped) }()
	benchkit.Check("service rotate", rotateBench(ctx))
	<-dropped
	fmt.Fprintf(os.Stderr, "bench: services took %s\n", time.Since(start).Round(time.Second))
}

// both runs two namespace deletions at once.
func both(a, b func()) func() {
	return func() {
		done := make(chan struct{})
		go func() { a(); close(done) }()
		b()
		<-done
	}
}

// object is the name of a service's main objects (pkg/service.ObjectName).
func object(name string) string { return "tug-service-" + name }

// createBench times the creates, interleaved: tug makes service sN in one
// namespace, then kubectl applies a copy of its objects in another. It
// returns what deletes the two namespaces.
func createBench(ctx context.Context) (func(), error) {
	drop := both(env.Namespace(ctx, nsCreateTug), env.Namespace(ctx, nsCreateKubectl))
	dir, err := os.MkdirTemp("", "bench-services-")
	if err != nil {
		return drop, err
	}
	defer os.RemoveAll(dir)
	var tugs, kubectls []time.Duration
	for r := 0; r <= *rounds; r++ {
		name := fmt.Sprintf("s%d", r)
		res, err := benchkit.Run(env.TugCmd(nsCreateTug, "service", "create", name, "--plan", "postgres"))
		if err != nil {
			return drop, err
		}
		file := filepath.Join(dir, name+".json")
		if err := copyObjects(ctx, name, file); err != nil {
			return drop, err
		}
		start := time.Now()
		if _, err := benchkit.Run(env.KubectlCmd(nsCreateKubectl, "apply", "-f", file)); err != nil {
			return drop, err
		}
		if _, err := benchkit.Run(env.KubectlCmd(nsCreateKubectl, "rollout", "status", "statefulset/"+object(name), "--timeout", "5m")); err != nil {
			return drop, err
		}
		k := time.Since(start)
		if r > 0 {
			tugs, kubectls = append(tugs, res.Wall), append(kubectls, k)
		}
		// the units are not needed any more: free the nodes for the next round
		for _, ns := range []string{nsCreateTug, nsCreateKubectl} {
			_ = env.Client.AppsV1().StatefulSets(ns).Delete(ctx, object(name), metav1.DeleteOptions{})
		}
	}
	t, k := benchkit.Median(tugs).Round(time.Millisecond), benchkit.Median(kubectls).Round(time.Millisecond)
	ratio, rs := benchkit.Ratio(t.Seconds(), k.Seconds())
	env.Emit(benchkit.Row{Group: "Services", Benchmark: fmt.Sprintf("service create --plan postgres to accepting connections, 1 unit (median of %d each, interleaved, after a warm-up)", *rounds),
		Tug:     benchkit.Ms(t),
		Kubectl: "kubectl apply of the same objects (credentials Secret, claim, Service, StatefulSet) + rollout status: " + benchkit.Ms(k),
		Ratio:   rs, Goal: "<= 1.0x", Met: ratio <= 1.0, Requests: "-",
		Note: fmt.Sprintf("both wait for the plan's readiness probe (pg_isready); each round: tug %s, kubectl %s", benchkit.MsList(tugs), benchkit.MsList(kubectls))})
	return drop, nil
}

// copyObjects writes, as one kubectl List, the objects tug made for
// service name in nsCreateTug, as a user would write them by hand: no
// server-set fields, no status, no bound volume or cluster address.
func copyObjects(ctx context.Context, name, file string) error {
	core, apps := env.Client.CoreV1(), env.Client.AppsV1()
	var objs []runtime.Object
	sec, err := core.Secrets(nsCreateTug).Get(ctx, object(name), metav1.GetOptions{})
	if err != nil {
		return err
	}
	pvc, err := core.PersistentVolumeClaims(nsCreateTug).Get(ctx, object(name)+"-data", metav1.GetOptions{})
	if err != nil {
		return err
	}
	svc, err := core.Services(nsCreateTug).Get(ctx, object(name), metav1.GetOptions{})
	if err != nil {
		return err
	}
	sts, err := apps.StatefulSets(nsCreateTug).Get(ctx, object(name), metav1.GetOptions{})
	if err != nil {
		return err
	}
	objs = append(objs, sec, pvc, svc, sts)
	kinds := [][2]string{{"v1", "Secret"}, {"v1", "PersistentVolumeClaim"}, {"v1", "Service"}, {"apps/v1", "StatefulSet"}}
	var items []map[string]any
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		items = append(items, asWritten(m, kinds[i][0], kinds[i][1]))
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o600)
}

// asWritten is an object as read from the server, cut back to what its
// author wrote.
func asWritten(m map[string]any, apiVersion, kind string) map[string]any {
	meta, _ := m["metadata"].(map[string]any)
	m["apiVersion"], m["kind"] = apiVersion, kind
	m["metadata"] = map[string]any{"name": meta["name"], "labels": meta["labels"]}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok {
		for _, k := range []string{"volumeName", "clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy", "sessionAffinity", "type"} {
			delete(spec, k)
		}
	}
	return m
}

// rotateBench sets up the twin namespaces (a service bound to 2 apps of
// 2 units each), then times the rotations under load, interleaved.
func rotateBench(ctx context.Context) error {
	defer both(env.Namespace(ctx, nsRotateTug), env.Namespace(ctx, nsRotateHand))()
	hosts := make([][]string, 2)
	err := benchkit.Parallel(2, 2, func(i int) error {
		var err error
		hosts[i], err = boundApps([]string{nsRotateTug, nsRotateHand}[i])
		return err
	})
	if err != nil {
		return err
	}
	var tug, hand []load
	for range *rotateRounds {
		l, err := underLoad(nsRotateTug, hosts[0], func() (time.Time, error) {
			out, err := benchkit.Run(env.TugCmd(nsRotateTug, "service", "rotate", service, "-o", "json"))
			if err != nil {
				return time.Time{}, err
			}
			var r struct {
				RevokedAt time.Time `json:"revokedAt"`
			}
			if err := json.Unmarshal(out.Stdout, &r); err != nil {
				return time.Time{}, fmt.Errorf("service rotate -o json: %v", err)
			}
			return r.RevokedAt.Add(time.Second), nil
		})
		if err != nil {
			return err
		}
		tug = append(tug, l)
		if l, err = underLoad(nsRotateHand, hosts[1], func() (time.Time, error) { return time.Time{}, byHand(ctx) }); err != nil {
			return err
		}
		hand = append(hand, l)
	}
	emitRotate(tug, hand)
	return nil
}

func emitRotate(tug, hand []load) {
	t, h := medianWall(tug), medianWall(hand)
	tf, tn := sumFailed(tug)
	hf, hn := sumFailed(hand)
	ratio, rs := benchkit.Ratio(t.Seconds(), h.Seconds())
	env.Emit(benchkit.Row{Group: "Services", Benchmark: fmt.Sprintf("service rotate of a service bound to 2 apps of 2 units each, 4 clients sending requests through the router (median of %d each, interleaved)", *rotateRounds),
		Tug:     fmt.Sprintf("%s, %d of %d requests failed", benchkit.Ms(t), tf, tn),
		Kubectl: fmt.Sprintf("by hand (ALTER ROLE, the Secrets patched, kubectl rollout restart and rollout status of each Deployment): %s, %d of %d requests failed", benchkit.Ms(h), hf, hn),
		Ratio:   rs, Goal: "<= 1.0x, 0 failed", Met: ratio <= 1.0 && tf == 0, Requests: "-",
		Note: fmt.Sprintf("tug rolls the apps side by side and returns once they serve with the new login; the database refuses the old one from when the old units must have stopped (VALID UNTIL), and tug's requests are counted until then (apps with a 10 s grace period); each round: tug %s, by hand %s", loads(tug), loads(hand))})
}

// boundApps makes service db and apps a and b (2 units each of the
// sample database app) bound to it in ns, and returns the apps' hosts at
// the router.
func boundApps(ns string) ([]string, error) {
	env.MustTug(ns, "service", "create", service, "--plan", "postgres")
	apps := []string{"a", "b"}
	hosts := make([]string, len(apps))
	err := benchkit.Parallel(len(apps), len(apps), func(i int) error {
		a := apps[i]
		env.MustTug(ns, "app", "create", a)
		// a grace period of 10 s (both ways' Deployments alike): the old
		// login is refused 10 s after tug's rotate, not 30, and the
		// requests counted until then take that long
		env.MustTug(ns, "app", "deploy", a, "--image", *dbapp, "--timeout", "5m")
		env.MustTug(ns, "app", "settings", "set", a, "--grace-period", "10s", "--timeout", "5m")
		env.MustTug(ns, "app", "scale", a, "web=2", "--timeout", "5m")
		var info struct {
			URLs []string `json:"urls"`
		}
		if err := json.Unmarshal([]byte(env.MustTug(ns, "app", "info", a, "-o", "json")), &info); err != nil || len(info.URLs) == 0 {
			return fmt.Errorf("the URL of app %s through the router: %v", a, err)
		}
		u, err := url.Parse(info.URLs[0])
		if err != nil {
			return err
		}
		hosts[i] = u.Hostname()
		return nil
	})
	if err != nil {
		return nil, err
	}
	// one bind at a time: a bind holds the service's lock
	for _, a := range apps {
		env.MustTug(ns, "service", "bind", a, service, "--timeout", "5m")
	}
	return hosts, nil
}

// byHand is a rotation as a kubectl user does it: the login gets a new
// password in the database (the plan's way: psql through the unit's
// local socket), the credentials and binding Secrets are patched with
// it, and each Deployment restarted and watched to its end.
func byHand(ctx context.Context) error {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	pw := hex.EncodeToString(b)
	alter := env.KubectlCmd(nsRotateHand, "exec", "-i", object(service)+"-0", "-c", "postgres", "--", "sh", "-c",
		"read -r p; psql -v ON_ERROR_STOP=1 -q -U \"$POSTGRES_USER\" -d \"$POSTGRES_DB\" <<SQL\nALTER ROLE \"$POSTGRES_USER\" WITH PASSWORD '$p';\nSQL")
	alter.Stdin = strings.NewReader(pw + "\n")
	if _, err := benchkit.Run(alter); err != nil {
		return err
	}
	s, err := env.Client.CoreV1().Secrets(nsRotateHand).Get(ctx, object(service)+"-binding", metav1.GetOptions{})
	if err != nil {
		return err
	}
	uri, err := url.Parse(string(s.Data["uri"]))
	if err != nil {
		return err
	}
	uri.User = url.UserPassword(uri.User.Username(), pw)
	patches := map[string]map[string]string{
		object(service):              {"password": pw},
		object(service) + "-binding": {"password": pw, "uri": uri.String()},
	}
	for secret, data := range patches {
		p, _ := json.Marshal(map[string]any{"stringData": data})
		if _, err := benchkit.Run(env.KubectlCmd(nsRotateHand, "patch", "secret", secret, "-p", string(p))); err != nil {
			return err
		}
	}
	if _, err := benchkit.Run(env.KubectlCmd(nsRotateHand, "rollout", "restart", "deployment/a-web", "deployment/b-web")); err != nil {
		return err
	}
	for _, d := range []string{"a-web", "b-web"} {
		if _, err := benchkit.Run(env.KubectlCmd(nsRotateHand, "rollout", "status", "deployment/"+d, "--timeout", "5m")); err != nil {
			return err
		}
	}
	return nil
}
