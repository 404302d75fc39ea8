package render

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

func renderFixture() (*app.App, *app.Release, app.ConfigMap) {
	a := &app.App{Name: "shop", Namespace: "dev", Processes: map[string]app.Process{"web": {Replicas: 3}, "worker": {Replicas: 2}}}
	r := &app.Release{App: "shop", Version: 7, Image: "registry.example/shop:7",
		Processes: map[string]string{"web": "./server --port 8080", "worker": "bundle exec sidekiq", "clock": ""}}
	cfg := app.ConfigMap{"DATABASE_URL": "postgres://u:hunter2-db-pass@db/shop", "API_TOKEN": "tok-5ecret-value"}
	return a, r, cfg
}

func byName(objs Objects) map[string]*appsv1.Deployment {
	m := map[string]*appsv1.Deployment{}
	for _, d := range objs.Deployments {
		m[d.Name] = d
	}
	return m
}

func TestRenderDeployments(t *testing.T) {
	a, r, cfg := renderFixture()
	objs := Release(a, r, cfg)

	var names []string
	for _, d := range objs.Deployments {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"shop-web", "shop-clock", "shop-worker"}) {
		t.Fatalf("deployments = %v, want web first then by name", names)
	}
	for _, d := range objs.Deployments {
		proc := strings.TrimPrefix(d.Name, "shop-")
		t.Run(proc, func(t *testing.T) {
			if d.Kind != "Deployment" || d.APIVersion != "apps/v1" || d.Namespace != "dev" {
				t.Errorf("type/namespace = %s %s %s", d.APIVersion, d.Kind, d.Namespace)
			}
			wantLabels := map[string]string{kube.LabelManagedBy: "tug", kube.LabelName: "shop", kube.LabelApp: "shop", kube.LabelProcess: proc}
			if !maps.Equal(d.Labels, wantLabels) {
				t.Errorf("labels = %v, want %v (no release label on the Deployment)", d.Labels, wantLabels)
			}
			wantSel := map[string]string{kube.LabelManagedBy: "tug", kube.LabelApp: "shop", kube.LabelProcess: proc}
			if !maps.Equal(d.Spec.Selector.MatchLabels, wantSel) {
				t.Errorf("selector = %v, want %v (never the release: selectors are immutable)", d.Spec.Selector.MatchLabels, wantSel)
			}
			pl := d.Spec.Template.Labels
			if pl[kube.LabelRelease] != "7" {
				t.Errorf("pod template release label = %q, want 7", pl[kube.LabelRelease])
			}
			for k, v := range wantSel {
				if pl[k] != v {
					t.Errorf("pod template label %s = %q; the selector must match the template", k, pl[k])
				}
			}
			spec := d.Spec.Template.Spec
			if len(spec.Containers) != 1 {
				t.Fatalf("%d containers", len(spec.Containers))
			}
			c := spec.Containers[0]
			if c.Name != proc || c.Image != "registry.example/shop:7" {
				t.Errorf("container %s image %s", c.Name, c.Image)
			}
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "tug-release-shop-v7" {
				t.Errorf("envFrom = %+v, want the release secret tug-release-shop-v7", c.EnvFrom)
			}
			if c.EnvFrom[0].SecretRef.Optional != nil && *c.EnvFrom[0].SecretRef.Optional {
				t.Error("the release secret is optional; a unit must not start without its config")
			}
			if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
				t.Error("service links are not disabled")
			}
			if spec.NodeSelector != nil {
				t.Errorf("nodeSelector %v without a pool", spec.NodeSelector)
			}
			if d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
				t.Errorf("strategy = %+v, want rolling with maxUnavailable 0", d.Spec.Strategy)
			}
		})
	}

	m := byName(objs)
	for name, want := range map[string]int32{"shop-web": 3, "shop-worker": 2, "shop-clock": 1} {
		if got := *m[name].Spec.Replicas; got != want {
			t.Errorf("%s replicas = %d, want %d", name, got, want)
		}
	}
}

