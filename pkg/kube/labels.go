package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels every object tug creates carries (see DESIGN.md, "State in the
// cluster"), so `kubectl get all -l app.kubernetes.io/managed-by=tug` finds
// them and tug never touches anything else.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "app.kubernetes.io/name"
	LabelApp       = "tug.dev/app"
	LabelProcess   = "tug.dev/process"
	LabelRelease   = "tug.dev/release"
	LabelPool      = "tug.dev/pool"
	// LabelKind tells tug's own records apart: app, release, env, run.
	LabelKind = "tug.dev/kind"
	// LabelTrack marks a canary's web units and their Deployment
	// ("canary"), and the Services of each side of a split.
	LabelTrack = "tug.dev/track"
	// LabelJob names the job on its CronJob, Jobs and pods (whose
	// tug.dev/kind is "job").
	LabelJob = "tug.dev/job"

	ManagedBy    = "tug"
	FieldManager = "tug"
)

// AppLabels are the labels of every object of an app.
func AppLabels(app string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelName: app, LabelApp: app}
}

// AppSelector selects every object of an app.
func AppSelector(app string) string {
	return fmt.Sprintf("%s=%s,%s=%s", LabelManagedBy, ManagedBy, LabelApp, app)
}

// ProcessSelector selects the objects of one process of an app.
func ProcessSelector(app, process string) string {
	return AppSelector(app) + fmt.Sprintf(",%s=%s", LabelProcess, process)
}

// KindSelector selects tug's records of one kind (every app's, when app is "").
func KindSelector(kind, app string) string {
	s := fmt.Sprintf("%s=%s,%s=%s", LabelManagedBy, ManagedBy, LabelKind, kind)
	if app != "" {
		s += fmt.Sprintf(",%s=%s", LabelApp, app)
	}
	return s
}

// ValidateLabelValue checks a value that becomes a label (a pool, a tag),
// saying which of the user's words is wrong.
func ValidateLabelValue(what, v string) error {
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 || v == "" {
		return fmt.Errorf("invalid %s %q: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", what, v)
	}
	return nil
}

// ValidateLabelKey checks a label key such as "disk" or "example.com/disk".
func ValidateLabelKey(k string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("invalid label key %q: %s", k, errs[0])
	}
	return nil
}
