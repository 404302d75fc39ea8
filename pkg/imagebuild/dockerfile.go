package imagebuild

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LabelPodSecurity is the namespace label Pod Security admission enforces.
const LabelPodSecurity = "pod-security.kubernetes.io/enforce"

// buildkitHome is the home of BuildKit's user in its image.
const buildkitHome = "/home/user"

// Where a Dockerfile build pod keeps things; each folder is mounted only
// where it is needed.
const (
	sourceDir     = "/tug-src"       // the source: the build container only
	buildkitdDir  = "/tug-buildkitd" // buildkitd's config and server certificate
	clientDir     = "/tug-client"    // the client certificate: the build container only
	buildkitdPort = 9374
)

// Resources of a Dockerfile build: buildkitd gets the build's, the
// client (the agent and buildctl, which only stream) a little.
var (
	clientCPU     = resource.MustParse("500m")
	clientMemory  = resource.MustParse("512Mi")
	clientCPUReq  = resource.MustParse("50m")
	clientMemReq  = resource.MustParse("64Mi")
	clientStorage = resource.MustParse("1Gi")
	sourceVolume  = resource.MustParse("1Gi") // over protocol.MaxUnpackedBytes
	tlsVolume     = resource.MustParse("1Mi")
)

// dockerfilePod turns the build pod into a rootless BuildKit build in two
// containers (docs/builders.md):
//
//   - buildkitd runs rootless BuildKit with no credentials, no source and
//     no agent: its RUN steps run beside it (the process sandbox is off),
//     so they see what it sees, and it holds nothing secret. It listens on
//     the pod's loopback with mutual TLS, so a RUN step that reaches the
//     port cannot talk to it.
//   - build (the client) runs the agent: it gets the job header and the
//     source on stdin, holds the push credentials (DOCKER_CONFIG) and the
//     only client certificate, and runs buildctl, which lends buildkitd the
//     credentials through its session when it pushes. It has its own PID
//     namespace, so RUN steps do not see its command lines.
//
// The init container (the agent image) also writes the certificates (the
// CA's key never leaves its memory) and buildkitd's config.
//
// What buildkitd needs beyond the default: seccomp and AppArmor
// unconfined (user and mount namespaces, mounts inside them) and
// CAP_SYS_ADMIN in the bounding set only, so the setuid newuidmap can
// write the namespace's ID map; it runs as user 1000 with no effective
// capability. Pod Security "privileged" allows it, "baseline" and
// "restricted" do not. The client and the init container run as user
// 1000 with every capability dropped.
func dockerfilePod(p *corev1.Pod, build *corev1.Container, o Options) {
	image := o.BuildKitImage
	if image == "" {
		image = BuildKitImage
	}
	user := int64(BuildKitUser)
	yes, no := true, false
	confined := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsUser: &user, RunAsGroup: &user, RunAsNonRoot: &yes, AllowPrivilegeEscalation: &no,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	memVolume := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &tlsVolume}}}
	}
	p.Spec.Volumes = append(p.Spec.Volumes,
		corev1.Volume{Name: "tug-src", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &sourceVolume}}},
		memVolume("tug-buildkitd"), memVolume("tug-client"))
	daemonMount := corev1.VolumeMount{Name: "tug-buildkitd", MountPath: buildkitdDir}
	clientMount := corev1.VolumeMount{Name: "tug-client", MountPath: clientDir}
	agentMount := corev1.VolumeMount{Name: "tug-agent", MountPath: agentDir, ReadOnly: true}

	// one init container copies the agent and writes the certificates
	setup := &p.Spec.InitContainers[0]
	setup.Command = []string{"/tug-build", "buildkit-setup", "-install", agentDir + "/tug-build", "-daemon", buildkitdDir, "-client", clientDir}
	if len(o.PlainHTTP) > 0 {
		setup.Command = append(setup.Command, "-plain-http", strings.Join(o.PlainHTTP, ","))
	}
	setup.VolumeMounts = append(setup.VolumeMounts, daemonMount, clientMount)
	setup.SecurityContext = confined()

	addr := fmt.Sprintf("tcp://127.0.0.1:%d", buildkitdPort)
	build.Image = image
	build.Command = []string{agentDir + "/tug-build", "dockerfile", "-repository", o.Repository,
		"-dockerfile", o.Dockerfile, "-app", sourceDir, "-job", "stdin", "-buildkitd", addr, "-tls-dir", clientDir}
	build.Env = append(build.Env, corev1.EnvVar{Name: "HOME", Value: "/tmp"})
	mounts := []corev1.VolumeMount{agentMount, {Name: "tug-src", MountPath: sourceDir}, {Name: "tug-client", MountPath: clientDir, ReadOnly: true}}
	for _, m := range build.VolumeMounts {
		if m.Name == "tug-auth" {
			mounts = append(mounts, m)
		}
	}
	build.VolumeMounts = mounts
	build.SecurityContext = confined()
	build.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: clientCPU, corev1.ResourceMemory: clientMemory, corev1.ResourceEphemeralStorage: clientStorage},
		Requests: corev1.ResourceList{corev1.ResourceCPU: clientCPUReq, corev1.ResourceMemory: clientMemReq, corev1.ResourceEphemeralStorage: buildStorageReq},
	}

	p.Spec.Containers = append(p.Spec.Containers, buildkitdContainer(image, addr))
}