func TestRenderHasNoConfigValues(t *testing.T) {
	a, r, cfg := renderFixture()
	cfg["PORT"] = "9999-not-a-port"
	objs := Release(a, r, cfg)
	b, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"hunter2-db-pass", "tok-5ecret-value", "9999-not-a-port"} {
		if strings.Contains(string(b), v) {
			t.Errorf("rendered objects contain the config value %q", v)
		}
	}
}

func containerOf(t *testing.T, objs Objects, name string) corev1.Container {
	t.Helper()
	d := byName(objs)[name]
	if d == nil {
		t.Fatalf("no deployment %s", name)
	}
	return d.Spec.Template.Spec.Containers[0]
}

func TestRenderWebPort(t *testing.T) {
	tests := []struct {
		name     string
		cfg      app.ConfigMap
		wantEnv  []corev1.EnvVar
		wantPort int32
	}{
		{"default", app.ConfigMap{}, []corev1.EnvVar{{Name: "PORT", Value: "8080"}}, 8080},
		{"nil config", nil, []corev1.EnvVar{{Name: "PORT", Value: "8080"}}, 8080},
		{"config sets PORT", app.ConfigMap{"PORT": "5000"}, []corev1.EnvVar{{Name: "PORT", Value: "5000"}}, 5000},
		// An unusable PORT is overridden by the default, explicitly, so the
		// process listens where it is probed.
		{"config sets a bad PORT", app.ConfigMap{"PORT": "http"}, []corev1.EnvVar{{Name: "PORT", Value: "8080"}}, 8080},
		{"config sets PORT out of range", app.ConfigMap{"PORT": "70000"}, []corev1.EnvVar{{Name: "PORT", Value: "8080"}}, 8080},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r, _ := renderFixture()
			a := &app.App{Name: "shop", Namespace: "dev"}
			objs := Release(a, r, tt.cfg)
			web := containerOf(t, objs, "shop-web")
			platform := func(proc string) []corev1.EnvVar {
				return []corev1.EnvVar{{Name: "TUG_APP", Value: "shop"}, {Name: "TUG_PROCESS", Value: proc}, {Name: "TUG_RELEASE", Value: strconv.Itoa(r.Version)}}
			}
			if !slices.Equal(web.Env, append(platform("web"), tt.wantEnv...)) {
				t.Errorf("web env = %+v, want %+v", web.Env, tt.wantEnv)
			}
			if len(web.Ports) != 1 || web.Ports[0].ContainerPort != tt.wantPort || web.Ports[0].Name != "http" {
				t.Errorf("web ports = %+v, want http %d", web.Ports, tt.wantPort)
			}
			p := web.ReadinessProbe
			if p == nil || p.TCPSocket == nil || p.TCPSocket.Port.String() != "http" {
				t.Fatalf("web readiness probe = %+v, want TCP on the http port", p)
			}
			for _, other := range []string{"worker", "clock"} {
				c := containerOf(t, objs, "shop-"+other)
				if !slices.Equal(c.Env, platform(other)) || len(c.Ports) != 0 || c.ReadinessProbe != nil {
					t.Errorf("%s has env %v, ports %v, probe %v; only web gets PORT, ports and a probe, every process the platform's variables", other, c.Env, c.Ports, c.ReadinessProbe)
				}
			}
		})
	}
}

