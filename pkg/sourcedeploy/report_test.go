package sourcedeploy

import (
	"testing"

	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/imagebuild/protocol"
)

// TestBuiltLine: a build whose image BuildKit (or a CNB lifecycle) pushed
// has no upload count to show; one tug's agent pushed has.
func TestBuiltLine(t *testing.T) {
	if got := builtLine(&imagebuild.Result{Image: "reg/shop@sha256:abc"}); got != "built reg/shop@sha256:abc" {
		t.Errorf("BuildKit build: %q", got)
	}
	if got := builtLine(&imagebuild.Result{Image: "reg/shop@sha256:abc", LayerBytes: 4096, PushedBytes: 2048}); got != "built reg/shop@sha256:abc (2 KiB uploaded)" {
		t.Errorf("agent build: %q", got)
	}
	if got := builtLine(&imagebuild.Result{Image: "reg/shop@sha256:abc", LayerBytes: 4096}); got != "built reg/shop@sha256:abc (0 B uploaded)" {
		t.Errorf("agent build, every layer already there: %q", got)
	}
	cnb := &imagebuild.Result{Image: "reg/shop@sha256:abc", CNB: true, Buildpacks: []string{"a@1", "b@2"}, LayersAdded: 1, LayersReused: 2, LayersRestored: 3}
	if got := builtLine(cnb); got != "built reg/shop@sha256:abc with buildpacks a@1, b@2 (layers: 1 added, 2 reused, 3 restored from the cache)" {
		t.Errorf("CNB build: %q", got)
	}
}

// TestUploadLine: a CNB build says what its push sent against the
// previous image, and nothing when the registry could not say.
func TestUploadLine(t *testing.T) {
	for _, tc := range []struct {
		up   *protocol.Upload
		want string
	}{
		{nil, ""},
		{&protocol.Upload{PreviousImage: "reg/shop@sha256:1", NewLayers: 1, NewBytes: 1229, ReusedLayers: 3, ReusedBytes: 4299161},
			"image: 1 new layer (1.2 KiB), 3 reused of the previous image (4.1 MiB)"},
		{&protocol.Upload{PreviousImage: "reg/shop@sha256:1", ReusedLayers: 1, ReusedBytes: 10},
			"image: 0 new layers (0 B), 1 reused of the previous image (10 B)"},
		{&protocol.Upload{NewLayers: 4, NewBytes: 3 << 20},
			"image: 4 new layers (3 MiB); the repository had no previous image to reuse layers of"},
	} {
		if got := uploadLine(&imagebuild.Result{CNB: true, Upload: tc.up}); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.up, got, tc.want)
		}
	}
}
