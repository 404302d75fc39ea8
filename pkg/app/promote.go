package app

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"tug.dev/tug/pkg/inputerr"
)

// Origin is where a promoted release's image came from: the release of
// another app (perhaps in another namespace or cluster) that ran it.
type Origin struct {
	// Context is the kubeconfig context of the source app's cluster, ""
	// when the promote stayed in one cluster.
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace"`
	App       string `json:"app"`
	Release   int    `json:"release"`
	// Digest is the image digest the source release ran (sha256:...).
	Digest string `json:"digest"`
	// Image is the reference the source release ran, by digest.
	Image string `json:"image"`
}

// String is "ns/app vN", with the context first when there is one.
func (o *Origin) String() string {
	if o == nil {
		return ""
	}
	s := fmt.Sprintf("%s/%s v%d", o.Namespace, o.App, o.Release)
	if o.Context != "" {
		s = o.Context + ":" + s
	}
	return s
}

// Clone is a copy (nil for nil).
func (o *Origin) Clone() *Origin {
	if o == nil {
		return nil
	}
	c := *o
	return &c
}

// Review marks a review app: a copy of another app of the namespace,
// made by 'tug review up', removed by 'tug review down' or by any review
// command once it has expired.
type Review struct {
	// Of is the app it reviews; Name is the review's name (pr-42).
	Of        string    `json:"of"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Expired says whether the review app's time is up at now.
func (r *Review) Expired(now time.Time) bool { return r != nil && !now.Before(r.ExpiresAt) }

// Pipeline is an app's place in a pipeline: the pipeline's name and its
// stages in order, each NAMESPACE/APP, as 'tug pipeline set' wrote them on
// the record of every stage.
type Pipeline struct {
	Name   string   `json:"name"`
	Stages []string `json:"stages"`
}

// The review app's record carries what it reviews and its name as labels,
// and its expiry as an annotation, so kubectl lists review apps too.
const (
	LabelReviewOf           = "tug.dev/review-of"
	LabelReview             = "tug.dev/review"
	AnnotationReviewExpires = "tug.dev/review-expires"
)

// ValidateNamespace checks a namespace name (a DNS-1123 label).
func ValidateNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return inputerr.Errorf("invalid namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// RunDigest is the digest the release runs: that of RunImage when it
// names one (an image deployed by digest, or pinned by the digest its
// units reported), else the reported one ("" when none is known).
func (r *Release) RunDigest() string {
	if _, d, ok := strings.Cut(r.RunImage(), "@"); ok {
		return d
	}
	return r.ImageDigest()
}