func TestRenderService(t *testing.T) {
	a, r, cfg := renderFixture()
	svc := Release(a, r, cfg).Service
	if svc == nil {
		t.Fatal("no Service for a release with a web process")
	}
	if svc.Name != "shop" || svc.Namespace != "dev" || svc.Kind != "Service" || svc.APIVersion != "v1" {
		t.Errorf("service = %s/%s %s %s", svc.Namespace, svc.Name, svc.APIVersion, svc.Kind)
	}
	wantSel := map[string]string{kube.LabelManagedBy: "tug", kube.LabelApp: "shop", kube.LabelProcess: "web"}
	if !maps.Equal(svc.Spec.Selector, wantSel) {
		t.Errorf("selector = %v, want %v", svc.Spec.Selector, wantSel)
	}
	if _, ok := svc.Spec.Selector[kube.LabelRelease]; ok {
		t.Error("service selects one release; traffic would drop during a rollout")
	}
	if svc.Labels[kube.LabelApp] != "shop" || svc.Labels[kube.LabelManagedBy] != "tug" {
		t.Errorf("labels = %v", svc.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("ports = %+v", svc.Spec.Ports)
	}

	r.Processes = map[string]string{"worker": "./work"}
	if objs := Release(a, r, cfg); objs.Service != nil || len(objs.Deployments) != 1 {
		t.Errorf("without web: service %v, %d deployments", objs.Service, len(objs.Deployments))
	}
}

func TestRenderPoolAndTags(t *testing.T) {
	a, r, cfg := renderFixture()
	// Placement travels with the release (so a rollback restores it), not
	// with the app record.
	a.Pool = "app-record-pool"
	r.Pool = "gpu"
	r.Tags = map[string]string{"disk": "ssd"}
	for _, d := range Release(a, r, cfg).Deployments {
		want := map[string]string{kube.LabelPool: "gpu", "disk": "ssd"}
		if ns := d.Spec.Template.Spec.NodeSelector; !maps.Equal(ns, want) {
			t.Errorf("%s nodeSelector = %v, want %v", d.Name, ns, want)
		}
	}
}

func TestRenderFormation(t *testing.T) {
	a, r, cfg := renderFixture()
	a.Processes = map[string]app.Process{
		"web":    {Replicas: 3, Autoscale: &app.Autoscale{Min: 2, Max: 6, CPUPercent: 70}},
		"worker": {Replicas: 4, Stopped: true},
		"clock":  {Replicas: 1, RestartedAt: "2025-03-01T12:00:00Z"},
	}
	objs := Release(a, r, cfg)
	m := byName(objs)
	if m["shop-web"].Spec.Replicas != nil {
		t.Errorf("autoscaled web has replicas %d; the autoscaler owns the count", *m["shop-web"].Spec.Replicas)
	}
	if got := *m["shop-worker"].Spec.Replicas; got != 0 {
		t.Errorf("stopped worker replicas = %d, want 0", got)
	}
	if got := m["shop-clock"].Spec.Template.Annotations["tug.dev/restarted-at"]; got != "2025-03-01T12:00:00Z" {
		t.Errorf("clock restarted-at annotation = %q", got)
	}
	if ann := m["shop-web"].Spec.Template.Annotations; ann != nil {
		t.Errorf("web annotations = %v, want none", ann)
	}
	if len(objs.Autoscalers) != 1 {
		t.Fatalf("%d autoscalers, want 1", len(objs.Autoscalers))
	}
	h := objs.Autoscalers[0]
	if h.Name != "shop-web" || h.Namespace != "dev" || h.Spec.ScaleTargetRef.Name != "shop-web" || h.Spec.ScaleTargetRef.Kind != "Deployment" ||
		h.Spec.MinReplicas == nil || *h.Spec.MinReplicas != 2 || h.Spec.MaxReplicas != 6 {
		t.Errorf("autoscaler = %+v", h)
	}
	if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 70 {
		t.Errorf("autoscaler metrics = %+v", h.Spec.Metrics)
	}
	if h.Labels[kube.LabelApp] != "shop" || h.Labels[kube.LabelManagedBy] != "tug" {
		t.Errorf("autoscaler labels = %v", h.Labels)
	}
}

func TestRenderLimitsAndHealthchecks(t *testing.T) {
	a, r, cfg := renderFixture()
	r.Limits = map[string]app.Limits{"worker": {CPU: "500m", Memory: "256Mi", MemoryRequest: "128Mi"}}
	r.Healthchecks = map[string]app.Healthcheck{
		"web":    {Readiness: "http:8080/healthz", Liveness: "tcp:8080", Period: 5, FailureThreshold: 4},
		"worker": {Liveness: "exec:./check --quick"},
	}
	objs := Release(a, r, cfg)
	w := containerOf(t, objs, "shop-worker")
	if w.Resources.Limits.Cpu().String() != "500m" || w.Resources.Limits.Memory().String() != "256Mi" ||
		w.Resources.Requests.Memory().String() != "128Mi" || !w.Resources.Requests.Cpu().IsZero() {
		t.Errorf("worker resources = %+v", w.Resources)
	}
	if p := w.LivenessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, []string{"./check", "--quick"}) {
		t.Errorf("worker liveness = %+v", p)
	}
	if w.ReadinessProbe != nil {
		t.Errorf("worker readiness = %+v, want none", w.ReadinessProbe)
	}
	web := containerOf(t, objs, "shop-web")
	if p := web.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.IntValue() != 8080 || p.PeriodSeconds != 5 || p.FailureThreshold != 4 {
		t.Errorf("web readiness = %+v, want the configured HTTP check instead of the default", p)
	}
	if p := web.LivenessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port.IntValue() != 8080 {
		t.Errorf("web liveness = %+v", p)
	}
	if clock := containerOf(t, objs, "shop-clock"); len(clock.Resources.Limits) != 0 || clock.LivenessProbe != nil {
		t.Errorf("clock got settings it does not have: %+v", clock)
	}
}

