package imagebuild

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/imagebuild/protocol"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
	"tug.dev/tug/pkg/text"
)

// PlatformAPIs are the Cloud Native Buildpacks Platform API versions tug
// speaks to a builder's lifecycle, oldest first: 0.13 is the first with
// -insecure-registry (plain HTTP to a local registry). Tested: 0.15 with
// lifecycle v0.21.0 (docs/builders.md).
var PlatformAPIs = []string{"0.13", "0.14", "0.15"}

// CNB is what a Cloud Native Buildpacks builder tells a platform (its
// config's io.buildpacks.builder.metadata label and environment).
type CNB struct {
	protocol.Builder
	// PlatformAPI is the version the build speaks: the newest both sides
	// support (Negotiate).
	PlatformAPI string `json:"-"`
}

const (
	inspectPrefix   = "TUG-BUILD-INSPECT "
	inspectTimeout  = 2 * time.Minute
	cnbAppDir       = "/workspace"
	cnbLayersDir    = "/layers"
	cnbPlatformDir  = "/platform"
	inspectUser     = 65532
	cacheTag        = "cache"
	inspectLogLimit = 64 << 10
)

var cnbVolume = resource.MustParse("4Gi")

func toInspected(image string, c *CNB) *app.InspectedBuilder {
	b := &app.InspectedBuilder{Image: image}
	if c != nil {
		b.Builder = c.Builder
	}
	return b.Clone()
}

func fromInspected(b *app.InspectedBuilder) *CNB {
	if !b.CNB {
		return nil
	}
	return &CNB{Builder: b.Clone().Builder}
}

// Negotiate picks the newest Platform API that the lifecycle and tug both
// speak; none is a usage error naming both sides' versions.
func (c *CNB) Negotiate() error {
	for i := len(PlatformAPIs) - 1; i >= 0; i-- {
		if slices.Contains(c.PlatformAPIs, PlatformAPIs[i]) {
			c.PlatformAPI = PlatformAPIs[i]
			return nil
		}
	}
	return inputerr.Errorf("the builder's lifecycle %s speaks Platform API %s; tug speaks %s: use a builder with a newer lifecycle",
		c.Lifecycle, strings.Join(c.PlatformAPIs, ", "), strings.Join(PlatformAPIs, ", "))
}

// CheckBuildpacks says, as a usage error, which of want (ID[@VERSION])
// the builder lacks.
func (c *CNB) CheckBuildpacks(want []string) error {
	for _, w := range want {
		id, version, _ := strings.Cut(w, "@")
		found := false
		for _, have := range c.Buildpacks {
			hid, hv, _ := strings.Cut(have, "@")
			if hid == id && (version == "" || version == hv) {
				found = true
			}
		}
		if !found {
			return inputerr.Errorf("--buildpack %s: the builder has no such buildpack (it has %s)", w, strings.Join(c.Buildpacks, ", "))
		}
	}
	return nil
}

// ValidateBuildpack checks a --buildpack value: ID[@VERSION].
func ValidateBuildpack(s string) error {
	id, version, hasVersion := strings.Cut(s, "@")
	if id == "" || strings.ContainsAny(id, " \t\n=\"\\") || strings.HasPrefix(id, "/") || strings.Contains(id, "..") ||
		hasVersion && (version == "" || strings.ContainsAny(version, " \t\n@/\"\\")) {
		return inputerr.Errorf("invalid --buildpack %q: want ID[@VERSION], an ID the builder has (e.g. heroku/nodejs)", s)
	}
	return nil
}

// ValidateBuildEnv checks a --build-env value: K=V, K a name a file can have.
func ValidateBuildEnv(s string) error {
	k, _, ok := strings.Cut(s, "=")
	if !ok || k == "" || strings.ContainsAny(k, "/\x00 \t\n") || k == "." || k == ".." {
		return inputerr.Errorf("invalid --build-env %q: want K=V", s)
	}
	return nil
}

