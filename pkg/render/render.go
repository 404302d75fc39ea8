// Package render makes the Kubernetes objects of an app from its record
// and a release: Deployments, the web Service, autoscalers, the traffic
// objects (Ingresses, HTTPRoutes, NetworkPolicy, maintenance page), a
// canary's, and the jobs' CronJobs, with the names and labels they carry.
// It is pure: no API calls, and the same inputs give the same objects,
// which is what makes dry-run and export honest. pkg/deploy applies what
// it renders, under the app's lock.
package render

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// DeploymentName is the Deployment of one process type of an app.
func DeploymentName(appName, process string) string { return appName + "-" + process }

// ServiceName is the web process's Service: the app's own name, so other
// pods in the namespace reach it as http://<app>.
func ServiceName(appName string) string { return appName }

// Objects are what one release of an app is made of in the cluster.
type Objects struct {
	Deployments []*appsv1.Deployment
	Service     *corev1.Service // nil when the release has no web process
	// Autoscalers are the HorizontalPodAutoscalers of autoscaled processes.
	Autoscalers []*autoscalingv2.HorizontalPodAutoscaler
	// Traffic to the web process (traffic.go); each nil when unused.
	// Ingresses: one per IngressClass the app's domains use (pkg/route).
	Ingresses     []*networkingv1.Ingress
	NetworkPolicy *networkingv1.NetworkPolicy
	Maintenance   *appsv1.Deployment
	// Routes are the HTTPRoutes through the cluster's Gateway (pkg/route).
	Routes []*unstructured.Unstructured
	// Middleware is the allow list at a Traefik router (pkg/route).
	Middleware *unstructured.Unstructured
	// Certificates are cert-manager's, of domains whose certificate comes
	// from an issuer (pkg/route).
	Certificates []*unstructured.Unstructured
	// CronJobs are the release's jobs (cronjob.go).
	CronJobs []*batchv1.CronJob
	// While a canary runs (canary.go): the Services of each side of a
	// split route, and the Deployments to keep though no release renders
	// them (the canary's units).
	TrackServices []*corev1.Service
	Keep          []string
	// Extra are objects of kinds no field above holds, listed last: a kind
	// a test adds to the table (pkg/deploy Deps.Kinds and Deps.Render).
	Extra []Object
}

// Object is one object of an app as rendered: a typed object or an
// unstructured one, with TypeMeta set. (An alias of the same interface
// as pkg/owned's, so rendering needs nothing of what applies it.)
type Object = interface {
	runtime.Object
	metav1.Object
}

// List is the objects as one list, for the loops of pkg/owned (which sort
// it by the table of kinds, pkg/deploy.Kinds): adding a kind to what an
// app renders is a field of Objects, its rendering, and a line here.
func (objs Objects) List() []Object {
	var out []Object
	for _, d := range objs.Deployments {
		out = append(out, d)
	}
	if objs.Maintenance != nil {
		out = append(out, objs.Maintenance)
	}
	if objs.Service != nil {
		out = append(out, objs.Service)
	}
	for _, s := range objs.TrackServices {
		out = append(out, s)
	}
	for _, h := range objs.Autoscalers {
		out = append(out, h)
	}
	for _, c := range objs.Certificates {
		out = append(out, c)
	}
	if objs.Middleware != nil {
		out = append(out, objs.Middleware)
	}
	for _, i := range objs.Ingresses {
		out = append(out, i)
	}
	if objs.NetworkPolicy != nil {
		out = append(out, objs.NetworkPolicy)
	}
	for _, c := range objs.CronJobs {
		out = append(out, c)
	}
	for _, r := range objs.Routes {
		out = append(out, r)
	}
	return append(out, objs.Extra...)
}