func TestRenderIsPure(t *testing.T) {
	a, r, cfg := renderFixture()
	one, _ := json.Marshal(Release(a, r, cfg))
	two, _ := json.Marshal(Release(a, r, cfg))
	if string(one) != string(two) {
		t.Error("Release gave different objects for the same inputs")
	}
	if len(cfg) != 2 || len(r.Processes) != 3 || len(a.Processes) != 2 {
		t.Error("Release changed its inputs")
	}
}

func TestRenderCommands(t *testing.T) {
	a, r, cfg := renderFixture()
	objs := Release(a, r, cfg)
	web := containerOf(t, objs, "shop-web")
	if !slices.Equal(web.Command, []string{"./server", "--port", "8080"}) || web.Args != nil {
		t.Errorf("web command = %q args %q", web.Command, web.Args)
	}
	if clock := containerOf(t, objs, "shop-clock"); clock.Command != nil || clock.Args != nil {
		t.Errorf("an empty command must run the image's own: command %q args %q", clock.Command, clock.Args)
	}
}

func TestCommandLine(t *testing.T) {
	sh := func(line string) []string { return []string{"/bin/sh", "-c", "exec " + line} }
	tests := []struct {
		line string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"./server", []string{"./server"}},
		{"  bundle   exec\tpuma  ", []string{"bundle", "exec", "puma"}},
		{"node server.js --max-old-space-size=512", []string{"node", "server.js", "--max-old-space-size=512"}},
		{`echo "hello world"`, []string{"echo", "hello world"}},
		{`echo 'it is' "a test"`, []string{"echo", "it is", "a test"}},
		{`a""b`, []string{"ab"}},
		{`run ""`, []string{"run", ""}},
		{`x 'single $HOME stays'`, []string{"x", "single $HOME stays"}},
		{`x "a|b;c&d"`, []string{"x", "a|b;c&d"}},
		{"puma -p $PORT", sh("puma -p $PORT")},
		{"puma -p ${PORT}", sh("puma -p ${PORT}")},
		{`echo "$HOME"`, sh(`echo "$HOME"`)},
		{"echo `date`", sh("echo `date`")},
		{`echo "a\"b"`, sh(`echo "a\"b"`)},
		{`a\ b`, sh(`a\ b`)},
		{"a | b", sh("a | b")},
		{"a && b", sh("a && b")},
		{"a; b", sh("a; b")},
		{"a > log", sh("a > log")},
		{"a < in", sh("a < in")},
		{"a 2>&1", sh("a 2>&1")},
		{"ls *.txt", sh("ls *.txt")},
		{"ls file?", sh("ls file?")},
		{"ls [ab]", sh("ls [ab]")},
		{"echo {a,b}", sh("echo {a,b}")},
		{"cd ~", sh("cd ~")},
		{"(a)", sh("(a)")},
		{"a # comment", sh("a # comment")},
		{"a !", sh("a !")},
		{"a\nb", sh("a\nb")},
		{`echo "unterminated`, sh(`echo "unterminated`)},
		{`echo 'unterminated`, sh(`echo 'unterminated`)},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			cmd, args := CommandLine(tt.line)
			if !slices.Equal(cmd, tt.want) {
				t.Errorf("CommandLine(%q) command = %q, want %q", tt.line, cmd, tt.want)
			}
			if args != nil {
				t.Errorf("CommandLine(%q) args = %q, want none", tt.line, args)
			}
		})
	}
}

