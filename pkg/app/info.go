package app

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
)

// Summary is one row of `tug app list`; its JSON shape is documented in docs/output.md.
type Summary struct {
	Name      string           `json:"name"`
	Namespace string           `json:"namespace"`
	Release   int              `json:"release"`
	Image     string           `json:"image"`
	Processes []ProcessSummary `json:"processes"`
	Pool      string           `json:"pool,omitempty"`
	Team      string           `json:"team,omitempty"`
	CreatedAt time.Time        `json:"createdAt"`
	// Failed is set when no release is deployed and the newest one failed
	// (or was interrupted): a first deploy that did not work, whose units
	// were removed.
	Failed *FailedRelease `json:"failed,omitempty"`
}

// FailedRelease is a release that did not roll out.
type FailedRelease struct {
	Version int    `json:"version"`
	Status  Status `json:"status"`
}

// failedFirst is what Summary.Failed says of an app whose newest release
// is r: nil unless nothing is deployed and r failed or was interrupted.
func failedFirst(a *App, r *Release) *FailedRelease {
	if a.Release != 0 || r == nil || (r.Status != StatusFailed && r.Status != StatusInterrupted) {
		return nil
	}
	return &FailedRelease{Version: r.Version, Status: r.Status}
}

// ProcessSummary is a process type's desired and ready units.
type ProcessSummary struct {
	Name    string `json:"name"`
	Command string `json:"command,omitempty"`
	Desired int32  `json:"desired"`
	Ready   int32  `json:"ready"`
	// Stopped processes run no units; Desired is 0 and the count to restore
	// is in Replicas.
	Stopped   bool       `json:"stopped,omitempty"`
	Replicas  int32      `json:"replicas"`
	Autoscale *Autoscale `json:"autoscale,omitempty"`
}

// List summarises every app in the namespace: two LISTs (records and
// Deployments) however many apps there are, and with none, a GET of the
// namespace: a missing one is an error, not an empty list.
func List(ctx context.Context, s *Store) ([]Summary, error) {
	apps, err := s.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		// A namespace that is not there lists as empty; say which it is.
		if err := kube.CheckNamespace(ctx, s.Client, s.Namespace); err != nil {
			return nil, err
		}
	}
	deps, err := s.Client.AppsV1().Deployments(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	byApp := map[string][]appsv1.Deployment{}
	for _, d := range deps.Items {
		byApp[d.Labels[kube.LabelApp]] = append(byApp[d.Labels[kube.LabelApp]], d)
	}
	out := make([]Summary, 0, len(apps))
	for _, a := range apps {
		sum := Summary{Name: a.Name, Namespace: a.Namespace, Release: a.Release, Image: a.Image,
			Processes: processSummaries(a, nil, byApp[a.Name]), Pool: a.Pool, Team: a.Team, CreatedAt: a.CreatedAt}
		if a.Release == 0 && a.LastRelease > 0 {
			// Never deployed, but tried: one GET says whether it failed
			// (rare enough not to list every app's releases).
			// (A viewer is refused a release of the old form, one Secret.)
			r, err := s.GetReleaseRecord(ctx, a.Name, a.LastRelease)
			if err != nil && !IsNotFound(err) && !kube.IsRBACDenial(err) {
				return nil, err
			}
			sum.Failed = failedFirst(a, r)
		}
		out = append(out, sum)
	}
	return out, nil
}

// processSummaries are the record's processes with their Deployments'
// ready units. Before the first deploy a process that has no Deployment
// is left out: it runs nothing (a failed first deploy removed its units,
// or the counts are stored for a deploy still to come).
func processSummaries(a *App, r *Release, deps []appsv1.Deployment) []ProcessSummary {
	ready := map[string]int32{}
	applied := map[string]bool{}
	for _, d := range deps {
		if d.Labels[kube.LabelTrack] != "" {
			continue // a canary's units: Info.Canary
		}
		ready[d.Labels[kube.LabelProcess]] = d.Status.ReadyReplicas
		applied[d.Labels[kube.LabelProcess]] = true
	}
	out := []ProcessSummary{}
	for _, name := range a.ProcessNames() {
		if a.Release == 0 && !applied[name] {
			continue
		}
		p := a.Processes[name]
		ps := ProcessSummary{Name: name, Desired: p.Units(), Ready: ready[name], Stopped: p.Stopped, Replicas: p.Replicas, Autoscale: p.Autoscale}
		if r != nil {
			ps.Command = r.Processes[name]
		}
		out = append(out, ps)
	}
	return out
}