// Release builds the objects that run release r of app a. It is pure: the
// same inputs give the same objects, which is what makes dry-run and export
// honest. config is the release's environment; only its keys are read (to
// see whether it sets PORT): values reach containers through envFrom of the
// release's Secret and never appear in a spec.
func Release(a *app.App, r *app.Release, config app.ConfigMap) Objects {
	var objs Objects
	port := webPort(config)
	for _, proc := range r.ProcessNames() {
		objs.Deployments = append(objs.Deployments, deployment(a, r, proc, r.Processes[proc], port))
	}
	if _, ok := r.Processes[app.WebProcess]; ok {
		objs.Service = service(a)
		objs.Ingresses = route.RenderIngresses(a, ServiceName(a.Name), processLabels(a.Name, app.WebProcess))
		objs.Routes = route.RenderSplit(a, webBackends(a), processLabels(a.Name, app.WebProcess))
		objs.TrackServices = trackServices(a)
		objs.NetworkPolicy = networkPolicy(a)
		objs.Middleware = route.RenderAllowMiddleware(a, processLabels(a.Name, app.WebProcess))
		objs.Maintenance = Maintenance(a)
		objs.Certificates = route.RenderCertificates(a)
	}
	objs.Keep = keptDeployments(a)
	for _, proc := range r.ProcessNames() {
		if as := a.Processes[proc].Autoscale; as != nil {
			objs.Autoscalers = append(objs.Autoscalers, autoscaler(a, proc, *as))
		}
	}
	objs.CronJobs = cronJobs(a, r)
	return objs
}

// webPort is $PORT for the web process: the config's PORT when it sets a
// valid one, else app.DefaultPort.
func webPort(config app.ConfigMap) int32 {
	if p, err := strconv.Atoi(config["PORT"]); err == nil && p > 0 && p < 65536 {
		return int32(p)
	}
	return app.DefaultPort
}

func processLabels(appName, proc string) map[string]string {
	l := kube.AppLabels(appName)
	l[kube.LabelProcess] = proc
	return l
}

func deployment(a *app.App, r *app.Release, proc, command string, port int32) *appsv1.Deployment {
	selector := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelProcess: proc}
	podLabels := processLabels(a.Name, proc)
	podLabels[kube.LabelRelease] = strconv.Itoa(r.Version)

	// An autoscaled process's count belongs to its autoscaler: the
	// Deployment is applied without replicas (pkg/deploy gives it the
	// count the autoscaler chose).
	var replicas *int32
	if p, ok := a.Processes[proc]; !ok {
		replicas = new(int32(1))
	} else if p.Autoscale == nil {
		replicas = new(p.Units())
	}
	c := container(a, r, proc, command, port)
	applyHealthcheck(&c, r.Healthchecks[proc])
	spec := corev1.PodSpec{
		Containers: []corev1.Container{c},
		// Service links add a variable per Service in the namespace to
		// every container: noise that shadows the app's own config.
		EnableServiceLinks: new(bool),
	}
	if g := r.Rollout.GracePeriod; g > 0 {
		// unset: the cluster's default (30s), so a spec made before the
		// setting existed stays as it is
		spec.TerminationGracePeriodSeconds = new(g)
	}
	if a.RegistrySecret != "" {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: a.RegistrySecret}}
	}
	mountVolumes(&spec, r.Volumes, proc)
	bindServices(&spec, r.Services)
	if sel := nodeSelector(r); len(sel) > 0 {
		spec.NodeSelector = sel
	}
	var annotations map[string]string
	if at := a.Processes[proc].RestartedAt; at != "" {
		annotations = map[string]string{annotationRestartedAt: at}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: DeploymentName(a.Name, proc), Namespace: a.Namespace, Labels: processLabels(a.Name, proc)},
		Spec: appsv1.DeploymentSpec{
			Replicas:             replicas,
			Selector:             &metav1.LabelSelector{MatchLabels: selector},
			RevisionHistoryLimit: new(int32(2)),
			Strategy:             Strategy(r.Rollout),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec:       spec,
			},
		},
	}
}