// A leading VAR=value assignment (common in Procfiles:
// "web: RAILS_ENV=production bundle exec puma") only works under a shell;
// exec'd directly, the runtime looks for a binary named "RAILS_ENV=production".
func TestCommandLineEnvAssignmentNeedsShell(t *testing.T) {
	line := "RAILS_ENV=production bundle exec puma"
	cmd, _ := CommandLine(line)
	want := []string{"/bin/sh", "-c", "exec " + line}
	if !slices.Equal(cmd, want) {
		t.Fatalf("splitWords treats a leading VAR=value assignment as a plain word: CommandLine(%q) = %q, want %q (the container would fail to start: no such executable)", line, cmd, want)
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		line string
		want []string
		ok   bool
	}{
		{"a b c", []string{"a", "b", "c"}, true},
		{"'a b' c", []string{"a b", "c"}, true},
		{`"" ''`, []string{"", ""}, true},
		{"", nil, false},
		{"a $B", nil, false},
		{`"a`, nil, false},
	}
	for _, tt := range tests {
		words, ok := splitWords(tt.line)
		if ok != tt.ok || !slices.Equal(words, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q, %v", tt.line, words, ok, tt.want, tt.ok)
		}
	}
}

// Deployment names are "<app>-<process>", and both parts may contain '-', so
// two apps in one namespace can derive the same Deployment name; the second
// deploy would then apply (with force) onto the first app's Deployment.
func TestDeploymentNamesAreUniqueAcrossApps(t *testing.T) {
	if err := app.ValidateName("shop-api"); err != nil {
		t.Fatal(err)
	}
	// process names have no '-', so the last '-' of a Deployment name always
	// separates app from process
	if err := app.ValidateProcessName("api-web"); err == nil {
		t.Fatal(`process name "api-web" accepted: "shop"+"api-web" would collide with "shop-api"+"web"`)
	}
}

