package protocol

// Layer is one layer of an image manifest: its digest and its size as the
// registry stores it (compressed).
type Layer struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Upload is what a pushed image's layers cost the registry, from two
// manifests: the new image's and the one its tag named before the push
// (what a CNB lifecycle reuses layers of). A layer the previous image has
// was not sent again; any other is new, and was sent unless the registry
// already held its blob (the exporter skips those: a run image's layers
// from the same registry), so NewBytes is at most what the push sent.
// Sizes are the manifests' layer sizes; the config and the manifests
// themselves are not counted.
type Upload struct {
	// PreviousImage is REPO@sha256:... of the image compared with; "" when
	// the tag named none (a first build), and then every layer is new.
	PreviousImage string `json:"previousImage,omitempty"`
	NewLayers     int    `json:"newLayers"`
	NewBytes      int64  `json:"newBytes"`
	ReusedLayers  int    `json:"reusedLayers"`
	ReusedBytes   int64  `json:"reusedBytes"`
}

// CompareLayers counts next's layers as new or reused from previous, by
// digest. A digest next lists twice is one blob, sent or reused once.
func CompareLayers(previousImage string, previous, next []Layer) Upload {
	had := make(map[string]bool, len(previous))
	for _, l := range previous {
		had[l.Digest] = true
	}
	u := Upload{PreviousImage: previousImage}
	seen := make(map[string]bool, len(next))
	for _, l := range next {
		if seen[l.Digest] {
			continue
		}
		seen[l.Digest] = true
		if had[l.Digest] {
			u.ReusedLayers++
			u.ReusedBytes += l.Size
		} else {
			u.NewLayers++
			u.NewBytes += l.Size
		}
	}
	return u
}
