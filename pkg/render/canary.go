package render

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// A canary's objects (pkg/canary has its steps). Its web units are a
// Deployment of their own, APP-web-canary, whose pods carry the web
// Service's labels too: without a Gateway the Service spreads requests
// over both releases' units (a split by unit ratio). Through a Gateway
// the app's HTTPRoute sends each side its exact share instead, by two
// weighted backendRefs to two Services that select one release each
// (APP-track-stable, APP-track-canary).

// Track values (kube.LabelTrack): which side of a split an object serves.
const (
	// TrackCanary is the tug.dev/track of a canary's Deployment and units.
	TrackCanary = "canary"
	trackStable = "stable"
)

// CanaryDeploymentName is the Deployment of a canary's web units.
func CanaryDeploymentName(appName string) string {
	return DeploymentName(appName, app.WebProcess) + "-" + TrackCanary
}

// TrackServiceName is the Service of one side of a split route.
func TrackServiceName(appName, track string) string { return appName + "-track-" + track }

// splitRoute says whether the app's route splits requests by weight: a
// canary runs, the app routes through a Gateway, and its web units take
// requests (not in maintenance, routable).
func splitRoute(a *app.App) bool {
	return a.Canary.SideBySide() && a.Canary.Exact && a.Route != nil && a.Route.Gateway != "" && !a.Maintenance && !a.Unroutable
}

// Gatewayed says whether a canary of a would split exactly, by the
// router's weights.
func Gatewayed(a *app.App) bool { return a.Route != nil && a.Route.Gateway != "" }

// webBackends are the Services the app's route sends requests to: the web
// Service, or, while a canary splits them, each release's with its weight.
func webBackends(a *app.App) []route.Backend {
	if !splitRoute(a) {
		return []route.Backend{{Name: ServiceName(a.Name)}}
	}
	w := a.Canary.Weight
	stable := route.Backend{Name: TrackServiceName(a.Name, trackStable), Weight: 100 - w, Label: fmt.Sprintf("v%d", a.Release)}
	canary := route.Backend{Name: TrackServiceName(a.Name, TrackCanary), Weight: w, Label: fmt.Sprintf("v%d", a.Canary.Release)}
	// a side with no share is left out: its Service may have no units
	// yet (or none any more), which a router takes for a broken route
	switch w {
	case 0:
		return []route.Backend{stable}
	case 100:
		return []route.Backend{canary}
	}
	return []route.Backend{stable, canary}
}

// trackServices are the two Services of a split route, one per release
// (by its pods' release label); none when the route does not split.
func trackServices(a *app.App) []*corev1.Service {
	if !splitRoute(a) {
		return nil
	}
	svc := func(track string, release int) *corev1.Service {
		labels := processLabels(a.Name, app.WebProcess)
		labels[kube.LabelTrack] = track
		sel := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: a.Name, kube.LabelProcess: app.WebProcess,
			kube.LabelRelease: strconv.Itoa(release)}
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: TrackServiceName(a.Name, track), Namespace: a.Namespace, Labels: labels},
			Spec: corev1.ServiceSpec{
				Selector: sel,
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
			},
		}
	}
	return []*corev1.Service{svc(trackStable, a.Release), svc(TrackCanary, a.Canary.Release)}
}

// Canary is the Deployment of the canary's web units: release r's web
// process, a.Canary.Units of it, its pods told apart by their track.
func Canary(a *app.App, r *app.Release, config app.ConfigMap) *appsv1.Deployment {
	d := deployment(a, r, app.WebProcess, r.Processes[app.WebProcess], webPort(config))
	d.Name = CanaryDeploymentName(a.Name)
	d.Labels[kube.LabelTrack] = TrackCanary
	d.Spec.Selector.MatchLabels[kube.LabelTrack] = TrackCanary
	d.Spec.Template.Labels[kube.LabelTrack] = TrackCanary
	d.Spec.Replicas = new(a.Canary.Units)
	return d
}

// keptDeployments are the Deployments no release renders that a change
// must leave in place: a canary's.
func keptDeployments(a *app.App) []string {
	if !a.Canary.SideBySide() {
		return nil
	}
	return []string{CanaryDeploymentName(a.Name)}
}

// IsCanary says whether a Deployment or pod is a canary's.
func IsCanary(labels map[string]string) bool { return labels[kube.LabelTrack] == TrackCanary }

// SplitProbe is what a request through the router must get once the
// split as a says is served: the answer carries its marker.
func SplitProbe(a *app.App) route.Probe {
	if !splitRoute(a) {
		return route.ProbeServe
	}
	return route.ProbeSplit(route.SplitMarker(webBackends(a)))
}

// canarySelector narrows the web Service while a canary runs without
// the whole share: at 0% (starting, aborting) it selects the deployed
// release's units only, at 100% (promoting, blue-green) the canary's;
// between, both (without a Gateway, the split by units).
func canarySelector(a *app.App, sel map[string]string) {
	switch {
	case !a.Canary.SideBySide():
	case a.Canary.Weight == 0:
		sel[kube.LabelRelease] = fmt.Sprint(a.Release)
	case a.Canary.Weight == 100:
		sel[kube.LabelRelease] = fmt.Sprint(a.Canary.Release)
	}
}
