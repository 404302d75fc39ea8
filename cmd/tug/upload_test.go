package main

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

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