// Info is `tug app info`; its JSON shape is documented in docs/output.md.
// It holds config key counts, never values.
type Info struct {
	Summary
	Description string   `json:"description,omitempty"`
	ConfigKeys  int      `json:"configKeys"`
	Addresses   []string `json:"addresses"`
	// URLs are where the app answers: its own URL through the cluster's
	// Gateway, then its domains (URLs).
	URLs       []string        `json:"urls"`
	LastChange *ReleaseSummary `json:"lastChange,omitempty"`
	// Traffic: the mode requests meet, and where they come from.
	Maintenance bool     `json:"maintenance"`
	Routable    bool     `json:"routable"`
	Domains     []string `json:"domains"`
	Allow       []string `json:"allow"`
	Registry    string   `json:"registrySecret,omitempty"`

	// Build is how the app builds from source, when it does.
	Build *BuildSettings `json:"build,omitempty"`
	// BuiltWith is the CNB builder and buildpacks that built the image
	// of the app's release; nil when no such build made it.
	BuiltWith *BuiltWith `json:"builtWith,omitempty"`

	// Move is set while a move between clusters is unfinished (app.Move).
	Move *Move `json:"move,omitempty"`
	// Review marks a review app (tug review up); Pipeline names the
	// pipeline the app is a stage of (tug pipeline set).
	Review   *Review   `json:"review,omitempty"`
	Pipeline *Pipeline `json:"pipeline,omitempty"`

	// Canary is the release running beside Release, while one does
	// (canary.go).
	Canary *CanaryInfo `json:"canary,omitempty"`

	// Running is what the units run when that is not the record's release
	// (a deploy that stopped midway); nil when they agree.
	Running *Running `json:"running,omitempty"`

	// Jobs are the deployed release's scheduled jobs (job.go).
	Jobs []JobSummary `json:"jobs,omitempty"`
}

// Running is what an app's Deployments run when it differs from the app's
// record: their pod templates name other releases than the record's.
type Running struct {
	// Releases are the releases the Deployments' pod templates name, ascending.
	Releases []int `json:"releases"`
	// Image is the image of the newest of them.
	Image string `json:"image"`
	// RollingOut: some units do not run their Deployment's template yet.
	RollingOut bool `json:"rollingOut"`
	// Note says why, e.g. "the record says v1; the last deploy was interrupted".
	Note string `json:"note"`
}