// buildkitdContainer is the rootless buildkitd of a Dockerfile build,
// serving image's builds on addr over TLS, unconfined as dockerfilePod
// says why.
func buildkitdContainer(image, addr string) corev1.Container {
	user := int64(BuildKitUser)
	yes := true
	return corev1.Container{
		Name: "buildkitd", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"rootlesskit", "buildkitd", "--config", buildkitdDir + "/buildkitd.toml", "--addr", addr,
			"--tlscert", buildkitdDir + "/cert.pem", "--tlskey", buildkitdDir + "/key.pem", "--tlscacert", buildkitdDir + "/ca.pem",
			"--rootless", "--oci-worker-no-process-sandbox"},
		Env: []corev1.EnvVar{
			{Name: "HOME", Value: buildkitHome},
			{Name: "XDG_RUNTIME_DIR", Value: fmt.Sprintf("/run/user/%d", BuildKitUser)},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "tug-buildkitd", MountPath: buildkitdDir, ReadOnly: true}},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: buildCPU, corev1.ResourceMemory: buildMemory, corev1.ResourceEphemeralStorage: buildStorage},
			Requests: corev1.ResourceList{corev1.ResourceCPU: buildCPUReq, corev1.ResourceMemory: buildMemReq, corev1.ResourceEphemeralStorage: buildStorageReq},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:      &user,
			RunAsGroup:     &user,
			RunAsNonRoot:   &yes,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
			AppArmorProfile: &corev1.AppArmorProfile{
				Type: corev1.AppArmorProfileTypeUnconfined,
			},
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}},
		},
	}
}

// PlainHTTPRegistries are the registries a Dockerfile build speaks plain
// HTTP to: the repository's and those of the Dockerfile's FROM lines, when
// they are localhost or a private or loopback address (as the agent
// decides for builder builds).
func PlainHTTPRegistries(repository, dockerfile string) []string {
	set := map[string]bool{}
	if r, err := ParseRepository(repository); err == nil && plainHTTP(r.Registry) {
		set[r.Registry] = true
	}
	for _, l := range strings.Split(dockerfile, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		img := ""
		for _, a := range f[1:] {
			if !strings.HasPrefix(a, "--") {
				img = a
				break
			}
		}
		if host, _, ok := strings.Cut(img, "/"); ok && (strings.ContainsAny(host, ".:") || host == "localhost") && plainHTTP(host) {
			set[host] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func plainHTTP(hostport string) bool {
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return host == "localhost" || ip != nil && (ip.IsPrivate() || ip.IsLoopback())
}

// podSecurityRefusal says whether a create error is Pod Security
// admission refusing the pod, with its message.
func podSecurityRefusal(err error) (string, bool) {
	if !apierrors.IsForbidden(err) {
		return "", false
	}
	msg := err.Error()
	if !strings.Contains(msg, "PodSecurity") {
		return "", false
	}
	if _, rest, ok := strings.Cut(msg, "violates PodSecurity"); ok {
		msg = "violates PodSecurity" + rest
	}
	return msg, true
}

func podSecurityHint(o Options) string {
	if o.Dockerfile == "" {
		return "the build pod needs the namespace's Pod Security level (label " + LabelPodSecurity + ") to allow it"
	}
	return "a Dockerfile build runs rootless BuildKit, which needs unconfined seccomp and AppArmor and CAP_SYS_ADMIN in its bounding set: " +
		"set the namespace label " + LabelPodSecurity + "=privileged (kubectl label namespace " + o.Namespace + " " + LabelPodSecurity + "=privileged --overwrite), " +
		"or build with a builder (--builder) instead (docs/builders.md)"
}

// PodSecurityCheck is whether a namespace's Pod Security level allows
// Dockerfile builds (rootless BuildKit): ok, and what the label says.
type PodSecurityCheck struct {
	Namespace string
	Level     string // the label's value, "" when unset
	OK        bool
	Message   string
}

// CheckPodSecurity reads the namespace's enforce label. Only an unset
// label and "privileged" allow the rootless BuildKit pod.
func CheckPodSecurity(ctx context.Context, client kubernetes.Interface, namespace string) (*PodSecurityCheck, error) {
	ns, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	level := ns.Labels[LabelPodSecurity]
	c := &PodSecurityCheck{Namespace: namespace, Level: level}
	switch level {
	case "", "privileged":
		c.OK = true
		if level == "" {
			c.Message = fmt.Sprintf("namespace %s has no %s label: Dockerfile builds (rootless BuildKit) are allowed unless the cluster's default level forbids them", namespace, LabelPodSecurity)
		} else {
			c.Message = fmt.Sprintf("namespace %s: %s=privileged allows Dockerfile builds (rootless BuildKit)", namespace, LabelPodSecurity)
		}
	default:
		c.Message = fmt.Sprintf("namespace %s: %s=%s refuses Dockerfile builds (rootless BuildKit needs unconfined seccomp and AppArmor and CAP_SYS_ADMIN in its bounding set); set it to privileged or build with --builder", namespace, LabelPodSecurity, level)
	}
	return c, nil
}