// container is the process's container: the release's image and
// command, its config and platform variables, its limits and, for web,
// its port, readiness and stop delay.
func container(a *app.App, r *app.Release, proc, command string, port int32) corev1.Container {
	c := corev1.Container{
		Name:            proc,
		Image:           r.RunImage(),
		ImagePullPolicy: PullPolicy(r.RunImage()),
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: app.ReleaseSecretName(a.Name, r.Version)},
		}}},
	}
	c.Command, c.Args = CommandLine(command)
	for _, k := range []string{app.EnvApp, app.EnvProcess, app.EnvRelease} {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: app.PlatformEnv(a.Name, proc, r.Version)[k]})
	}
	c.Resources = resources(r.Limits[proc])
	if proc == app.WebProcess {
		// Always explicit, even when the config sets PORT (same value):
		// the port is part of the spec (containerPort) anyway, and an
		// export without the config must still listen where it is probed.
		c.Env = append(c.Env, corev1.EnvVar{Name: "PORT", Value: strconv.Itoa(int(port))})
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		// A web unit is ready when it accepts connections on $PORT; without
		// a probe a unit that never listens would count as ready. Every
		// second (the kubelet's shortest): a rollout waits for each new
		// unit's first passing probe, so a 2 s period added up to 2 s per
		// unit rolled one at a time (bench: deploys took ~1.7 s or ~4.4 s
		// by that luck alone). Six failures: a unit that stops answering
		// still leaves the endpoints after 6 s, as with 3 at 2 s.
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds:    app.WebProbePeriod,
			FailureThreshold: app.WebProbeFailures,
			TimeoutSeconds:   1,
		}
		// A unit being stopped (rollout, scale down, node removal) leaves
		// the Service's endpoints at the moment it gets SIGTERM, but
		// kube-proxies and ingresses take a moment to notice: keep serving
		// that long, or those requests are refused. (tsuru does the same.)
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: WebStopDelaySeconds}}}
	}
	return c
}

// Strategy is a process's rolling update: maxSurge and maxUnavailable
// are the release's settings, else tug's defaults (app.RolloutDefaults).
// A number is an int, a percentage a string, as Kubernetes reads them.
func Strategy(r app.Rollout) appsv1.DeploymentStrategy {
	eff := r.WithDefaults()
	surge, unavailable := paceValue(eff.MaxSurge), paceValue(eff.MaxUnavailable)
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
}

func paceValue(s string) intstr.IntOrString {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		return intstr.FromInt32(int32(n))
	}
	return intstr.FromString(s) // a percentage, validated when set
}

// WebStopDelaySeconds is how long a stopping web unit keeps serving after
// it leaves its Service's endpoints (a preStop sleep, run by the kubelet,
// so images need no shell).
const WebStopDelaySeconds = 5

// VolumeClaimName is the PersistentVolumeClaim behind a tug volume.
func VolumeClaimName(volume string) string { return "tug-volume-" + volume }

// mountVolumes adds the release's volume bindings that apply to proc.
func mountVolumes(spec *corev1.PodSpec, bindings []app.VolumeBinding, proc string) {
	for _, b := range bindings {
		if b.Process != "" && b.Process != proc {
			continue
		}
		name := "vol-" + b.Volume
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: VolumeClaimName(b.Volume), ReadOnly: b.ReadOnly},
		}})
		for i := range spec.Containers {
			spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: b.MountPath, ReadOnly: b.ReadOnly})
		}
	}
}

// ServiceBindingRoot is where units find their service bindings' files
// ($SERVICE_BINDING_ROOT, servicebinding.io).
const ServiceBindingRoot = "/bindings"

// ServiceBindingSecret is the Secret of a service's binding (pkg/service
// makes it).
func ServiceBindingSecret(service string) string { return "tug-service-" + service + "-binding" }

// bindServices gives every container the release's service bindings: each
// key as a variable read from the binding Secret (never a value in the
// spec), and the Secret's files under $SERVICE_BINDING_ROOT/SERVICE.
func bindServices(spec *corev1.PodSpec, bindings []app.ServiceBinding) {
	if len(bindings) == 0 {
		return
	}
	for _, b := range bindings {
		name := "svc-" + b.Service
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: ServiceBindingSecret(b.Service)},
		}})
		for i := range spec.Containers {
			c := &spec.Containers[i]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: ServiceBindingRoot + "/" + b.BindingDir(), ReadOnly: true})
			for _, k := range b.Keys {
				if v := ServiceVariable(b.Prefix, k); v != "" {
					c.Env = append(c.Env, corev1.EnvVar{Name: v, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: ServiceBindingSecret(b.Service)}, Key: k}}})
				}
			}
		}
	}
	for i := range spec.Containers {
		spec.Containers[i].Env = append(spec.Containers[i].Env, corev1.EnvVar{Name: "SERVICE_BINDING_ROOT", Value: ServiceBindingRoot})
	}
}

// BindingVariables are the variables binding b gives every container of
// the app: one per key that is not only a file, and SERVICE_BINDING_ROOT.
// A config variable of the same name would clash with one of them (which
// value a unit sees would depend on their order in its spec).
func BindingVariables(b app.ServiceBinding) []string {
	vars := []string{"SERVICE_BINDING_ROOT"}
	for _, k := range b.Keys {
		if v := ServiceVariable(b.Prefix, k); v != "" {
			vars = append(vars, v)
		}
	}
	return vars
}