// ReleaseSummary is a release without its config; `tug release list` rows.
type ReleaseSummary struct {
	Version int    `json:"version"`
	Kind    string `json:"kind"`
	Status  Status `json:"status"`
	Image   string `json:"image"`
	// ImageDigest is the digest the release's units ran, recorded once it
	// rolled out; RunImage is what a redeploy of it (rollback) runs.
	ImageDigest string    `json:"imageDigest,omitempty"`
	RunImage    string    `json:"runImage,omitempty"`
	Message     string    `json:"message,omitempty"`
	Author      string    `json:"author,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	FailReason  string    `json:"failReason,omitempty"`
	ConfigKeys  []string  `json:"configKeys"`
	Processes   []string  `json:"processes"`
	// Traffic is the release's share of requests in percent while a
	// canary runs beside the deployed release (both have one).
	Traffic *int `json:"traffic,omitempty"`
	// Role says what the release does while one runs beside the deployed
	// release: serving, canary, stable or kept (ReleaseRole).
	Role string `json:"role,omitempty"`
	// PromotedFrom is the release whose image a promote brought (tug app
	// promote); omitted for any other.
	PromotedFrom *Origin `json:"promotedFrom,omitempty"`
}

// SummarizeRelease drops nothing secret (a Release holds none) but shapes
// it for output.
func SummarizeRelease(r *Release) ReleaseSummary {
	procs := make([]string, 0, len(r.Processes))
	for p := range r.Processes {
		procs = append(procs, p)
	}
	SortProcesses(procs)
	keys := r.ConfigKeys
	if keys == nil {
		keys = []string{}
	}
	return ReleaseSummary{Version: r.Version, Kind: r.Kind, Status: r.Status, Image: r.Image,
		ImageDigest: r.ImageDigest(), RunImage: r.RunImage(), Message: r.Message,
		Author: r.Author, CreatedAt: r.CreatedAt, FailReason: r.FailReason, ConfigKeys: keys, Processes: procs,
		PromotedFrom: r.PromotedFrom.Clone()}
}

// GetInfo gathers an app's state: its record, its releases (one LIST), its
// Deployments (one LIST) and its web Service (one GET).
func GetInfo(ctx context.Context, s *Store, name string) (*Info, error) {
	a, err := s.GetApp(ctx, name)
	if err != nil {
		return nil, err
	}
	rels, err := s.ListReleases(ctx, name)
	// A viewer reads the records made since they moved to ConfigMaps;
	// should the list still be refused (a Role from before the split, that
	// reads no ConfigMap), info goes on without what only they say.
	if err != nil && !kube.IsRBACDenial(err) {
		return nil, err
	}
	var current *Release
	for _, r := range rels {
		if r.Version == a.Release {
			current = r
		}
	}
	deps, err := s.Client.AppsV1().Deployments(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(name)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	info := &Info{
		Summary: Summary{Name: a.Name, Namespace: a.Namespace, Release: a.Release, Image: a.Image,
			Processes: processSummaries(a, current, deps.Items), Pool: a.Pool, Team: a.Team, CreatedAt: a.CreatedAt},
		Description: a.Description,
		Addresses:   []string{},
		URLs:        URLs(a),
		Maintenance: a.Maintenance,
		Routable:    !a.Unroutable,
		Domains:     []string{},
		Allow:       append([]string{}, a.Allow...),
		Registry:    a.RegistrySecret,
		Build:       a.Build.Shown(),
		Move:        a.Move,
		Review:      a.Review,
		Pipeline:    a.Pipeline,
	}
	if current != nil {
		info.BuiltWith = current.BuiltWith.Clone()
	}
	info.Running = running(a, rels, deps.Items)
	info.Canary = canaryInfo(a, deps.Items)
	for _, d := range a.Domains {
		info.Domains = append(info.Domains, d.Host+d.Path)
	}
	info.fromReleases(a, rels, current)
	if info.Addresses, err = serviceAddresses(ctx, s, name); err != nil {
		return nil, err
	}
	return info, nil
}

// fromReleases fills in what the release records say: the last change
// (rels[0]: the records come newest first) and whether it failed first;
// the config key count and the jobs of the release the app runs (the last
// change's key count when it runs none).
func (info *Info) fromReleases(a *App, rels []*Release, current *Release) {
	if len(rels) > 0 {
		last := SummarizeRelease(rels[0])
		info.LastChange = &last
		info.ConfigKeys = len(rels[0].ConfigKeys)
		info.Failed = failedFirst(a, rels[0])
	}
	if current != nil {
		info.ConfigKeys = len(current.ConfigKeys)
		info.Jobs = jobSummaries(a, current)
	}
}

// serviceAddresses are the in-cluster addresses of the app's web Service
// (none without one, or when a Service of that name is not the app's).
func serviceAddresses(ctx context.Context, s *Store, name string) ([]string, error) {
	addrs := []string{}
	svc, err := s.Client.CoreV1().Services(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, kube.TranslateError(err)
	case svc.Labels[kube.LabelApp] == name:
		for _, p := range svc.Spec.Ports {
			if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != "None" {
				// URLs both, as 'app address' prints them (was IP:port).
				addrs = append(addrs, fmt.Sprintf("http://%s", net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(p.Port)))))
			}
			addrs = append(addrs, fmt.Sprintf("http://%s.%s.svc:%d", svc.Name, svc.Namespace, p.Port))
		}
	}
	return addrs, nil
}

// running compares what the app's Deployments run with the record: nil when
// every Deployment's pod template names the record's release.
func running(a *App, rels []*Release, deps []appsv1.Deployment) *Running {
	var (
		versions   []int
		image      string
		rollingOut bool
	)
	newest := 0
	for i := range deps {
		d := &deps[i]
		v, err := strconv.Atoi(d.Spec.Template.Labels[kube.LabelRelease])
		if err != nil || d.Labels[kube.LabelTrack] != "" {
			continue
		}
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
		if v >= newest && len(d.Spec.Template.Spec.Containers) > 0 {
			newest, image = v, d.Spec.Template.Spec.Containers[0].Image
		}
		if !settled(d) {
			rollingOut = true
		}
	}
	if len(versions) == 0 || (len(versions) == 1 && versions[0] == a.Release) {
		return nil
	}
	slices.Sort(versions)
	record := "the record says none yet"
	if a.Release > 0 {
		record = fmt.Sprintf("the record says v%d", a.Release)
	}
	note := record
	for _, r := range rels {
		if r.Version != newest || newest == a.Release {
			continue
		}
		switch r.Status {
		case StatusInterrupted:
			note += "; the last deploy was interrupted"
		case StatusPending:
			note += fmt.Sprintf("; the deploy of v%d is in progress or was interrupted", newest)
		case StatusFailed:
			note += fmt.Sprintf("; v%d failed and was not rolled back", newest)
		}
	}
	return &Running{Releases: versions, Image: image, RollingOut: rollingOut, Note: note}
}

// settled is kubectl rollout status's rule: the controller has seen the
// Deployment's spec and every unit runs it and is available.
func settled(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}