func TestPullPolicyFollowsKubernetes(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"shop":                               corev1.PullAlways,
		"shop:latest":                        corev1.PullAlways,
		"registry.example.com:5000/shop":     corev1.PullAlways,
		"registry.example.com:5000/shop:1.4": corev1.PullIfNotPresent,
		"localhost/tug/sample:v1":            corev1.PullIfNotPresent,
		"shop@sha256:0123":                   corev1.PullIfNotPresent,
		"shop:latest@sha256:0123":            corev1.PullIfNotPresent,
	} {
		if got := PullPolicy(image); got != want {
			t.Errorf("PullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

// Allowed sources must reach the units as the client's address: the node
// port keeps it (Local), and an ingress controller (ingress-nginx here)
// filters itself.
func TestAllowListKeepsClientAddresses(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "dev", Allow: []string{"10.0.0.0/8", "192.168.1.0/24"}, Domains: []app.Domain{{Host: "shop.example.com"}},
		Route: &app.Route{Router: "ingress-nginx"}}
	svc := service(a)
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("external traffic policy = %q, want Local", svc.Spec.ExternalTrafficPolicy)
	}
	ing := route.RenderIngresses(a, ServiceName(a.Name), processLabels(a.Name, app.WebProcess))[0]
	for _, k := range route.AllowAnnotations {
		if ing.Annotations[k] != "10.0.0.0/8,192.168.1.0/24" {
			t.Errorf("ingress annotation %s = %q", k, ing.Annotations[k])
		}
	}
	a.Allow = nil
	if p := service(a).Spec.ExternalTrafficPolicy; p != "" {
		t.Errorf("without an allow list the policy is %q, want the default", p)
	}
	if len(route.RenderIngresses(a, ServiceName(a.Name), processLabels(a.Name, app.WebProcess))[0].Annotations) != 0 {
		t.Error("without an allow list the ingress has source filters")
	}
}

// A volume bound to every process is mounted in each Deployment and in the
// jobs' CronJobs; one bound to a process only in that process's, and a
// job (no process) does not get it.
func TestRenderVolumes(t *testing.T) {
	a, r, cfg := renderFixture()
	r.Volumes = []app.VolumeBinding{
		{Volume: "data", MountPath: "/data"},
		{Volume: "cache", MountPath: "/cache", Process: "worker", ReadOnly: true},
	}
	r.Jobs = map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}}
	objs := Release(a, r, cfg)
	mounts := func(spec corev1.PodSpec) map[string]string {
		got := map[string]string{}
		for _, v := range spec.Volumes {
			got[v.Name] = v.PersistentVolumeClaim.ClaimName + " ro=" + strconv.FormatBool(v.PersistentVolumeClaim.ReadOnly)
		}
		for _, m := range spec.Containers[0].VolumeMounts {
			got[m.Name] += " at " + m.MountPath + " ro=" + strconv.FormatBool(m.ReadOnly)
		}
		return got
	}
	data := "tug-volume-data ro=false at /data ro=false"
	want := map[string]map[string]string{
		"shop-web":    {"vol-data": data},
		"shop-clock":  {"vol-data": data},
		"shop-worker": {"vol-data": data, "vol-cache": "tug-volume-cache ro=true at /cache ro=true"},
	}
	for name, w := range want {
		if got := mounts(byName(objs)[name].Spec.Template.Spec); !maps.Equal(got, w) {
			t.Errorf("%s volumes %v, want %v", name, got, w)
		}
	}
	if got := mounts(objs.CronJobs[0].Spec.JobTemplate.Spec.Template.Spec); !maps.Equal(got, map[string]string{"vol-data": data}) {
		t.Errorf("job volumes %v, want the volume bound to every process only", got)
	}
	if VolumeClaimName("data") != "tug-volume-data" {
		t.Errorf("VolumeClaimName = %q", VolumeClaimName("data"))
	}
}

// Routable off and maintenance change only the web Service's selector:
// no unit matches while unroutable, the page's units in maintenance.
func TestServiceSelectorFollowsTheRecord(t *testing.T) {
	web := map[string]string{kube.LabelManagedBy: "tug", kube.LabelApp: "shop", kube.LabelProcess: "web"}
	withUnroutable := maps.Clone(web)
	withUnroutable[labelUnroutable] = "true"
	page := map[string]string{kube.LabelManagedBy: "tug", kube.LabelApp: "shop", kube.LabelKind: KindMaintenance}
	for _, tt := range []struct {
		name string
		a    app.App
		want map[string]string
	}{
		{"routable", app.App{Name: "shop"}, web},
		{"unroutable", app.App{Name: "shop", Unroutable: true}, withUnroutable},
		{"maintenance", app.App{Name: "shop", Maintenance: true}, page},
		{"unroutable in maintenance", app.App{Name: "shop", Unroutable: true, Maintenance: true}, withUnroutable},
	} {
		if got := service(&tt.a).Spec.Selector; !maps.Equal(got, tt.want) {
			t.Errorf("%s: selector %v, want %v", tt.name, got, tt.want)
		}
	}
	a := &app.App{Name: "shop", Maintenance: true}
	m := Maintenance(a)
	if m == nil || m.Name != "shop-maintenance" || m.Spec.Template.Spec.Containers[0].Image != MaintenanceImage {
		t.Fatalf("maintenance page %+v", m)
	}
	for k, v := range page {
		if m.Spec.Template.Labels[k] != v {
			t.Errorf("the page's units lack the Service's %s=%s", k, v)
		}
	}
	a.MaintenanceImage = "mirror.example/maintenance:v1"
	if got := Maintenance(a).Spec.Template.Spec.Containers[0].Image; got != a.MaintenanceImage {
		t.Errorf("page image %q, want the one recorded with the app", got)
	}
	if Maintenance(&app.App{Name: "shop"}) != nil {
		t.Error("a maintenance page without maintenance")
	}
}
