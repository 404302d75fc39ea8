package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/build"
	"tug.dev/tug/pkg/build/protocol"
	"tug.dev/tug/pkg/cli"
)

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
		if got := uploadLine(&build.Result{CNB: true, Upload: tc.up}); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.up, got, tc.want)
		}
	}
}

// TestAppInfoShowsWhatBuiltTheRelease: the builder and buildpacks of a
// CNB release, digests short on a terminal; nothing for other releases.
func TestAppInfoShowsWhatBuiltTheRelease(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	in := &app.Info{BuiltWith: &app.BuiltWith{Builder: "reg/cnb-builder@" + digest, Buildpacks: []string{"tug.test/extra@0.1.0", "tug.test/shell@0.1.0"}}}
	in.Name, in.Namespace = "shop", "ns"
	for _, tty := range []bool{false, true} {
		ios, _, out, _ := cli.TestIOStreams()
		ios.SetStdoutTTY(tty)
		if err := printAppInfo(ios, in); err != nil {
			t.Fatal(err)
		}
		d := digest
		if tty {
			d = cli.ShortDigests(digest)
		}
		want := "Built with: builder reg/cnb-builder@" + d + ", buildpacks tug.test/extra@0.1.0, tug.test/shell@0.1.0\n"
		if !strings.Contains(out.String(), want) {
			t.Errorf("tty %v: app info lacks %q:\n%s", tty, want, out)
		}
	}
	in.BuiltWith = nil
	ios, _, out, _ := cli.TestIOStreams()
	if err := printAppInfo(ios, in); err != nil || strings.Contains(out.String(), "Built with") {
		t.Errorf("a release not built with buildpacks: %v\n%s", err, out)
	}
}