// Inspect reads the builder's config from its registry in a short pod of
// the agent image (the cluster's network and the app's registry
// credentials, which tug's own machine may not have): nil for a builder
// that is not a CNB builder.
func Inspect(ctx context.Context, d Deps, o Options) (*CNB, error) {
	b := &builder{d: d, o: o, name: PodName(o.App)}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	defer b.cleanup(ctx)
	d.Progress.Update(fmt.Sprintf("reading the builder %s", o.Builder))
	if err := b.createPod(ctx, InspectPod(o, b.name)); err != nil {
		return nil, err
	}
	p, err := session.WatchPod(ctx, d.Client, o.Namespace, b.name, time.Second, func(p *corev1.Pod) (bool, error) {
		if terminated(p) != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return true, nil
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "InvalidImageName") {
				return true, &Error{Stage: "start", Message: fmt.Sprintf("pod %s cannot pull the build agent %s: %s", b.name, cs.Image, text.OneLine(w.Message))}
			}
		}
		return false, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, &Error{Stage: "start", Message: fmt.Sprintf("reading the builder %s did not finish within %s", o.Builder, inspectTimeout)}
		}
		return nil, err
	}
	limit := int64(inspectLogLimit)
	raw, err := d.Client.CoreV1().Pods(o.Namespace).GetLogs(b.name, &corev1.PodLogOptions{Container: "build", LimitBytes: &limit}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the log of pod %s: %w", b.name, kube.TranslateError(err))
	}
	return parseInspect(string(raw), o.Builder, podMessage(p))
}

func parseInspect(log, builder, state string) (*CNB, error) {
	for _, l := range strings.Split(log, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), inspectPrefix)
		if !ok {
			continue
		}
		var r protocol.Builder
		if err := json.Unmarshal([]byte(rest), &r); err != nil {
			return nil, fmt.Errorf("the build agent's answer about %s: %w", builder, err)
		}
		if r.Error != "" {
			return nil, &UnreadableError{Builder: builder, Reason: r.Error}
		}
		if !r.CNB {
			return nil, nil
		}
		if r.UID == 0 {
			return nil, &Error{Stage: "start", Message: fmt.Sprintf("the CNB builder %s runs its buildpacks as root (CNB_USER_ID=0); tug runs builds as an ordinary user", builder)}
		}
		return &CNB{Builder: r}, nil
	}
	// an agent older than inspect prints its usage: it builds with tug's
	// own contract, as before
	if strings.Contains(log, "usage: tug-build") {
		return nil, nil
	}
	return nil, &Error{Stage: "agent", Message: fmt.Sprintf("reading the builder %s: the build agent gave no answer (%s)", builder, state)}
}

// UnreadableError is a builder whose config the agent could not read from
// a registry (an image only the nodes have, say): it can still be a
// builder of tug's own contract.
type UnreadableError struct {
	Builder, Reason string
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("cannot read the builder %s's config: %s", e.Builder, e.Reason)
}

// restricted is a container security context that Pod Security's
// "restricted" level admits.
func restricted() *corev1.SecurityContext {
	no := false
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func podSecurity(uid, gid int) *corev1.PodSecurityContext {
	u, g, yes := int64(uid), int64(gid), true
	return &corev1.PodSecurityContext{
		RunAsUser: &u, RunAsGroup: &g, RunAsNonRoot: &yes,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// InspectPod is the pod that reads the builder's config: the agent image
// alone, as an ordinary user with no privilege.
func InspectPod(o Options, name string) *corev1.Pod {
	pod := Pod(Options{App: o.App, Namespace: o.Namespace, Pool: o.Pool, PullSecret: o.PullSecret, Builder: o.Builder, Repository: o.Repository, AgentImage: o.AgentImage}, name)
	secs := int64(inspectTimeout.Seconds())
	pod.Spec.ActiveDeadlineSeconds = &secs
	c := &pod.Spec.Containers[0]
	c.Image = pod.Spec.InitContainers[0].Image
	c.Command = []string{"/tug-build", "inspect", "-image", o.Builder}
	c.Stdin, c.StdinOnce = false, false
	var mounts []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if m.Name == "tug-auth" {
			mounts = append(mounts, m)
		}
	}
	c.VolumeMounts = mounts
	c.Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: clientCPU, corev1.ResourceMemory: clientMemory, corev1.ResourceEphemeralStorage: tlsVolume},
		Requests: corev1.ResourceList{corev1.ResourceCPU: clientCPUReq, corev1.ResourceMemory: clientMemReq},
	}
	c.SecurityContext = restricted()
	pod.Spec.InitContainers = nil
	pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tug-agent" })
	pod.Spec.SecurityContext = podSecurity(inspectUser, inspectUser)
	return pod
}