// ServiceVariable is the variable a binding key reaches an app as:
// PREFIX_URL for uri, PREFIX_KEY for any other ("" for type and provider,
// which are only files).
func ServiceVariable(prefix, key string) string {
	switch key {
	case "type", "provider":
		return ""
	case "uri":
		return prefix + "_URL"
	}
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// annotationRestartedAt on a pod template rolls every unit when it changes.
const annotationRestartedAt = "tug.dev/restarted-at"

// nodeSelector places units: the pool label, plus the app's tags as node labels.
func nodeSelector(r *app.Release) map[string]string {
	sel := map[string]string{}
	for k, v := range r.Tags {
		sel[k] = v
	}
	if r.Pool != "" {
		sel[kube.LabelPool] = r.Pool
	}
	return sel
}

func resources(l app.Limits) corev1.ResourceRequirements {
	var rr corev1.ResourceRequirements
	set := func(list *corev1.ResourceList, name corev1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = resource.MustParse(v) // validated when set
	}
	set(&rr.Limits, corev1.ResourceCPU, l.CPU)
	set(&rr.Limits, corev1.ResourceMemory, l.Memory)
	set(&rr.Requests, corev1.ResourceCPU, l.CPURequest)
	set(&rr.Requests, corev1.ResourceMemory, l.MemoryRequest)
	return rr
}

// applyHealthcheck sets the process's own probes; a readiness probe
// replaces the web process's default TCP check.
func applyHealthcheck(c *corev1.Container, h app.Healthcheck) {
	probe := func(spec string) *corev1.Probe {
		if spec == "" {
			return nil
		}
		p, err := app.ParseProbe(spec)
		if err != nil {
			return nil // validated when set
		}
		out := &corev1.Probe{InitialDelaySeconds: h.InitialDelay, PeriodSeconds: h.Period, TimeoutSeconds: h.Timeout, FailureThreshold: h.FailureThreshold}
		switch p.Kind {
		case "http":
			out.HTTPGet = &corev1.HTTPGetAction{Port: intstr.FromInt32(p.Port), Path: p.Path}
		case "tcp":
			out.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(p.Port)}
		case "exec":
			cmd, args := CommandLine(p.Command)
			out.Exec = &corev1.ExecAction{Command: append(cmd, args...)}
		}
		return out
	}
	if p := probe(h.Readiness); p != nil {
		c.ReadinessProbe = p
	}
	c.LivenessProbe = probe(h.Liveness)
	c.StartupProbe = probe(h.Startup)
}

func autoscaler(a *app.App, proc string, as app.Autoscale) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: DeploymentName(a.Name, proc), Namespace: a.Namespace, Labels: processLabels(a.Name, proc)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: DeploymentName(a.Name, proc)},
			MinReplicas:    new(as.Min),
			MaxReplicas:    as.Max,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(as.CPUPercent)},
				},
			}},
		},
	}
}

// CommandLine turns a Procfile command into a container's command and args.
// Plain words are exec'd directly, so images without a shell work; a line
// that needs a shell (variables, pipes, redirections, globs, &&) runs under
// /bin/sh -c with exec, so the process still gets signals directly.
func CommandLine(line string) (command, args []string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, nil
	}
	if words, ok := splitWords(line); ok {
		return words, nil
	}
	return []string{"/bin/sh", "-c", "exec " + line}, nil
}

// splitWords splits a command line on spaces, honouring single and double
// quotes; ok is false when the line needs a real shell.
func splitWords(line string) (words []string, ok bool) {
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
			if quote == '"' && strings.ContainsRune("$`\\", r) {
				return nil, false
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("$`\\|&;<>()*?[]{}~#!\n", r):
			return nil, false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if inWord {
		words = append(words, cur.String())
	}
	// "RAILS_ENV=production bundle exec puma" sets a variable: a shell's job
	if len(words) > 0 && strings.Contains(words[0], "=") {
		return nil, false
	}
	return words, len(words) > 0
}

// PullPolicy is Kubernetes' default for an image reference: Always for
// :latest or no tag (the tag may move), IfNotPresent for any other tag or
// a digest. A deploy by tag that must see a moved tag gets it; a deploy or
// rollback by digest never pulls the same bytes again.
func PullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(name, ":")
	if i < 0 || name[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}
