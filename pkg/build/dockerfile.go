package build

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LabelPodSecurity is the namespace label Pod Security admission enforces.
const LabelPodSecurity = "pod-security.kubernetes.io/enforce"

// buildkitHome is the home of BuildKit's user in its image.
const buildkitHome = "/home/user"

// dockerfileContainer turns the build container into a rootless BuildKit
// build: the BuildKit image runs the agent as an unprivileged user, which
// starts buildkitd in a user namespace (rootlesskit) and runs buildctl.
//
// What it needs beyond the default (docs/builders.md): seccomp and AppArmor
// unconfined (user and mount namespaces, mounts inside them) and
// CAP_SYS_ADMIN in the bounding set only, so the setuid newuidmap can
// write the namespace's ID map; the agent and BuildKit run as user 1000
// with no effective capability. Pod Security "privileged" allows it,
// "baseline" and "restricted" do not.
func dockerfileContainer(c *corev1.Container, o Options) {
	image := o.BuildKitImage
	if image == "" {
		image = BuildKitImage
	}
	c.Image = image
	cmd := []string{agentDir + "/tug-build", "dockerfile", "-repository", o.Repository,
		"-dockerfile", o.Dockerfile, "-app", agentDir + "/app"}
	for _, a := range o.BuildArgs {
		cmd = append(cmd, "-build-arg", a)
	}
	if o.Target != "" {
		cmd = append(cmd, "-target", o.Target)
	}
	c.Command = cmd
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "HOME", Value: buildkitHome},
		corev1.EnvVar{Name: "XDG_RUNTIME_DIR", Value: fmt.Sprintf("/run/user/%d", BuildKitUser)},
	)
	user := int64(BuildKitUser)
	yes := true
	c.SecurityContext = &corev1.SecurityContext{
		RunAsUser:      &user,
		RunAsGroup:     &user,
		RunAsNonRoot:   &yes,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
		AppArmorProfile: &corev1.AppArmorProfile{
			Type: corev1.AppArmorProfileTypeUnconfined,
		},
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}},
	}
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
