package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// redisPlan is a plan that is only data: tug knows nothing of Redis. The
// test publishes it in the cluster like an admin.
const redisPlan = `name: PLAN
description: Redis 7 from Debian's redis-server, one unit, no volume
type: redis
provider: e2e
envPrefix: REDIS
versions: ["7"]
images: {"7": "IMAGE"}
port: 6379
container: redis
credentials: {generate: [password]}
binding:
  host: "{{.Host}}"
  port: "{{.Port}}"
  password: "{{.Credentials.password}}"
  uri: "redis://:{{.Credentials.password}}@{{.Host}}:{{.Port}}"
connect: ["sh", "-c", "exec redis-cli -a \"$REDIS_PASSWORD\" --no-auth-warning"]
objects: |
  apiVersion: v1
  kind: Service
  metadata: {name: "{{.Object}}"}
  spec:
    selector: {tug.dev/service: "{{.Name}}"}
    ports: [{name: redis, port: {{.Port}}, targetPort: {{.Port}}}]
  ---
  apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: "{{.Object}}"}
  spec:
    serviceName: "{{.Object}}"
    replicas: 1
    selector: {matchLabels: {tug.dev/service: "{{.Name}}"}}
    template:
      metadata: {labels: {tug.dev/service: "{{.Name}}"}}
      spec:
        securityContext: {runAsNonRoot: true, runAsUser: 999}
        containers:
        - name: redis
          image: "{{.Image}}"
          args: ["--requirepass", "$(REDIS_PASSWORD)", "--port", "{{.Port}}"]
          env:
          - name: REDIS_PASSWORD
            valueFrom: {secretKeyRef: {name: "{{.CredentialsSecret}}", key: password}}
          ports: [{containerPort: {{.Port}}}]
          readinessProbe:
            tcpSocket: {port: {{.Port}}}
            periodSeconds: 2
          resources: {limits: {memory: 128Mi}}
`

// TestServicePlanPublishedAsData: a Redis plan published by an admin
// ('cluster plans set -f') is listed by 'service plans', makes a service
// that accepts connections with its password, binds as REDIS_URL, and the
// service outlives the plan's removal from the cluster.
func TestServicePlanPublishedAsData(t *testing.T) {
	h := New(t)
	imgs := serviceImages(t)
	plan := "redis-" + h.NS[len(h.NS)-6:]
	file := filepath.Join(t.TempDir(), "plan.yaml")
	writeFiles(t, filepath.Dir(file), map[string]string{"plan.yaml": strings.NewReplacer("PLAN", plan, "IMAGE", imgs["redis"]).Replace(redisPlan)})
	h.mustTug("cluster", "plans", "set", "-f", file)
	t.Cleanup(func() { h.Tug("cluster", "plans", "remove", plan) })

	var plans []struct{ Name, Source string }
	if err := json.Unmarshal([]byte(h.mustTug("service", "plans", "-o", "json").Stdout), &plans); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range plans {
		found = found || (p.Name == plan && p.Source == "cluster")
	}
	if !found {
		t.Fatalf("service plans does not list %s from the cluster: %+v", plan, plans)
	}
	// as a developer: every user reads the published plans
	admin := h.Kubeconfig
	h.Kubeconfig = adminRoleKubeconfig(t, h)
	h.mustTug("service", "create", "cache", "--plan", plan)
	creds := h.credentials("cache")
	if creds["type"] != "redis" || !strings.HasPrefix(creds["uri"], "redis://:") {
		t.Errorf("binding of the redis service: keys %v", keysOf(creds))
	}
	out, err := exec.Command(kubectlPath(t), "--kubeconfig", env.kubeconfig, "-n", h.NS, "exec", "tug-service-cache-0", "--",
		"sh", "-c", `redis-cli -a "$REDIS_PASSWORD" --no-auth-warning ping`).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "PONG" {
		t.Fatalf("redis with its password: %v %s", err, out)
	}
	h.mustTug("app", "create", "cacheapp")
	h.mustTug("app", "deploy", "cacheapp", "--image", sampleV1)
	h.mustTug("service", "bind", "cacheapp", "cache")
	if env := h.webEnvNames("cacheapp"); !contains(env, "REDIS_URL") || !contains(env, "REDIS_PASSWORD") {
		t.Errorf("bound redis: variables %v", env)
	}
	// the plan leaves the cluster; the service keeps the plan it was made with
	h.Kubeconfig = admin
	h.mustTug("cluster", "plans", "remove", plan)
	if res := h.Tug("service", "create", "other", "--plan", plan); res.Code != 2 {
		t.Errorf("create from a removed plan: %s", res)
	}
	if st := h.serviceInfo("cache").Status; st != "ready" {
		t.Errorf("after its plan was removed: status %q", st)
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