// cnbPod turns the build pod into a run of the builder's own lifecycle:
// the agent (copied in by the init container) unpacks the source into
// /workspace, writes the build environment into /platform/env and runs
// /cnb/lifecycle/creator, all as the builder's CNB_USER_ID/CNB_GROUP_ID
// with no privilege, so Pod Security "restricted" admits the pod.
func cnbPod(p *corev1.Pod, build *corev1.Container, o Options) {
	c := o.CNB
	run := o.RunImage
	if run == "" {
		run = c.RunImage
	}
	build.Command = []string{agentDir + "/tug-build", "cnb", "-repository", o.Repository, "-run-image", run,
		"-cache-image", o.Repository + ":" + cacheTag, "-platform-api", c.PlatformAPI,
		"-app", cnbAppDir, "-layers", cnbLayersDir, "-platform", cnbPlatformDir, "-work", agentDir}
	var insecure []string
	for _, img := range []string{o.Repository, run} {
		host, _, _ := strings.Cut(img, "/")
		if plainHTTP(host) && !slices.Contains(insecure, host) {
			insecure = append(insecure, host)
			build.Command = append(build.Command, "-insecure-registry", host)
		}
	}
	dir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &cnbVolume}}}
	}
	p.Spec.Volumes = append(p.Spec.Volumes, dir("cnb-workspace"), dir("cnb-layers"), dir("cnb-platform"))
	build.VolumeMounts = append(build.VolumeMounts,
		corev1.VolumeMount{Name: "cnb-workspace", MountPath: cnbAppDir},
		corev1.VolumeMount{Name: "cnb-layers", MountPath: cnbLayersDir},
		corev1.VolumeMount{Name: "cnb-platform", MountPath: cnbPlatformDir})
	build.SecurityContext = restricted()
	p.Spec.InitContainers[0].SecurityContext = restricted()
	p.Spec.SecurityContext = podSecurity(c.UID, c.GID)
}

// createPod makes pod; the request is not cancelled by Ctrl-C (an answer
// lost half-way would leave a pod that cleanup does not know was made).
func (b *builder) createPod(parent context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), createTimeout)
	defer cancel()
	b.sweep(ctx)
	b.created = true // deleting a pod that was never made is harmless
	if _, err := b.d.Client.CoreV1().Pods(b.o.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
		b.created = false
		if msg, ok := podSecurityRefusal(err); ok {
			return &Error{Stage: "start", Message: fmt.Sprintf("the namespace %s refuses the build pod: %s; %s", b.o.Namespace, msg, podSecurityHint(b.o))}
		}
		return fmt.Errorf("creating the build pod: %w", kube.TranslateError(err))
	}
	return parent.Err()
}

// leftoverGrace is how long a finished build pod is left to the tug that
// made it (reading its log, its result) before another build of the app
// may delete it.
const leftoverGrace = 30 * time.Second

// Leftover says whether build pod p is one no tug will use again: it
// ended at least leftoverGrace before now (its containers' end, else its
// deadline). A tug killed outright (kill -9) cannot delete its pods, and
// nothing in the cluster deletes a finished bare pod; the next build of
// the app does (sweep).
func Leftover(p *corev1.Pod, now time.Time) bool {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return false
	}
	var end time.Time
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(end) {
			end = t.FinishedAt.Time
		}
	}
	if end.IsZero() {
		end = p.CreationTimestamp.Time
		if d := p.Spec.ActiveDeadlineSeconds; d != nil {
			end = end.Add(time.Duration(*d) * time.Second)
		}
	}
	return now.Sub(end) >= leftoverGrace
}

// sweep deletes the app's leftover build pods (Leftover), best effort:
// a build goes on whatever it finds.
func (b *builder) sweep(ctx context.Context) {
	sel := labels.SelectorFromSet(labels.Set{kube.LabelApp: b.o.App, kube.LabelKind: KindBuild}).String()
	l, err := b.d.Client.CoreV1().Pods(b.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return
	}
	zero := int64(0)
	for i := range l.Items {
		if p := &l.Items[i]; p.DeletionTimestamp == nil && Leftover(p, time.Now()) {
			_ = b.d.Client.CoreV1().Pods(b.o.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
		}
	}
}
