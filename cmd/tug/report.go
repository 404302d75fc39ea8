package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/build"
	"tug.dev/tug/pkg/text"
)

// lastLogLines heads the log lines of a failure report: "last log line",
// "last 20 log lines".
func lastLogLines(n int) string {
	if n == 1 {
		return "last log line"
	}
	return fmt.Sprintf("last %d log lines", n)
}

// builtLine ends a build's progress. The upload is counted only where tug's
// agent pushed the image itself (it layers the app on a run image, and
// knows its layer's size); BuildKit and a CNB lifecycle push on their own
// and report no count, which read as "(0 B uploaded)".
func builtLine(res *build.Result) string {
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
func uploadLine(res *build.Result) string {
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

// builtWithLine is what built the release's image, for app info.
func builtWithLine(b *app.BuiltWith) string {
	if b == nil {
		return ""
	}
	line := "builder " + b.Builder
	if len(b.Buildpacks) > 0 {
		line += ", buildpacks " + strings.Join(b.Buildpacks, ", ")
	}
	return line
}

// cacheMissNote passes a build's log through and, after BuildKit's report
// that the registry cache it imports is missing, says that this is
// expected: a first build has no cache yet (it exports one), and BuildKit
// prints the miss as an ERROR. pkg/build writes the log a line per Write.
type cacheMissNote struct{ w io.Writer }

var cacheImporterMissing = []byte("failed to configure registry cache importer")

func (c cacheMissNote) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err == nil && bytes.Contains(p, cacheImporterMissing) && bytes.Contains(p, []byte("not found")) {
		_, err = io.WriteString(c.w, "-----> that cache ERROR is expected on a first build: there is no build cache yet, and this build makes one\n")
	}
	return n, err
}
