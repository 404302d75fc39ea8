package sourcedeploy

import (
	"fmt"
	"strings"

	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/text"
)

// builtLine ends a build's progress. The upload is counted only where tug's
// agent pushed the image itself (it layers the app on a run image, and
// knows its layer's size); BuildKit and a CNB lifecycle push on their own
// and report no count, which read as "(0 B uploaded)".
func builtLine(res *imagebuild.Result) string {
	if res.CNB {
		return fmt.Sprintf("built %s with buildpacks %s (layers: %d added, %d reused, %d restored from the cache)",
			res.Image, strings.Join(res.Buildpacks, ", "), res.LayersAdded, res.LayersReused, res.LayersRestored)
	}
	if res.LayerBytes == 0 && res.PushedBytes == 0 {
		return "built " + res.Image
	}
	return fmt.Sprintf("built %s (%s uploaded)", res.Image, text.Size(res.PushedBytes))
}

// uploadLine says which of a CNB build's layers are new and which it
// reused of the previous image, from the two images' manifests ("new" is
// at most what the push sent: the registry may already hold a new layer's
// blob, a run image's say); "" when the registry could not say (no number
// rather than a wrong one).
func uploadLine(res *imagebuild.Result) string {
	u := res.Upload
	if u == nil {
		return ""
	}
	line := fmt.Sprintf("image: %d new %s (%s)", u.NewLayers, text.Plural(u.NewLayers, "layer", "layers"), text.Size(u.NewBytes))
	if u.PreviousImage == "" {
		return line + "; the repository had no previous image to reuse layers of"
	}
	return line + fmt.Sprintf(", %d reused of the previous image (%s)", u.ReusedLayers, text.Size(u.ReusedBytes))
}
