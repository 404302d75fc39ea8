package app

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"tug.dev/tug/pkg/inputerr"
)

// App is an app's record: what tug knows about it beyond its releases. It is
// stored as JSON in one ConfigMap per app (see store.go), owned by tug.
type App struct {
	Name        string    `json:"name"`
	Namespace   string    `json:"namespace"`
	Description string    `json:"description,omitempty"`
	Team        string    `json:"team,omitempty"`
	Pool        string    `json:"pool,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	// Processes holds the desired units of each process type. A process gets
	// 1 unit on the first deploy that introduces it; later deploys keep it.
	Processes map[string]Process `json:"processes,omitempty"`
	// Release is the number of the release that is deployed (0: none yet).
	Release int `json:"release"`
	// Image is the deployed release's image, kept here so listing apps
	// needs no read of their releases.
	Image string `json:"image,omitempty"`
	// LastRelease is the highest release number ever issued, so numbers are
	// never reused even after history is pruned.
	LastRelease int `json:"lastRelease"`
	// HistoryMax caps the number of release records kept (0: DefaultHistoryMax)
	// when the deployed release's Rollout.History does not say.
	HistoryMax int `json:"historyMax,omitempty"`

	// Traffic: see docs/guide.md, "Traffic".
	Domains     []Domain `json:"domains,omitempty"`
	Unroutable  bool     `json:"unroutable,omitempty"`  // routable off: no traffic reaches the units
	Maintenance bool     `json:"maintenance,omitempty"` // traffic gets a 503 page instead of the units
	// MaintenanceImage is the image of the page that answers in maintenance,
	// as the command that turned it on was given it ("": the default).
	MaintenanceImage string `json:"maintenanceImage,omitempty"`
	// Allow lists the CIDRs that may reach the web units; empty admits all.
	Allow []string `json:"allow,omitempty"`
	// RegistrySecret names the kubernetes.io/dockerconfigjson Secret that
	// units and run pods pull their image with ("" for none).
	RegistrySecret string `json:"registrySecret,omitempty"`
	// Volumes names the volumes the deployed release binds (kept here so
	// listing volumes needs no read of every app's releases).
	Volumes []string `json:"volumes,omitempty"`
	// Services names the backing services the deployed release binds
	// (kept here, like Volumes, so a service knows its apps from one LIST).
	Services []string `json:"services,omitempty"`
	// Build: how `app deploy` without --image builds the app (pkg/imagebuild).
	Build *BuildSettings `json:"build,omitempty"`
	// Move marks this copy of the app while it moves to another cluster
	// ('tug app pool set' to a pool of another cluster); nil otherwise.
	Move *Move `json:"move,omitempty"`
	// Route says how web traffic reaches the app through the cluster's
	// Gateway, as the cluster settings gave it when the app was last
	// deployed or routed (nil: no Gateway; domains use an Ingress).
	Route *Route `json:"route,omitempty"`
	// SuspendedJobs names the jobs that are suspended (tug job suspend).
	SuspendedJobs []string `json:"suspendedJobs,omitempty"`
	// Canary is the release running beside Release (canary.go); nil when
	// one release runs.
	Canary *Canary `json:"canary,omitempty"`
	// Review marks a review app (promote.go): what it reviews and when it
	// expires; nil for any other app.
	Review *Review `json:"review,omitempty"`
	// Pipeline is the pipeline the app is a stage of (promote.go); nil
	// when it is in none.
	Pipeline *Pipeline `json:"pipeline,omitempty"`

	// resourceVersion of the stored record, for optimistic concurrency.
	resourceVersion string
}

// Process is one process type's desired state: its formation, which
// scaling changes without making a release.
type Process struct {
	// Replicas is the unit count; while Stopped it is remembered, not run.
	Replicas int32 `json:"replicas"`
	Stopped  bool  `json:"stopped,omitempty"`
	// RestartedAt, when set, is stamped on the pod template, so changing it
	// rolls every unit (tug app restart).
	RestartedAt string `json:"restartedAt,omitempty"`
	// Autoscale, when set, hands the unit count to a HorizontalPodAutoscaler.
	Autoscale *Autoscale `json:"autoscale,omitempty"`
}

// Equal says whether p and o ask for the same units.
func (p Process) Equal(o Process) bool {
	as := p.Autoscale == o.Autoscale || p.Autoscale != nil && o.Autoscale != nil && *p.Autoscale == *o.Autoscale
	return as && p.Replicas == o.Replicas && p.Stopped == o.Stopped && p.RestartedAt == o.RestartedAt
}

// Units is how many units the process should run now.
func (p Process) Units() int32 {
	if p.Stopped {
		return 0
	}
	return p.Replicas
}

// Autoscale bounds a process's units and sets the CPU use to aim for.
type Autoscale struct {
	Min        int32 `json:"min"`
	Max        int32 `json:"max"`
	CPUPercent int32 `json:"cpuPercent"`
}

// Domain is a host name that routes to the app's web process.
type Domain struct {
	Host         string `json:"host"`
	Path         string `json:"path,omitempty"`         // default "/"
	IngressClass string `json:"ingressClass,omitempty"` // default: the cluster's
	// TLSSecret names the kubernetes.io/tls Secret serving the host ("" for none).
	TLSSecret string `json:"tlsSecret,omitempty"`
	// CertIssuer, when set, is the cert-manager issuer (ClusterIssuer/NAME
	// or Issuer/NAME) whose Certificate fills TLSSecret, as the cluster
	// settings named it when the domain was added; "" for a certificate of
	// the user's own (cert add) or none.
	CertIssuer string `json:"certIssuer,omitempty"`
}

// VolumeBinding mounts a volume into a process's units ("" Process: every process).
type VolumeBinding struct {
	Volume    string `json:"volume"`
	MountPath string `json:"mountPath"`
	Process   string `json:"process,omitempty"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// ServiceBinding binds a backing service to every process of the app (tug
// service bind): its binding Secret's keys reach the units as variables
// PREFIX_KEY (PREFIX_URL for uri) and as files under
// $SERVICE_BINDING_ROOT/SERVICE. The release names the Secret, never its
// values: a rollback after a rotation gets today's credentials.
type ServiceBinding struct {
	Service string `json:"service"`
	Prefix  string `json:"prefix"`
	// Type is the binding's servicebinding.io type; Keys its keys, which
	// name the variables.
	Type string   `json:"type"`
	Keys []string `json:"keys"`
	// Dir is the folder of its files under $SERVICE_BINDING_ROOT ("": the
	// service's name): a review app's own copy of an app's service is
	// found where the app finds that service.
	Dir string `json:"dir,omitempty"`
}

// BindingDir is the folder of the binding's files under
// $SERVICE_BINDING_ROOT.
func (b ServiceBinding) BindingDir() string {
	if b.Dir != "" {
		return b.Dir
	}
	return b.Service
}

// Limits are a process's compute resources, as Kubernetes quantities.
type Limits struct {
	CPU           string `json:"cpu,omitempty"`
	Memory        string `json:"memory,omitempty"`
	CPURequest    string `json:"cpuRequest,omitempty"`
	MemoryRequest string `json:"memoryRequest,omitempty"`
}

// IsZero reports whether no limit or request is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// Healthcheck holds a process's probes. Each probe is "http:PORT/PATH",
// "tcp:PORT" or "exec:COMMAND"; the timings apply to every probe set.
type Healthcheck struct {
	Readiness        string `json:"readiness,omitempty"`
	Liveness         string `json:"liveness,omitempty"`
	Startup          string `json:"startup,omitempty"`
	InitialDelay     int32  `json:"initialDelaySeconds,omitempty"`
	Period           int32  `json:"periodSeconds,omitempty"`
	Timeout          int32  `json:"timeoutSeconds,omitempty"`
	FailureThreshold int32  `json:"failureThreshold,omitempty"`
}

// DefaultHistoryMax is how many releases an app keeps unless told otherwise.
const DefaultHistoryMax = 10

// ProcessNames lists the app's process types, web first, then by name.
func (a *App) ProcessNames() []string {
	names := make([]string, 0, len(a.Processes))
	for n := range a.Processes {
		names = append(names, n)
	}
	SortProcesses(names)
	return names
}

// ProcessNames lists the release's process types, web first, then by name.
func (r *Release) ProcessNames() []string {
	names := make([]string, 0, len(r.Processes))
	for n := range r.Processes {
		names = append(names, n)
	}
	SortProcesses(names)
	return names
}

// SortProcesses orders process names the way people expect: web first.
func SortProcesses(names []string) {
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == WebProcess) != (names[j] == WebProcess) {
			return names[i] == WebProcess
		}
		return names[i] < names[j]
	})
}

