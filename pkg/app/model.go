package app

import (
	"sort"
	"time"
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
	// HistoryMax caps the number of release records kept (0: DefaultHistoryMax).
	HistoryMax int `json:"historyMax,omitempty"`

	// resourceVersion of the stored record, for optimistic concurrency.
	resourceVersion string
}

// Process is one process type's desired state.
type Process struct {
	Replicas int32 `json:"replicas"`
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
	// Processes maps each process type to its command, as a shell command
	// line; "" runs the image's own command.
	Processes map[string]string `json:"processes"`
	// Kind says what made the release: deploy, env, rollback.
	Kind       string    `json:"kind"`
	Message    string    `json:"message,omitempty"`
	Author     string    `json:"author,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	Status     Status    `json:"status"`
	RollbackOf int       `json:"rollbackOf,omitempty"` // for kind rollback: the release restored
	FailReason string    `json:"failReason,omitempty"`
	// ConfigKeys names the config variables; values stay in the Secret and
	// are never part of this record or its JSON.
	ConfigKeys []string `json:"configKeys"`
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
)

// Release kinds.
const (
	KindDeploy   = "deploy"
	KindEnv      = "env"
	KindRollback = "rollback"
)