// WebProcess is the process type that receives HTTP traffic and $PORT.
const WebProcess = "web"

// DefaultPort is the web process's $PORT unless the app's config sets one.
const DefaultPort = 8080

// Release is an immutable, numbered snapshot of what runs: image, process
// commands and config. Every deploy, config change and rollback makes one.
type Release struct {
	App     string `json:"app"`
	Version int    `json:"version"`
	Image   string `json:"image"`
	// ImageID is what the container runtime reported its units ran once the
	// release rolled out (the pods' status imageID): "repo@sha256:..." for an
	// image pulled from a registry, "sha256:..." (the runtime's image ID)
	// for one loaded onto the nodes. A registry digest pins a redeploy of
	// this release (rollback, config change) to the same bytes; a bare
	// image ID is only shown; see RunImage.
	ImageID string `json:"imageID,omitempty"`
	// BuiltWith is the CNB builder and buildpacks that built Image; nil
	// for an image not built by tug from source with one.
	BuiltWith *BuiltWith `json:"builtWith,omitempty"`
	// BuildArgs names the Dockerfile build arguments (--build-arg) the
	// build of Image was given; their values are not kept.
	BuildArgs []string `json:"buildArgs,omitempty"`
	// Processes maps each process type to its command, as a shell command
	// line; "" runs the image's own command.
	Processes map[string]string `json:"processes"`
	// ReleaseCommand is the release-phase command (a Procfile's release:
	// entry), run once in a one-off unit before the release rolls out.
	ReleaseCommand string `json:"releaseCommand,omitempty"`
	// Kind says what made the release: deploy, env, rollback.
	Kind       string    `json:"kind"`
	Message    string    `json:"message,omitempty"`
	Author     string    `json:"author,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	Status     Status    `json:"status"`
	RollbackOf int       `json:"rollbackOf,omitempty"` // for kind rollback: the release restored
	FailReason string    `json:"failReason,omitempty"`
	// Settings that travel with the release, so a rollback restores them:
	// per-process limits and healthchecks, and where units may run.
	Limits       map[string]Limits      `json:"limits,omitempty"`
	Healthchecks map[string]Healthcheck `json:"healthchecks,omitempty"`
	Pool         string                 `json:"pool,omitempty"`
	Tags         map[string]string      `json:"tags,omitempty"`
	// Volumes are bound volumes (PersistentVolumeClaims) and where they mount.
	Volumes []VolumeBinding `json:"volumes,omitempty"`
	// Services are the bound backing services.
	Services []ServiceBinding `json:"services,omitempty"`
	// Rollout is how the release rolls out and how much history is kept
	// (rollout.go); empty fields are tug's defaults. It is the one part of
	// a release that may change after it is made: a settings change that
	// leaves the pod spec alone (pace, history, deploy timeout) is made in
	// place on the deployed release, so its units keep running
	// (deploy.ChangeRollout); RolloutChanges records each such change.
	Rollout Rollout `json:"rollout,omitzero"`
	// RolloutChanges are the changes made to Rollout in place, oldest first.
	RolloutChanges []RolloutChange `json:"rolloutChanges,omitempty"`
	// ConfigKeys names the config variables; values stay in the Secret and
	// are never part of this record or its JSON.
	ConfigKeys []string `json:"configKeys"`
	// Jobs are the release's scheduled jobs (job.go), by name.
	Jobs map[string]Job `json:"jobs,omitempty"`
	// PromotedFrom is the release whose image a promote brought here
	// (tug app promote); nil for a release made any other way. A config
	// change or rollback of it keeps it: it says where the image came from.
	PromotedFrom *Origin `json:"promotedFrom,omitempty"`
}

// RolloutChange is a change of a release's Rollout made in place: when, by
// whom, and what (the command's summary, "settings: history 3").
type RolloutChange struct {
	At      time.Time `json:"at"`
	Author  string    `json:"author,omitempty"`
	Message string    `json:"message"`
}

// ConfigMap is an app's environment: variable name to value.
type ConfigMap map[string]string

// Status is where a release stands.
type Status string

const (
	StatusPending    Status = "pending"    // created, rollout not finished
	StatusDeployed   Status = "deployed"   // the release that runs
	StatusFailed     Status = "failed"     // its rollout failed
	StatusSuperseded Status = "superseded" // a later release replaced it
	StatusStaged     Status = "staged"     // stored, to run at the next rollout (env --no-restart)
	// StatusInterrupted: its rollout stopped before every unit ran it (Ctrl-C,
	// SIGTERM, a lost lock, an API failure, or a tug killed mid-deploy and
	// found by the next command that took the app's lock). The record keeps
	// the release that ran before; the next command that takes the lock
	// records it as deployed if every unit turns out to run it.
	StatusInterrupted Status = "interrupted"
)

// Release kinds.
const (
	KindDeploy      = "deploy"
	KindEnv         = "env"
	KindRollback    = "rollback"
	KindLimits      = "limits"
	KindHealthcheck = "healthcheck"
	KindPool        = "pool"
	KindTags        = "tags"
	KindVolume      = "volume"
	KindService     = "service"
	KindSettings    = "settings"
	KindPromote     = "promote"
)

// Next starts a release from base: same image, processes and settings. For
// an app's first release (base nil) the settings come from the app record.
func Next(a *App, base *Release, kind, message string) *Release {
	r := &Release{Kind: kind, Message: message, Processes: map[string]string{}, Pool: a.Pool}
	if base == nil {
		return r
	}
	r.Image, r.ImageID, r.Pool = base.Image, base.ImageID, base.Pool
	r.BuiltWith = base.BuiltWith.Clone()
	r.BuildArgs = slices.Clone(base.BuildArgs)
	r.Processes = maps.Clone(base.Processes)
	r.Limits = maps.Clone(base.Limits)
	r.Healthchecks = maps.Clone(base.Healthchecks)
	r.Tags = maps.Clone(base.Tags)
	r.Volumes = slices.Clone(base.Volumes)
	r.Services = slices.Clone(base.Services)
	r.Rollout = base.Rollout
	r.Jobs = maps.Clone(base.Jobs)
	r.PromotedFrom = base.PromotedFrom.Clone()
	return r
}

// ParseVersion reads a release number, "v7" or "7"; its error is an input error.
func ParseVersion(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(s), "v"))
	if err != nil || n <= 0 {
		return 0, inputerr.Errorf("invalid release %q: want a release number such as v3", s)
	}
	return n, nil
}

// RunImage is the reference units of the release run: Image's repository
// @ the recorded registry digest, so that a moved tag cannot change what a
// redeploy of the release (rollback, config change) runs. Image as given
// when it names a digest already, when nothing was recorded, when the
// runtime reported only a bare image ID (an image loaded onto the nodes
// rather than pulled from a registry: only nodes that already hold it could
// run its ID), or a digest of another repository (the same image pulled
// under another name, which Image's repository may not serve): such an
// image is not pinned, and the tag runs.
func (r *Release) RunImage() string {
	if strings.Contains(r.Image, "@") {
		return r.Image
	}
	repo, digest, ok := strings.Cut(r.ImageID, "@")
	if !ok || canonicalRepository(repo) != canonicalRepository(ImageRepository(r.Image)) {
		return r.Image
	}
	return ImageRepository(r.Image) + "@" + digest
}

// canonicalRepository spells Docker Hub's repositories one way:
// "docker.io/library/shop" and "shop" are the same repository.
func canonicalRepository(repo string) string {
	for _, hub := range []string{"docker.io/", "index.docker.io/", "registry-1.docker.io/"} {
		if rest, ok := strings.CutPrefix(repo, hub); ok {
			repo = rest
			break
		}
	}
	return strings.TrimPrefix(repo, "library/")
}

// ImageDigest is the digest part of the recorded ImageID ("sha256:..."), or "".
func (r *Release) ImageDigest() string {
	if _, d, ok := strings.Cut(r.ImageID, "@"); ok {
		return d
	}
	return r.ImageID
}

// ImageRepository is an image reference without its tag or digest.
func ImageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		image = image[:i]
	}
	return image
}

// NormalizeImageID turns a pod's status imageID into what ImageID records:
// without the runtime's scheme (docker-pullable://, docker://), and "" for
// anything that names no sha256 digest.
func NormalizeImageID(id string) string {
	if _, rest, ok := strings.Cut(id, "://"); ok {
		id = rest
	}
	d := id
	if _, after, ok := strings.Cut(id, "@"); ok {
		d = after
	}
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return ""
	}
	return id
}

// Copy is a deep copy of the record, for a change tried on it that must
// not touch the original (a check before the lock is taken).
func (a *App) Copy() *App {
	c := *a
	c.Processes = maps.Clone(a.Processes)
	for n, p := range c.Processes {
		if p.Autoscale != nil {
			as := *p.Autoscale
			p.Autoscale = &as
			c.Processes[n] = p
		}
	}
	c.Domains = slices.Clone(a.Domains)
	c.Allow = slices.Clone(a.Allow)
	c.Volumes = slices.Clone(a.Volumes)
	c.Services = slices.Clone(a.Services)
	c.SuspendedJobs = slices.Clone(a.SuspendedJobs)
	if a.Build != nil {
		b := *a.Build
		b.Buildpacks, b.BuildEnv, b.Inspected = slices.Clone(b.Buildpacks), slices.Clone(b.BuildEnv), b.Inspected.Clone()
		c.Build = &b
	}
	if a.Move != nil {
		m := *a.Move
		c.Move = &m
	}
	if a.Route != nil {
		r := *a.Route
		c.Route = &r
	}
	if a.Review != nil {
		r := *a.Review
		c.Review = &r
	}
	if a.Pipeline != nil {
		p := *a.Pipeline
		p.Stages = slices.Clone(a.Pipeline.Stages)
		c.Pipeline = &p
	}
	return &c
}

// Route is how web traffic reaches an app through a Gateway.
type Route struct {
	// Gateway is the Gateway the app's HTTPRoute attaches to, NAMESPACE/NAME.
	Gateway string `json:"gateway"`
	// Host is the app's own host under the cluster's apps domain ("" when
	// the cluster has none): its URL with no configuration.
	Host string `json:"host,omitempty"`
	// OldHost says Host is the app's name from before hashed names, kept
	// once a look found no other namespace routing it (route.keepOldHost):
	// the look is not made again.
	OldHost bool `json:"oldHost,omitempty"`
	// HTTPS says the Gateway serves Host over TLS (a listener for it).
	HTTPS bool `json:"https,omitempty"`
	// IngressClass is the class of the Ingress that serves the domains
	// with a certificate of their own (the Gateway takes no listener from
	// an app), "" for the cluster's default.
	IngressClass string `json:"ingressClass,omitempty"`
	// Router is the controller behind the Gateway and that IngressClass,
	// as the cluster settings name it (clustersettings.Router): where the
	// app's allow list is enforced for routed traffic. "" when unnamed.
	Router string `json:"router,omitempty"`
	// Discovered says Gateway was found, not named by the cluster
	// settings: the one Gateway that admits routes from the app's
	// namespace (pkg/route discover.go). A user who may not look for it
	// keeps it.
	Discovered bool `json:"discovered,omitempty"`
	// Token is the app's route token (random, made once, kept by every
	// later route): the router's answer to tug's probe carries a key
	// derived from it (pkg/route RouteHeader), so tug tells its app's
	// answers from an old Ingress rule's, an exported copy's, or those of
	// a route made without reading the app's HTTPRoute. Not a secret: it
	// is readable by whoever may read the record's ConfigMap, and both
	// keys stand in plain text in the app's HTTPRoutes. Never exported.
	Token string `json:"token,omitempty"`
}

// RunsLike says r and o run the same: they differ at most in what
// describes a release (number, kind, message, author, time, status) and in
// what is recorded about it once it ran (the runtime's image ID, in-place
// rollout changes). Config is compared apart: its values are not here.
func (r *Release) RunsLike(o *Release) bool {
	strip := func(r *Release) []byte {
		c := *r
		c.App, c.Version, c.Kind, c.Message, c.Author = "", 0, "", "", ""
		c.CreatedAt, c.Status, c.RollbackOf, c.FailReason = time.Time{}, "", 0, ""
		c.ImageID, c.RolloutChanges, c.ConfigKeys = "", nil, nil
		b, err := json.Marshal(c)
		if err != nil {
			return nil
		}
		return b
	}
	x, y := strip(r), strip(o)
	return x != nil && string(x) == string(y)
}
